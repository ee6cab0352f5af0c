#!/usr/bin/env bash
# A no-flip series: every quick-lab test that CI asserts a verdict of, run N times, J at once,
# each run's evidence pack kept, then one table of what happened. A lab that "never flips" is
# one whose test passed in every run of its series (issue #34); docs/FIDELITY.md
# ("Repeatability") keeps the series' results, bench/runs/series/ their tables.
#
#   scripts/no-flip-series.sh [--runs N] [--jobs J] [--filter EXPR] [--out DIR]
#   scripts/no-flip-series.sh --summarize DIR
#
#   --runs N      runs of each test (default 20)
#   --jobs J      tests at once (default 6, CI's platform group); read again before each start
#                 from DIR/jobs, so `echo 8 > DIR/jobs` changes it while the series runs
#   --filter EXPR a nextest filter expression (default: every runner `labs_*` test but the
#                 ALONE pair, which assert latency and must run alone, and the lab image's test)
#   --out DIR     where items/, results.tsv, summary.md and the figure tables go (default
#                 /var/tmp/probelab-series/<UTC stamp>); packs are large (10-50 MB a run)
#   --summarize DIR  only (re)write DIR/summary.md, verdict-figures.tsv and timing-checks.tsv
#                 from DIR/results.tsv and the packs, e.g. while it runs
#
# The runs are queued round by round, the longest test first in each round (times from the
# newest bench/runs/ci/*-tests.txt), so every test has about as many runs as the others when
# the series is stopped early: `touch DIR/stop` starts nothing new; the summary covers what ran.
# Each run is the test binary itself (`<bin> --exact <name>`), with PROBELAB_KEEP_EVIDENCE=1 and
# its own TMPDIR, so its pack survives; the test's own assertions (the ones CI makes) decide
# pass or fail. Needs the images and the test build, both with this CARGO_TARGET_DIR
# (`scripts/test.sh --phase build` makes them).
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
repo=$(pwd)

# The table: per test, runs, passes, the verdicts seen, the longest run of passes in a row.
summarize() {
  {
    echo "# No-flip series: $(cat "$out/commit"), started $(cat "$out/started")"
    echo
    echo "Runs of each test: up to $runs, $(cat "$out/jobs") at once; filter \`$(cat "$out/filter")\`."
    echo "Machine: $(nproc) cores, load average when written: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "Beside it: verdict-figures.tsv and timing-checks.tsv, made from the runs' packs."
    echo
    echo "| test | runs | passed | verdicts | passes in a row (longest) | seconds (min-max) |"
    echo "|---|---|---|---|---|---|"
    tail -n +2 "$out/results.tsv" | sort -t $'\t' -k2,2 -k1,1n | awk -F'\t' '
      function flush() {
        if (name == "") return
        vs = ""; for (v in verdicts) vs = vs (vs == "" ? "" : ", ") v " " verdicts[v]
        printf "| %s | %d | %d | %s | %d | %d-%d |\n", name, n, ok, vs, best, lo, hi
        delete verdicts
      }
      $2 != name { flush(); name = $2; n = 0; ok = 0; streak = 0; best = 0; lo = 1e9; hi = 0 }
      { n++; verdicts[$6]++; if ($4 == "pass") { ok++; streak++; if (streak > best) best = streak } else streak = 0
        if ($5 < lo) lo = $5; if ($5 > hi) hi = $5 }
      END { flush() }'
  } > "$out/summary.md"
  figures
}

# Two tables from the packs the runs left (a run without a pack, like the lab image's, adds
# nothing): verdict-figures.tsv, per test from each verdict.json, the verdicts and the min..max
# over the runs of the worst 10 s window's error %, the judged errors and the judged requests;
# timing-checks.tsv, every gate with a time bound (`min_s`/`max_s` in its numbers), its bound
# and the range observed over the runs (`drained_s`, or what its detail states: "(X s)",
# "(X to Y s)", or "ended X s" for each replica a failed check names). Both are rewritten from
# the packs each time, so they can be made again.
figures() {
  local test pack p
  : > "$out/figures.tmp"; : > "$out/timings.tmp"
  tail -n +2 "$out/results.tsv" | while IFS=$'\t' read -r _ test _ _ _ _ pack; do
    [ "$pack" = - ] && continue
    tr '+' '\n' <<< "$pack" | while IFS= read -r p; do
      [ -f "$p/verdict.json" ] || continue
      jq -r --arg t "$test" '[$t, .verdict, .worst_bucket_err_pct, .judged_errors, .judged_requests]
        | @tsv' "$p/verdict.json" >> "$out/figures.tmp"
      [ -f "$p/gates.json" ] || continue
      jq -r --arg t "$test" '.gates[]
        | select((.numbers | type) == "object" and (.numbers.min_s != null or .numbers.max_s != null))
        | (if .numbers.drained_s != null then [.numbers.drained_s]
           else [.detail | match("\\(([0-9.]+)(?: to ([0-9.]+))? s\\)|ended ([0-9.]+) s"; "g")
                 | .captures[].string | select(. != null) | tonumber] end) as $all
        | ($all | [min, max]) as $seen
        | [$t, (.name | sub("^check:"; "")), "\(.numbers.min_s // "")..\(.numbers.max_s // "")", ($seen[0] // ""), ($seen[1] // "")]
        | @tsv' "$p/gates.json" >> "$out/timings.tmp"
    done
  done
  { printf 'test\truns\tverdict\tworst 10 s window (%%, min..max)\terrors (min..max)\tjudged requests\n'
    sort -t $'\t' -k1,1 -s "$out/figures.tmp" | awk -F'\t' -v OFS='\t' '
      function flush(  vs, v) {
        if (name == "") return
        vs = ""; for (v in verdicts) vs = vs (vs == "" ? "" : ", ") v (nv > 1 ? " " verdicts[v] : "")
        print name, n, vs, range(0), range(1), range(2)
        delete verdicts; delete lo; delete hi
      }
      function range(i) { return sprintf("%g..%g", lo[i], hi[i]) }
      function see(i, x) { if (!(i in lo) || x < lo[i]) lo[i] = x; if (!(i in hi) || x > hi[i]) hi[i] = x }
      $1 != name { flush(); name = $1; n = 0; nv = 0 }
      { n++; if (!($2 in verdicts)) nv++; verdicts[$2]++; see(0, $3 + 0); see(1, $4 + 0); see(2, $5 + 0) }
      END { flush() }'
  } > "$out/verdict-figures.tsv"
  { printf 'test\tcheck\tbound (s)\tobserved over the runs (s)\n'
    sort -t $'\t' -k1,2 "$out/timings.tmp" | awk -F'\t' -v OFS='\t' '
      function flush() {
        if (key == "") return
        print key, bound, (seen ? sprintf("%.3f..%.3f", lo, hi) : "-")
      }
      ($1 "\t" $2) != key { flush(); key = $1 "\t" $2; bound = $3; seen = 0 }
      $4 != "" { if (!seen || $4 < lo) lo = $4 + 0; if (!seen || $5 > hi) hi = $5 + 0; seen = 1 }
      END { flush() }'
  } > "$out/timing-checks.tsv"
  rm -f "$out/figures.tmp" "$out/timings.tmp"
}

runs=20
jobs=6
filter='(package(runner) & binary(/^labs_/) & !binary(labs_docker)) | (package(imagetests) & binary(lab_image))'
out=/var/tmp/probelab-series/$(date -u +%Y%m%dT%H%M%SZ)
summarize_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --filter) filter=${2:?--filter needs a nextest filter expression}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --summarize) out=${2:?--summarize needs a series directory}; summarize_only=1; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "no-flip-series: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$out" in /*) ;; *) out=$caller/$out ;; esac # DIR as the caller meant it
if [ "$summarize_only" = 1 ]; then
  [ -f "$out/results.tsv" ] || { echo "no-flip-series: $out/results.tsv not found" >&2; exit 2; }
  runs=$(cat "$out/runs") summarize
  cat "$out/summary.md"
  exit 0
fi
case "$runs$jobs" in *[!0-9]*) echo "no-flip-series: --runs and --jobs take whole numbers" >&2; exit 2 ;; esac
[ "$runs" -ge 1 ] && [ "$jobs" -ge 1 ] || { echo "no-flip-series: --runs and --jobs start at 1" >&2; exit 2; }
cargo nextest --version >/dev/null 2>&1 || { echo "no-flip-series: needs cargo-nextest (scripts/test.sh installs it)" >&2; exit 2; }
command -v jq >/dev/null || { echo "no-flip-series: needs jq (apt-get install jq)" >&2; exit 2; }

mkdir -p "$out/items"
echo "$jobs" > "$out/jobs"
echo "$runs" > "$out/runs"
date -u '+%Y-%m-%d %H:%M UTC' > "$out/started"
# The commit the tests are built from: the listing below builds the tree as it is now.
{ git rev-parse --short HEAD; git diff --quiet HEAD -- crates labs || echo " with uncommitted changes"; } |
  tr -d '\n' > "$out/commit"
echo "$filter" > "$out/filter"
say() { echo "no-flip-series [$(date -u +%H:%M:%S)] $*" >&2; }

# Which tests, and where their binaries are: nextest's own list (it builds what is missing).
say "listing the tests (filter: $filter)"
cargo nextest list --message-format json -E "$filter" > "$out/list.json" 2> "$out/list.log" ||
  { cat "$out/list.log" >&2; echo "no-flip-series: listing the tests failed (above)" >&2; exit 2; }
jq -r '."rust-suites"[] | . as $s | .testcases | to_entries[] | select(.value."filter-match".status == "matches")
  | [$s."binary-id", .key, $s."binary-path", $s.cwd] | @tsv' "$out/list.json" > "$out/tests.tsv"
count=$(wc -l < "$out/tests.tsv")
[ "$count" -gt 0 ] || { echo "no-flip-series: the filter matches no test" >&2; exit 2; }

# Expected seconds per test from the newest CI timing table (unknown: 0, so it starts last).
# One round's order is computed once; every round repeats it.
times=$(ls bench/runs/ci/*-tests.txt 2>/dev/null | sort | tail -n 1 || true)
awk -F'\t' -v times="$times" '
  BEGIN { if (times != "") while ((getline line < times) > 0) { split(line, f, " +"); if (line !~ /^#/) secs[f[3] "\t" f[4]] = int(f[2]) } }
  { print (($1 "\t" $2) in secs ? secs[$1 "\t" $2] : 0) "\t" $0 }' "$out/tests.tsv" |
  sort -t $'\t' -k1,1nr > "$out/round.tsv"
: > "$out/queue.tsv"
for round in $(seq 1 "$runs"); do
  sed "s/^/$round\t/" "$out/round.tsv" >> "$out/queue.tsv"
done
total=$(wc -l < "$out/queue.tsv")
say "$count tests x $runs runs = $total runs, $(cat "$out/jobs") at once, into $out"
printf 'round\ttest\tbinary\tresult\tseconds\tverdict\tpack\n' > "$out/results.tsv"

# One run: the test binary in its package's directory, its pack kept under its own TMPDIR.
run_one() {
  local round=$1 id=$2 name=$3 bin=$4 cwd=$5
  local dir="$out/items/$(printf '%02d' "$round")-${id//::/-}-$name"
  mkdir -p "$dir/tmp"
  local t0 t1 rc=0
  t0=$(date +%s)
  (cd "$cwd" && PROBELAB_KEEP_EVIDENCE=1 TMPDIR="$dir/tmp" RUST_BACKTRACE=1 \
    timeout 1500 "$bin" --exact "$name" --nocapture --test-threads 1) > "$dir/log" 2>&1 || rc=$?
  t1=$(date +%s)
  local result=pass verdict=- pack=-
  [ "$rc" -eq 0 ] || result="fail($rc)"
  # The passed-test line, not only the exit code: a filter that ran nothing is not a pass.
  grep -q "^test result: ok. 1 passed" "$dir/log" || { [ "$result" = pass ] && result=ran-nothing; }
  # Every pack the test left (a twin lab leaves two): their verdicts joined with '+'.
  local v vs="" ps=""
  while IFS= read -r v; do
    vs="$vs${vs:++}$(jq -r '.verdict // "-"' "$v" 2>/dev/null || echo -)"
    ps="$ps${ps:++}$(dirname "$v")"
  done < <(find "$dir/tmp" -name verdict.json 2>/dev/null | sort)
  [ -z "$vs" ] || { verdict=$vs; pack=$ps; }
  printf '%d\t%s\t%s\t%s\t%d\t%s\t%s\n' "$round" "$name" "$id" "$result" "$((t1 - t0))" "$verdict" "$pack" >> "$out/results.tsv"
  say "run $round of $name: $result, $verdict, $((t1 - t0)) s"
}

started=0
while IFS=$'\t' read -r round _secs id name bin cwd; do
  [ -e "$out/stop" ] && { say "$out/stop exists: no new runs"; break; }
  while [ "$(jobs -rp | wc -l)" -ge "$(cat "$out/jobs" 2>/dev/null || echo "$jobs")" ]; do
    wait -n || true
  done
  started=$((started + 1))
  say "start $started/$total: run $round of $name ($(jobs -rp | wc -l) running)"
  run_one "$round" "$id" "$name" "$bin" "$cwd" &
done < "$out/queue.tsv"
wait
summarize
say "done: $out/summary.md"
cat "$out/summary.md"
