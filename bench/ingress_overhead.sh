#!/usr/bin/env bash
# Latency added by localplane's ingress, and its throughput against nginx, on one replica.
#
#   bench/ingress_overhead.sh [RATE=2000] [DURATION=20s] [WORKERS=32]
#
# One subject replica (process runtime, release build) behind (a) nothing, (b) localplane's
# ingress, (c) Debian's nginx with a keep-alive upstream pool. loadgen drives each with
# keep-alive connections: an open-model run at RATE for latency (p50/p99 from the scheduled
# time), then a closed-model run with WORKERS back-to-back workers for throughput.
# Raw loadgen summaries and the machine go to bench/runs/<UTC date>-<host>/.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-2000}
DURATION=${2:-20s}
WORKERS=${3:-32}
command -v nginx >/dev/null || { echo "nginx is needed (apt-get install nginx)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed (apt-get install jq)" >&2; exit 2; }
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p localplane -p subject -p loadgen
BIN=target/release
out="bench/runs/$(date -u +%Y-%m-%dT%H%M%SZ)-$(hostname)"
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ARM_PORT=$(free_port)
"$BIN/localplane" --listen "127.0.0.1:$ARM_PORT" --state-dir "$work/state" --evidence "$work/evidence" \
  --runtime process --bin-dir "$BIN" >"$work/localplane.log" 2>&1 &
pids+=($!)
ARM="http://127.0.0.1:$ARM_PORT"
for _ in $(seq 100); do curl -fsS "$ARM/localplane/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
APP="$ARM/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/bench/providers/Microsoft.App/containerApps/bench?api-version=2025-07-01"
curl -fsS -X PUT "$APP" -H 'content-type: application/json' -d '{
  "location": "local",
  "properties": {
    "configuration": {"ingress": {"external": true, "targetPort": 8080}},
    "template": {"containers": [{"name": "subject", "image": "probelab/subject:dev", "env": [{"name": "LOG_REQUESTS", "value": "none"}],
      "probes": [{"type": "Readiness", "httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": 1}]}],
      "scale": {"minReplicas": 1, "maxReplicas": 1}}
  }
}' >/dev/null
for _ in $(seq 200); do
  ep=$(curl -fsS "$ARM/localplane/apps/bench/endpoints")
  [ "$(echo "$ep" | jq '.backends | length')" = 1 ] && break
  sleep 0.1
done
INGRESS=$(echo "$ep" | jq -r .ingress)
DIRECT=$(echo "$ep" | jq -r '.backends[0].addr')
NGINX_PORT=$(free_port)
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  upstream replica { server $DIRECT; keepalive 256; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / { proxy_pass http://replica; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
sleep 0.5

run() { # name url mode
  local name=$1 url=$2 mode=$3 file="$out/$1-$3.ndjson"
  if [ "$mode" = open ]; then
    "$BIN/loadgen" --url "http://$url/" --rate "$RATE" --duration "$DURATION" --connection keep-alive >"$file"
  else
    "$BIN/loadgen" --url "http://$url/" --workers "$WORKERS" --duration "$DURATION" --connection keep-alive >"$file"
  fi
  grep '"kind":"summary"' "$file" | tail -1
}
{
  echo "# ingress overhead, $(date -u +%FT%TZ), $(hostname), $(nproc) cores, $(uname -r)"
  echo "# rate=$RATE duration=$DURATION workers=$WORKERS; nginx $(nginx -v 2>&1 | sed 's/.*\///')"
} >"$out/README"
printf '%-8s %-6s %10s %10s %10s %12s %6s\n' target mode p50_ms p99_ms max_ms achieved_rps err | tee -a "$out/README"
for target in direct ingress nginx; do
  case $target in direct) url=$DIRECT ;; ingress) url=$INGRESS ;; nginx) url="127.0.0.1:$NGINX_PORT" ;; esac
  for mode in open closed; do
    s=$(run "$target" "$url" "$mode")
    printf '%-8s %-6s %10s %10s %10s %12s %6s\n' "$target" "$mode" \
      "$(echo "$s" | jq -r '.latency.p50_ms // .latency.p50 // "?"')" \
      "$(echo "$s" | jq -r '.latency.p99_ms // .latency.p99 // "?"')" \
      "$(echo "$s" | jq -r '.latency.max_ms // .latency.max // "?"')" \
      "$(echo "$s" | jq -r '.achieved_rps')" "$(echo "$s" | jq -r '.err')" | tee -a "$out/README"
  done
done
echo "raw summaries in $out"
