#!/usr/bin/env bash
# Soak benchmarks (issue 19, point 8; a benchmark, not a CI test): run a component under steady
# load for a long time and sample its resident memory (VmRSS) and open file descriptors every
# SAMPLE seconds. A leak shows as a positive slope; the summary states the least-squares slope
# (kB/min, fds/min) over the run after a warm-up, the first/last/max sample, and the load
# generators' own error counts (every error must be one the target caused).
#
# Modes (every load is bounded in time and targets only 127.0.0.1):
#   bench/soak.sh loadgen [OUTDIR]   loadgen at RATE=2000 RPS keep-alive for DUR=3600 s against a
#                                    local nginx returning a fixed 200 (NGINX_PORT=18188). Samples
#                                    loadgen's process.
#   bench/soak.sh ingress [OUTDIR]   localplane's ingress for DUR=600 s: one loadgen at
#                                    KA_RATE=5000 RPS keep-alive and one at CLOSE_RATE=1000 RPS with
#                                    a new connection per request, both through localplane's
#                                    ingress to one replica of probelab/subject:dev. Samples
#                                    localplane's process. Heavy: run under the machine lock.
#
# Env: DUR, SAMPLE=10, WARMUP=60 (seconds excluded from the slope), LOADGEN=, LOCALPLANE= (binaries;
#      default ${CARGO_TARGET_DIR:-target}/release, built unless BUILD=0), NICE=10 (loadgen mode).
# Writes OUTDIR/machine.txt, OUTDIR/samples.tsv (t_s rss_kb fds), OUTDIR/<gen>.ndjson (loadgen
# output), OUTDIR/summary.txt (printed on stderr too).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:?usage: bench/soak.sh loadgen|ingress [OUTDIR]}
SAMPLE=${SAMPLE:-10}
WARMUP=${WARMUP:-60}
OUT=${2:-$ROOT/bench/runs/$(date -u +%Y-%m-%d)-$(hostname -s)/soak-$MODE}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

if [ "${BUILD:-1}" = 1 ]; then
  log "building loadgen and localplane (release)"
  (cd "$ROOT" && cargo build --release -q -p loadgen -p localplane)
fi
LOADGEN=${LOADGEN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgen}
LOCALPLANE=${LOCALPLANE:-${CARGO_TARGET_DIR:-$ROOT/target}/release/localplane}
[ -x "$LOADGEN" ] || { echo "no loadgen binary at $LOADGEN" >&2; exit 1; }
ulimit -n 65535 2>/dev/null || true

PIDS=()
CLEAN=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for c in "${CLEAN[@]}"; do eval "$c" || true; done
}
trap cleanup EXIT

# sample PID -> appends "t_s rss_kb fds" every SAMPLE s to samples.tsv while PID lives
sample() {
  local pid=$1 t0 now
  t0=$(date +%s)
  echo -e "t_s\trss_kb\tfds" > "$OUT/samples.tsv"
  while kill -0 "$pid" 2>/dev/null; do
    now=$(date +%s)
    local rss fds
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && echo -e "$((now - t0))\t$rss\t$fds" >> "$OUT/samples.tsv"
    sleep "$SAMPLE"
  done
}

summarize() {
  python3 - "$OUT" "$WARMUP" "$@" <<'PY' | tee "$OUT/summary.txt" >&2
import json, sys, os
out, warm, gens = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
rows = [l.split('\t') for l in open(os.path.join(out, 'samples.tsv')).read().splitlines()[1:]]
rows = [(float(t), float(r), float(f)) for t, r, f in rows]
use = [r for r in rows if r[0] >= warm] or rows
def slope(xs, ys):
    n = len(xs); mx = sum(xs) / n; my = sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den
ts = [r[0] / 60 for r in use]
print(f"samples: {len(rows)} (every ~{rows[1][0]-rows[0][0] if len(rows)>1 else 0:.0f} s), slope over t >= {warm:.0f} s ({len(use)} samples)")
for i, name, unit in ((1, 'rss', 'kB'), (2, 'fds', 'fds')):
    ys = [r[i] for r in use]
    print(f"{name}: first {rows[0][i]:.0f} {unit}, after warm-up {use[0][i]:.0f}, last {rows[-1][i]:.0f}, max {max(r[i] for r in rows):.0f}, "
          f"slope {slope(ts, ys):+.2f} {unit}/min")
for g in gens:
    for line in open(os.path.join(out, g + '.ndjson')):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get('kind') == 'summary' and j.get('scenario') == 'main':
            print(f"{g}: count {j['count']} ok {j['ok']} err {j['err']} dropped {j['dropped']} "
                  f"target {j['target_rps']} achieved {j['achieved_rps']} p99 {j['latency']['p99_ms']} ms "
                  f"status {json.dumps(j['status'])} errors {json.dumps(j['errors'])} interrupted {j['interrupted']}")
PY
}

machine() {
  {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname -s)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "cores: $(nproc)"
    echo "mem: $(grep MemTotal /proc/meminfo | awk '{print $2" kB"}')"
    echo "kernel: $(uname -r)"
    echo "loadavg_at_start: $(cut -d' ' -f1-3 /proc/loadavg) (other work shares this machine)"
    echo "rev: $(cd "$ROOT" && git rev-parse --short HEAD)"
    echo "command: bench/soak.sh $MODE (DUR=$DUR SAMPLE=$SAMPLE WARMUP=$WARMUP $*)"
  } > "$OUT/machine.txt"
}

case $MODE in
loadgen)
  DUR=${DUR:-3600}; RATE=${RATE:-2000}; NGINX_PORT=${NGINX_PORT:-18188}
  machine "RATE=$RATE"
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$NGINX" ] || { echo "needs nginx (apt-get install nginx-light)" >&2; exit 1; }
  NGDIR=$(mktemp -d); mkdir -p "$NGDIR/logs"
  CLEAN+=("rm -rf $NGDIR")
  cat > "$NGDIR/nginx.conf" <<NG
worker_processes 1;
pid $NGDIR/nginx.pid;
error_log $NGDIR/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  server { listen 127.0.0.1:$NGINX_PORT; location / { return 200 "ok\n"; } }
}
NG
  "$NGINX" -c "$NGDIR/nginx.conf" -p "$NGDIR" -g 'daemon off;' & PIDS+=($!)
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/" && break; sleep 0.2; done
  log "loadgen soak: $RATE RPS keep-alive for $DUR s"
  nice -n "${NICE:-10}" "$LOADGEN" --url "http://127.0.0.1:$NGINX_PORT/" --rate "$RATE" --duration "${DUR}s" \
    --connection keep-alive --bucket 10s --log-requests errors --threads 1 > "$OUT/loadgen.ndjson" 2> "$OUT/loadgen.err" &
  LG=$!; PIDS+=($LG)
  sample "$LG" &
  SP=$!
  wait "$LG" || log "loadgen exited $?"
  wait "$SP" || true
  summarize loadgen
  ;;
ingress)
  DUR=${DUR:-600}; KA_RATE=${KA_RATE:-5000}; CLOSE_RATE=${CLOSE_RATE:-1000}
  LP_PORT=${LP_PORT:-18790}
  [ -x "$LOCALPLANE" ] || { echo "no localplane binary at $LOCALPLANE" >&2; exit 1; }
  machine "KA_RATE=$KA_RATE CLOSE_RATE=$CLOSE_RATE"
  STATE=$(mktemp -d); CLEAN+=("rm -rf $STATE")
  "$LOCALPLANE" --listen "127.0.0.1:$LP_PORT" --state-dir "$STATE" > "$OUT/localplane.log" 2>&1 & LP=$!; PIDS+=($LP)
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$LP_PORT/healthz" && break; sleep 0.2; done
  API="http://127.0.0.1:$LP_PORT/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/soak/providers/Microsoft.App"
  curl -sf -X PUT -H 'content-type: application/json' "$API/managedEnvironments/soak-env?api-version=2024-03-01" \
    -d '{"location":"local","properties":{}}' > /dev/null
  curl -sf -X PUT -H 'content-type: application/json' "$API/containerApps/soak?api-version=2024-03-01" -d '{
    "location":"local",
    "properties":{"environmentId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/soak/providers/Microsoft.App/managedEnvironments/soak-env",
      "configuration":{"ingress":{"external":true,"targetPort":8080}},
      "template":{"containers":[{"name":"subject","image":"probelab/subject:dev","resources":{"cpu":0.5,"memory":"1Gi"}}],
                  "scale":{"minReplicas":1,"maxReplicas":1}}}}' > /dev/null
  FQDN=
  for _ in $(seq 120); do
    FQDN=$(curl -sf "$API/containerApps/soak?api-version=2024-03-01" | python3 -c 'import json,sys; print(json.load(sys.stdin)["properties"]["configuration"]["ingress"].get("fqdn") or "")' || true)
    [ -n "$FQDN" ] && curl -sf -o /dev/null "http://$FQDN/" && break
    sleep 1
  done
  [ -n "$FQDN" ] || { echo "app never became reachable" >&2; exit 1; }
  CLEAN+=("curl -sf -X DELETE '$API/containerApps/soak?api-version=2024-03-01' >/dev/null")
  log "ingress soak via http://$FQDN/: $KA_RATE RPS keep-alive + $CLOSE_RATE RPS close for $DUR s"
  sample "$LP" &
  SP=$!
  "$LOADGEN" --url "http://$FQDN/" --rate "$KA_RATE" --duration "${DUR}s" --connection keep-alive \
    --bucket 10s --log-requests errors > "$OUT/keepalive.ndjson" 2> "$OUT/keepalive.err" & G1=$!; PIDS+=($G1)
  "$LOADGEN" --url "http://$FQDN/" --rate "$CLOSE_RATE" --duration "${DUR}s" --connection close \
    --bucket 10s --log-requests errors > "$OUT/close.ndjson" 2> "$OUT/close.err" & G2=$!; PIDS+=($G2)
  wait "$G1" || log "keep-alive loadgen exited $?"
  wait "$G2" || log "close loadgen exited $?"
  cp "$OUT/samples.tsv" "$OUT/samples.tsv.tmp" 2>/dev/null || true
  kill "$SP" 2>/dev/null || true
  summarize keepalive close
  ;;
*) echo "unknown mode $MODE (loadgen|ingress)" >&2; exit 2 ;;
esac
