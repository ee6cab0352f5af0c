"""DuckDB's side of bench/analysis_vs_duckdb.sh: load one shape's file, then Q1 + Q2.

Usage: python3 bench/duckdb_q1_q2.py SHAPE FILE
Prints: seconds q1_rows=.. q2_rows=.. requests=.. err=..

Each shape is read the way a DuckDB user would read it: `read_json` of the lines (any key
order; missing columns are NULL), the console rows' / az list's / query API answer's `Log_s`
column parsed with `from_json`, and k6's logfmt `msg` cut out with a regular expression and
unescaped before `from_json`. Only the columns Q1 and Q2 need are kept.
"""
import sys
import time

import duckdb

shape, path = sys.argv[1], sys.argv[2]
REQ = """'{"kind":"VARCHAR","run_id":"VARCHAR","scenario":"VARCHAR","ts":"TIMESTAMPTZ","ok":"BOOLEAN","dur_ms":"DOUBLE"}'"""
COLS = """{kind: 'VARCHAR', run_id: 'VARCHAR', scenario: 'VARCHAR',
           ts: 'TIMESTAMPTZ', ok: 'BOOLEAN', dur_ms: 'DOUBLE'}"""

if shape in ("loadgen", "client"):
    src = f"""SELECT kind, run_id, scenario, ts, ok, dur_ms
    FROM read_json('{path}', format = 'newline_delimited', columns = {COLS})"""
elif shape == "k6":
    src = f"""SELECT j.* FROM (
      SELECT from_json(replace(replace(
               regexp_extract(line, 'msg="((?:[^"\\\\]|\\\\.)*)"', 1),
               '\\"', '"'), '\\\\', '\\'), {REQ}) AS j
      FROM read_csv('{path}', columns = {{line: 'VARCHAR'}}, header = false,
                    delim = '\\x01', quote = '', escape = ''))"""
elif shape == "console":
    src = f"""SELECT j.* FROM (SELECT from_json(Log_s, {REQ}) AS j
      FROM read_json('{path}', format = 'newline_delimited', columns = {{Log_s: 'VARCHAR'}}))"""
elif shape == "az":
    src = f"""SELECT j.* FROM (SELECT from_json(Log_s, {REQ}) AS j
      FROM read_json('{path}', format = 'array', columns = {{Log_s: 'VARCHAR'}}))"""
elif shape == "query-api":
    src = f"""SELECT j.* FROM (
      SELECT from_json(row[li], {REQ}) AS j FROM (
        SELECT unnest(t.rows) AS row, list_position([c.name FOR c IN t.columns], 'Log_s') AS li
        FROM (SELECT unnest(tables) AS t FROM read_json('{path}', format = 'unstructured',
              maximum_object_size = 4000000000,
              columns = {{tables: 'STRUCT(name VARCHAR, columns STRUCT(name VARCHAR, type VARCHAR)[], rows VARCHAR[][])[]'}}))))"""
else:
    sys.exit(f"unknown shape {shape}")

t = time.perf_counter()
con = duckdb.connect()
con.execute(f"""
CREATE TABLE r AS SELECT run_id, coalesce(scenario, 'main') AS scenario, ok, dur_ms,
       (epoch_ms(ts) // 10000) * 10 AS w
FROM ({src}) WHERE kind = 'req'""")
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
print(f"{el:.3f} q1_rows={len(q1)} q2_rows={len(q2)} requests={q1[0][2] if q1 else 0} err={q1[0][4] if q1 else 0}")
