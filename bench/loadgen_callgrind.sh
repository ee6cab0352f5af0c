#!/usr/bin/env bash
# User-space instructions per request of one or more loadgen builds (valgrind's callgrind), so
# two builds can be compared on a shared machine: instructions executed do not move with the load
# average the way CPU seconds do. Per build and connection mode, loadgen runs at 500 RPS against
# nginx (worker_processes 1, a fixed `200 ok`, started here on 127.0.0.1:$PORT) for 5 s and for
# 10 s; instructions per request = (Ir(10 s) - Ir(5 s)) / (requests(10 s) - requests(5 s)), which
# cancels start-up. Each run is bounded by its --duration (valgrind slows loadgen ~50x, and 500
# RPS is a rate every build holds under it). Takes about 2 minutes for two builds.
#
# Usage: bench/loadgen_callgrind.sh OUTDIR NAME=/path/to/loadgen [NAME=/path/to/loadgen ...]
# Needs valgrind and nginx (apt-get install valgrind nginx-light). Writes OUTDIR/summary.txt
# (one line per run: name, mode, seconds, Ir, requests) and OUTDIR/per-request.txt.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,13p "$0" >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
PORT=${PORT:-18090}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx not found (apt-get install nginx-light)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
d=$(mktemp -d)
mkdir -p "$d/logs"
cat > "$d/nginx.conf" <<NG
worker_processes 1; daemon off; error_log $d/logs/error.log; pid $d/nginx.pid;
events { worker_connections 4096; }
http { access_log off; server { listen 127.0.0.1:$PORT; location / { return 200 "ok"; } } }
NG
"$NGINX" -c "$d/nginx.conf" -p "$d" &
ng=$!
trap 'kill $ng 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$PORT/" >/dev/null && break; sleep 0.1; done
: > "$out/summary.txt"
: > "$out/per-request.txt"
for spec in "$@"; do
  name=${spec%%=*}
  bin=${spec#*=}
  [ -x "$bin" ] || { echo "$name: $bin is not an executable" >&2; exit 1; }
  for mode in keep-alive close; do
    declare -A ir=() req=()
    for dur in 5 10; do
      f="$out/$name-$mode-$dur"
      valgrind --tool=callgrind --callgrind-out-file="$f.cg" "$bin" --url "http://127.0.0.1:$PORT/" \
        --rate 500 --duration "${dur}s" --log-requests none --connection "$mode" >"$f.out" 2>"$f.err"
      rm -f "$f.cg"
      ir[$dur]=$(grep -o 'Collected : [0-9]*' "$f.err" | awk '{print $3}')
      req[$dur]=$(grep -o '"kind":"summary"[^{]*' "$f.out" | grep -o '"count":[0-9]*' | head -1 | cut -d: -f2)
      echo "$name $mode ${dur}s Ir=${ir[$dur]} requests=${req[$dur]}" | tee -a "$out/summary.txt"
    done
    awk -v n="$name" -v m="$mode" -v a="${ir[10]}" -v b="${ir[5]}" -v c="${req[10]}" -v e="${req[5]}" \
      'BEGIN { printf "%s %s %.0f instructions/request\n", n, m, (a - b) / (c - e) }' | tee -a "$out/per-request.txt"
  done
done
