#!/usr/bin/env bash
# analysis vs DuckDB on the same file: a generated 2-hour, 200 RPS run with one `req` line per
# request (1.44 M lines; ~377 MB with every field loadgen prints on a req line). Times the
# analysis end to end (Q1-Q7, forensics and extras, gates, verdict, report, charts, manifest: the
# library calls of `labctl analyze`, built as the `analyze_pack` example so the benchmark does not
# build the whole orchestrator) and DuckDB computing only Q1 + Q2 (per-run summary with latency
# percentiles; 10 s windows by completion time with empty windows as zero rows) over the same
# file, best of RUNS each after a warm-up read, and writes the raw results to
# bench/runs/<date>-<host>/results.txt.
#
# Needs: cargo, python3 with duckdb (`pip install duckdb`). Usage: bench/analysis_vs_duckdb.sh
# Env: HOURS [2], RPS [200], RUNS [3].
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS=${HOURS:-2}
RPS=${RPS:-200}
RUNS=${RUNS:-3}
target=${CARGO_TARGET_DIR:-target}
day=$(date -u +%Y-%m-%d)
host=$(hostname -s)
out=bench/runs/$day-$host
tmp=$out/tmp # ignored by git
mkdir -p "$tmp"

cargo build --release -q -p analysis --example gen_run --example analyze_pack
file=$tmp/run-${HOURS}h-${RPS}rps.ndjson
[ -s "$file" ] || "$target/release/examples/gen_run" "$file" "$HOURS" "$RPS"
cat "$file" >/dev/null # page cache warm for both tools

cat >"$tmp/duckdb_q1_q2.py" <<'PY'
import sys, time, duckdb
path = sys.argv[1]
t = time.perf_counter()
con = duckdb.connect()
con.execute(f"""
CREATE TABLE r AS SELECT run_id, scenario, ok, dur_ms,
       (epoch_ms(ts) // 10000) * 10 AS w
FROM read_json('{path}', format = 'newline_delimited',
     columns = {{kind: 'VARCHAR', run_id: 'VARCHAR', scenario: 'VARCHAR',
                 ts: 'TIMESTAMPTZ', ok: 'BOOLEAN', dur_ms: 'DOUBLE'}})
WHERE kind = 'req'""")
q1 = con.execute("""
SELECT run_id, scenario, count(*) AS requests, count(*) FILTER (ok) AS ok,
       count(*) FILTER (NOT ok) AS err, 100.0 * count(*) FILTER (NOT ok) / count(*) AS err_pct,
       approx_quantile(dur_ms, 0.5) AS p50, approx_quantile(dur_ms, 0.95) AS p95,
       approx_quantile(dur_ms, 0.99) AS p99, max(dur_ms) AS max_ms
FROM r GROUP BY ALL ORDER BY ALL""").fetchall()
q2 = con.execute("""
WITH b AS (SELECT run_id, scenario, w, count(*) AS c, count(*) FILTER (NOT ok) AS e,
                  approx_quantile(dur_ms, 0.5) AS p50, approx_quantile(dur_ms, 0.95) AS p95,
                  approx_quantile(dur_ms, 0.99) AS p99, max(dur_ms) AS mx
           FROM r GROUP BY ALL),
     s AS (SELECT run_id, scenario, min(w) AS a, max(w) AS z FROM b GROUP BY ALL),
     g AS (SELECT run_id, scenario, unnest(range(a, z + 10, 10)) AS w FROM s)
SELECT g.run_id, g.scenario, g.w, coalesce(c, 0) AS count, coalesce(e, 0) AS err,
       CASE WHEN coalesce(c, 0) = 0 THEN 0 ELSE 100.0 * e / c END AS err_pct, p50, p95, p99, mx
FROM g LEFT JOIN b USING (run_id, scenario, w) ORDER BY 1, 2, 3""").fetchall()
el = time.perf_counter() - t
print(f"{el:.3f} q1_rows={len(q1)} q2_rows={len(q2)} requests={q1[0][2]} err={q1[0][4]}")
PY

secs() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}")' "$@"; }
best() { sort -n | head -1; }

echo "file: $file ($(wc -c <"$file") bytes, $(wc -l <"$file") lines)" | tee "$out/results.txt"
: >"$tmp/ours.txt"
: >"$tmp/duck.txt"
: >"$tmp/ours_cpu.txt"
: >"$tmp/duck_cpu.txt"
for i in $(seq "$RUNS"); do
  rm -rf "$tmp/pack"
  a=$(date +%s.%N)
  /usr/bin/time -f "%M %U %S" -o "$tmp/rss.txt" "$target/release/examples/analyze_pack" "$tmp/pack" "$file" >"$tmp/labctl.out"
  b=$(date +%s.%N)
  t=$(secs "$a" "$b")
  echo "$t" >>"$tmp/ours.txt"
  read -r rss usr sys <"$tmp/rss.txt"
  python3 -c "print(f'{$usr + $sys:.2f}')" >>"$tmp/ours_cpu.txt"
  echo "analysis run $i: ${t}s wall, cpu ${usr}s user + ${sys}s sys, max_rss_kb=$rss ($(cat "$tmp/labctl.out"))" | tee -a "$out/results.txt"
done
for i in $(seq "$RUNS"); do
  a=$(date +%s.%N)
  r=$(/usr/bin/time -f "%U %S %M" -o "$tmp/duck_time.txt" python3 "$tmp/duckdb_q1_q2.py" "$file")
  b=$(date +%s.%N)
  t=$(secs "$a" "$b")
  echo "$t" >>"$tmp/duck.txt"
  read -r usr sys rss <"$tmp/duck_time.txt"
  python3 -c "print(f'{$usr + $sys:.2f}')" >>"$tmp/duck_cpu.txt"
  echo "duckdb Q1+Q2 run $i: ${t}s wall, cpu ${usr}s user + ${sys}s sys, max_rss_kb=$rss (inside python: $r)" | tee -a "$out/results.txt"
done
ours=$(best <"$tmp/ours.txt")
duck=$(best <"$tmp/duck.txt")
ratio=$(python3 -c "print(f'{$duck / $ours:.2f}')")
ours_cpu=$(best <"$tmp/ours_cpu.txt")
duck_cpu=$(best <"$tmp/duck_cpu.txt")
cpu_ratio=$(python3 -c "print(f'{$duck_cpu / $ours_cpu:.2f}')")
{
  echo "best analysis: ${ours}s; best duckdb: ${duck}s; ratio duckdb/ours: ${ratio}x (wall clock)"
  echo "best analysis cpu: ${ours_cpu}s; best duckdb cpu: ${duck_cpu}s; ratio: ${cpu_ratio}x (user+sys, less sensitive to machine load)"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $host; cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo || true)"
  echo "memory: $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
  echo "duckdb: $(python3 -c 'import duckdb; print(duckdb.__version__)')"
  echo "rustc: $(rustc --version)"
  echo "command: HOURS=$HOURS RPS=$RPS RUNS=$RUNS bench/analysis_vs_duckdb.sh"
} | tee -a "$out/results.txt"
