"""The files workload's three queries with Polars and DuckDB over JSON lines (one thread each),
as ../shared/bench/files/peers.py runs them over CSV: the same queries, results and checksums.

  files_jsonl_peers.py make DIR          DIR/events.jsonl from DIR/events.csv (ts, value, key)
  files_jsonl_peers.py run PEER QUERY DIR
Prints: SUMMARY peer=P query=Q events=N cpu_s=C events_per_cpu_s=R out=K checksum=S
"""
import os, resource, sys, warnings
warnings.filterwarnings("ignore")
# The CSV peers' own checksum (PEERS_DIR: the folder of ../shared/bench/files/peers.py).
sys.path.insert(0, os.environ["PEERS_DIR"])
from peers import checksum  # noqa: E402

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def polars_run(q, d, out):
    import polars as pl
    ev = pl.scan_ndjson(f"{d}/events.jsonl")
    t = lambda c: pl.from_epoch(c, time_unit="ms").alias("time")
    if q == "filter":
        lf = ev.filter(pl.col("value") >= 500000).select(t("ts"), "value")
    elif q == "window":
        lf = (ev.with_columns(((pl.col("ts") + 999) // 1000).alias("w")).group_by("key", "w")
                .agg((pl.len() + pl.col("value").sum()).alias("x"))
                .select(t(pl.col("w") * 1000), "key", "x"))
    else:
        ref = pl.scan_csv(f"{d}/reference.csv").sort("valid_from")
        lf = (ev.sort("ts").join_asof(ref, left_on="ts", right_on="valid_from", by="key")
                .filter(pl.col("ts") < pl.col("valid_to"))
                .select(t("ts"), (pl.col("value") * pl.col("value_right")).alias("x")))
    lf.sink_ndjson(out)

def duckdb_run(q, d, out):
    import duckdb
    con = duckdb.connect(); con.execute("SET threads=1")
    e = f"read_json('{d}/events.jsonl', format='newline_delimited')"
    if q == "filter":
        s = f"SELECT make_timestamp(ts*1000) AS time, value FROM {e} WHERE value >= 500000"
    elif q == "window":
        s = f"SELECT make_timestamp(((ts+999)//1000)*1000000) AS time, key, count(*) + sum(value) AS x FROM {e} GROUP BY key, (ts+999)//1000"
    else:
        s = (f"SELECT make_timestamp(e.ts*1000) AS time, e.value * r.value AS x FROM {e} e "
             f"ASOF JOIN read_csv('{d}/reference.csv') r ON e.key = r.key AND e.ts >= r.valid_from WHERE e.ts < r.valid_to")
    con.execute(f"COPY ({s}) TO '{out}' (FORMAT json)")

if __name__ == "__main__":
    if sys.argv[1] == "make":
        import polars as pl
        d = sys.argv[2]
        pl.read_csv(f"{d}/events.csv").write_ndjson(f"{d}/events.jsonl")
    else:
        peer, q, d = sys.argv[2:5]
        out = f"{d}/{peer}-jsonl-{q}.jsonl"
        n_events = sum(1 for _ in open(f"{d}/events.csv")) - 1
        c0 = cpu(); {"polars": polars_run, "duckdb": duckdb_run}[peer](q, d, out); c = cpu() - c0
        k, s = checksum(q, out)
        print(f"SUMMARY peer={peer} query={q} events={n_events} cpu_s={c:.3f} events_per_cpu_s={n_events / c:.0f} out={k} checksum={s}")
