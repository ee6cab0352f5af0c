#!/usr/bin/env bash
# analysis vs DuckDB on the same file, for every input shape the analysis reads: one generated
# 2-hour, 200 RPS run (1.44 M requests) written in six shapes by
# crates/analysis/examples/gen_run.rs, each as its real producer writes it:
#   loadgen    our loadgen's `req` lines
#   client     another client's lines (Python json.dumps, own key order, the k6 script's fields:
#              no scheduled_ts, no scenario, no err_class)
#   k6         the original k6 script's lines in k6's logfmt (`msg="{\"kind\":\"req\",...}"`)
#   console    ContainerAppConsoleLogs_CL NDJSON rows as localplane's log sink writes them
#   az         the same rows as `az monitor log-analytics query` prints them (JSON list, indent 2)
#   query-api  the same rows as the Log Analytics query API answers ({"tables":[...]})
# Times the analysis end to end (Q1-Q7, forensics and extras, gates, verdict, report, charts,
# manifest: the library calls of `labctl analyze`, built as the `analyze_pack` example) and
# DuckDB loading the same file and computing only Q1 + Q2 (bench/duckdb_q1_q2.py), best of RUNS
# each after a warm-up read, and writes the raw results to bench/runs/<date>-<host>/results.txt.
# Run it under the machine-wide lock: flock /tmp/probelab-heavy.lock bench/analysis_vs_duckdb.sh
#
# Needs: cargo, python3 with duckdb (`pip install duckdb`).
# Env: HOURS [2], RPS [200], RUNS [3], SHAPES ["loadgen client k6 console az query-api"],
# OUT [bench/runs/<date>-<host>] (where results.txt goes; give each repeat its own),
# INPUTS [$OUT/tmp] (where the generated files are kept, and reused when present).
# The two binaries are copied out of the (maybe shared) target dir before the first run, so a
# build elsewhere cannot swap them in the middle of it.
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS=${HOURS:-2}
RPS=${RPS:-200}
RUNS=${RUNS:-3}
SHAPES=${SHAPES:-loadgen client k6 console az query-api}
target=${CARGO_TARGET_DIR:-target}
day=$(date -u +%Y-%m-%d)
host=$(hostname -s)
out=${OUT:-bench/runs/$day-$host}
tmp=$out/tmp # ignored by git
inputs=${INPUTS:-$tmp}
mkdir -p "$tmp" "$inputs"
res=$out/results.txt

cargo build --release -q -p analysis --example gen_run --example analyze_pack
cp "$target/release/examples/gen_run" "$target/release/examples/analyze_pack" "$tmp/"

py() { python3 -c "import sys; print($1)" "${@:2}"; }
best() { sort -n | head -1; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $host; cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo || true)"
  echo "memory: $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
  echo "duckdb: $(python3 -c 'import duckdb; print(duckdb.__version__)')"
  echo "rustc: $(rustc --version)"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)')"
  echo "command: HOURS=$HOURS RPS=$RPS RUNS=$RUNS SHAPES=\"$SHAPES\" OUT=$out bench/analysis_vs_duckdb.sh"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$res"

table=$tmp/table.md
echo "| shape | input | ours, wall / CPU | ours MB/s (wall) | DuckDB Q1+Q2, wall / CPU | ratio ours/DuckDB, wall / CPU |" >"$table"
echo "|---|---|---|---|---|---|" >>"$table"

for shape in $SHAPES; do
  file=$inputs/run-${HOURS}h-${RPS}rps.$shape
  [ -s "$file" ] || "$tmp/gen_run" "$file" "$HOURS" "$RPS" "$shape"
  cat "$file" >/dev/null # page cache warm for both tools
  bytes=$(wc -c <"$file")
  echo "== $shape: $file ($bytes bytes)" | tee -a "$res"
  : >"$tmp/ours.txt"
  : >"$tmp/ours_cpu.txt"
  : >"$tmp/duck.txt"
  : >"$tmp/duck_cpu.txt"
  for i in $(seq "$RUNS"); do
    rm -rf "$tmp/pack"
    a=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$tmp/rss.txt" "$tmp/analyze_pack" "$tmp/pack" "$file" >"$tmp/labctl.out"
    b=$(date +%s.%N)
    t=$(py 'f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}"' "$a" "$b")
    echo "$t" >>"$tmp/ours.txt"
    read -r rss usr sys <"$tmp/rss.txt"
    py 'f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}"' "$usr" "$sys" >>"$tmp/ours_cpu.txt"
    echo "analysis run $i: ${t}s wall, cpu ${usr}s user + ${sys}s sys, max_rss_kb=$rss ($(cat "$tmp/labctl.out"))" | tee -a "$res"
  done
  for i in $(seq "$RUNS"); do
    a=$(date +%s.%N)
    r=$(/usr/bin/time -f "%U %S %M" -o "$tmp/duck_time.txt" python3 bench/duckdb_q1_q2.py "$shape" "$file")
    b=$(date +%s.%N)
    t=$(py 'f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}"' "$a" "$b")
    echo "$t" >>"$tmp/duck.txt"
    read -r usr sys rss <"$tmp/duck_time.txt"
    py 'f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}"' "$usr" "$sys" >>"$tmp/duck_cpu.txt"
    echo "duckdb Q1+Q2 run $i: ${t}s wall, cpu ${usr}s user + ${sys}s sys, max_rss_kb=$rss (inside python: $r)" | tee -a "$res"
  done
  ours=$(best <"$tmp/ours.txt")
  duck=$(best <"$tmp/duck.txt")
  ours_cpu=$(best <"$tmp/ours_cpu.txt")
  duck_cpu=$(best <"$tmp/duck_cpu.txt")
  ratio=$(py 'f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}"' "$ours" "$duck")
  cpu_ratio=$(py 'f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}"' "$ours_cpu" "$duck_cpu")
  mbs=$(py 'f"{float(sys.argv[1]) / 1e6 / float(sys.argv[2]):.0f}"' "$bytes" "$ours")
  mb=$(py 'f"{float(sys.argv[1]) / 1e6:.0f}"' "$bytes")
  echo "best $shape: ours ${ours}s wall / ${ours_cpu}s cpu (${mbs} MB/s); duckdb ${duck}s wall / ${duck_cpu}s cpu; ours/duckdb ${ratio} wall, ${cpu_ratio} cpu" | tee -a "$res"
  echo "| $shape | $mb MB | ${ours} s / ${ours_cpu} s | $mbs | ${duck} s / ${duck_cpu} s | **${ratio}** / ${cpu_ratio} |" >>"$table"
done
{
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  cat "$table"
} | tee -a "$res"
