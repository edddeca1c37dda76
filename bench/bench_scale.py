"""Scale benchmark of the engines: embedded (polars lazy) vs Dask LocalCluster vs DuckDB (a script, not a test).

Two tasks on SYNTHETIC hive-partitioned Parquet datasets written to a temporary folder:

* ``profile``: production requests (start time, tokens, status; one file per hour of traffic)
  - ``bearing embedded`` / ``bearing dask``: ``profile_dataset`` end to end (what `bearing profile
    FOLDER [--engine dask]` computes: facts, timestamp grid, per-minute and per-second counts,
    budget, mix shares, sequence lengths, then slots, MSTL, bursts, bootstrap targets);
  - ``bearing agg``: the embedded engine's aggregation pass alone (per-minute and per-second
    counts, status minutes, hour x mix, token value counts), comparable to the references;
  - ``duckdb`` and ``polars-lazy``: the same per-minute counts + token sums, per-hour x mix
    counts and per-second counts, queried from the same files.
* ``curve``: a stepped load test (one file per run x step; ``run_id`` and ``step`` in the
  folder names): ``load_curve_dataset`` embedded and on Dask, against DuckDB and polars-lazy
  computing per run x step x mix: n, errors, P50/P95/P99 of TTFT and latency over ok requests
  (``quantile_cont``: linear, like bearing).

Every measurement runs in a fresh child process. ``wall s`` is measured by the parent around
the child (interpreter start and imports included); ``inner s`` by the child around the work
alone (for Dask: cluster start and shutdown included). The ratios use ``inner s``: on a shared
machine interpreter start-up swings by seconds. Peak memory is the largest sum of resident
set sizes over the child and all its descendants (the Dask scheduler and worker processes
included), sampled every 20 ms with psutil.

Usage::

    PYTHONPATH=. nice python bench/bench_scale.py [--rows 1000000 10000000] [--tasks profile curve]
        [--skip dask] [--keep DIR]

The 100M-row run (``--rows 100000000 --tasks profile``) takes several minutes and ~4 GB of
disk; run it alone on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
PER_FILE = 1_000_000


def write_production(root: Path, rows: int, seed: int = 5) -> Path:
    """``rows`` requests, one hour-file per PER_FILE requests (rate varies by hour), written file by file."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    n_files = max(1, rows // PER_FILE)
    for i in range(n_files):
        n = rows // n_files + (1 if i < rows % n_files else 0)
        t = np.sort(rng.uniform(T0 + 3600.0 * i, T0 + 3600.0 * (i + 1), n))
        out = root / f"hour={i}"
        out.mkdir(parents=True)
        pl.DataFrame({
            "start_s": t, "input_tokens": rng.integers(1, 4000, n), "output_tokens": rng.integers(1, 800, n),
            "status": np.where(rng.uniform(size=n) < 0.002, "error", "ok"),
        }).write_parquet(out / "part-0.parquet", metadata={"bearing.time_origin": "epoch"})
    return root


def write_loadtest(root: Path, rows: int, seed: int = 9) -> Path:
    """``rows`` requests: 2 runs x 10 rps steps of 300 s, one file per run x step."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    n = rows // 20
    for r in range(2):
        for s in range(10):
            t0 = T0 + r * 10_000 + s * 310.0
            start = np.sort(rng.uniform(t0, t0 + 300.0, n))
            ttft = rng.lognormal(np.log(80 + 20 * s), 0.5, n)
            outt = rng.integers(10, 400, n)
            lat = ttft + outt * rng.uniform(8, 12, n)
            out = root / f"run_id=run-{r}" / f"step={s}"
            out.mkdir(parents=True)
            pl.DataFrame({
                "offered_load": np.full(n, n / 300.0), "offered_load_unit": "rps", "start_s": start,
                "end_s": start + lat / 1000.0, "ttft_ms": ttft, "latency_ms": lat,
                "input_tokens": rng.integers(1, 2000, n), "output_tokens": outt,
                "status": np.where(rng.uniform(size=n) < 0.01, "error", "ok"),
            }).write_parquet(out / "part-0.parquet")
    return root


# --------------------------------------------------------------------------- children

MIX_SQL = "CASE WHEN input_tokens < 512 THEN 'short' ELSE 'long' END"


def child(task: str, engine: str, path: str) -> dict:
    from bearing_lib.data.mixes import Mix, MixSpec

    spec = MixSpec((Mix("short", {"input_tokens": (0, 512)}), Mix("long", {"input_tokens": (512, 1e9)})))
    t = time.perf_counter()
    if task == "profile" and engine in ("embedded", "dask"):
        from bearing_lib.traffic.dataset import profile_dataset

        p = profile_dataset(path, engine=engine, mix_spec=spec)
        out = {"n": p.source.n_rows, "minutes": p.per_minute.n_minutes, "p99_per_min": p.per_minute.p99}
    elif task == "profile" and engine == "agg":
        import functools

        from bearing_lib.data.engine import Engine, open_dataset
        from bearing_lib.traffic import dataset as tds

        ds = open_dataset(path)
        with Engine("embedded") as eng:  # the aggregation pass of `bearing profile` on an epoch clock, alone
            fn = functools.partial(tds._facts_and_counts, origin=0.0, spec=spec,
                                   bad_statuses=("error", "timeout", "rejected"), gaps=False)
            parts = eng.map_partitions(ds, tds.PROFILE_COLUMNS, fn)
        out = {"n": int(parts[0]["n"].sum()), "minutes": parts[1].height}
    elif task == "profile" and engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        src = f"read_parquet('{path}/**/*.parquet', hive_partitioning = false)"
        con.execute(f"SELECT floor(start_s / 60) AS k, count(*), sum(input_tokens), sum(output_tokens) FROM {src} "
                    "GROUP BY k").fetchall()
        con.execute(f"SELECT floor(start_s) AS k, count(*) FROM {src} GROUP BY k").fetchall()
        con.execute(f"SELECT floor(start_s / 3600) AS h, {MIX_SQL} AS mix, count(*) FROM {src} "
                    "GROUP BY h, mix").fetchall()
        n = con.execute(f"SELECT count(*) FROM {src}").fetchone()[0]
        out = {"n": n}
    elif task == "profile" and engine == "polars-lazy":
        import polars as pl

        lf = pl.scan_parquet(f"{path}/**/*.parquet", hive_partitioning=False)
        mix = pl.when(pl.col("input_tokens") < 512).then(pl.lit("short")).otherwise(pl.lit("long"))
        qs = [
            lf.group_by((pl.col("start_s") / 60).floor().alias("k")).agg(
                pl.len(), pl.col("input_tokens").sum(), pl.col("output_tokens").sum()),
            lf.group_by(pl.col("start_s").floor().alias("k")).agg(pl.len()),
            lf.group_by((pl.col("start_s") / 3600).floor().alias("h"), mix.alias("mix")).agg(pl.len()),
        ]
        res = pl.collect_all(qs, engine="streaming")
        out = {"n": int(res[0]["len"].sum())}
    elif task == "curve" and engine in ("embedded", "dask"):
        from bearing_lib.limits.dataset import load_curve_dataset

        c, _ = load_curve_dataset(path, spec, engine=engine)
        out = {"n": int(c["n_requests"].sum()), "groups": c.height}
    elif task == "curve" and engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        src = f"read_parquet('{path}/**/*.parquet', hive_partitioning = true)"
        q = (f"SELECT run_id, step, {MIX_SQL} AS mix, count(*) AS n, count(*) FILTER (WHERE status <> 'ok') AS err, "
             + ", ".join(f"quantile_cont({m}, {q}) FILTER (WHERE status = 'ok')"
                         for m in ("ttft_ms", "latency_ms") for q in (0.5, 0.95, 0.99))
             + f" FROM {src} GROUP BY ALL")
        rows = con.execute(q).fetchall()
        out = {"n": sum(r[3] for r in rows), "groups": len(rows)}
    elif task == "curve" and engine == "polars-lazy":
        import polars as pl

        lf = pl.scan_parquet(f"{path}/**/*.parquet", hive_partitioning=True)
        ok = pl.col("status") == "ok"
        mix = pl.when(pl.col("input_tokens") < 512).then(pl.lit("short")).otherwise(pl.lit("long"))
        res = lf.group_by("run_id", "step", mix.alias("mix")).agg(
            pl.len().alias("n"), (~ok).sum().alias("err"),
            *[pl.col(m).filter(ok).quantile(q, interpolation="linear").alias(f"{m}{q}")
              for m in ("ttft_ms", "latency_ms") for q in (0.5, 0.95, 0.99)],
        ).collect(engine="streaming")
        out = {"n": int(res["n"].sum()), "groups": res.height}
    else:
        raise SystemExit(f"unknown task/engine {task}/{engine}")
    out["inner_s"] = time.perf_counter() - t
    return out


def run_child(task: str, engine: str, path: Path) -> dict:
    """Run one measurement in a fresh process; wall time and peak RSS of its whole process tree."""
    import psutil

    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from bench.bench_scale import child; "
            f"print('RESULT', json.dumps(child({task!r}, {engine!r}, {str(path)!r})))")
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            rss = 0
            for p in tree:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t
    out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{task}/{engine} failed:\n{err[-3000:]}")
    res = json.loads(next(x for x in out.splitlines() if x.startswith("RESULT ")).removeprefix("RESULT "))
    return {**res, "wall_s": wall, "peak_gib": peak / 2**30, "load1": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--tasks", nargs="+", default=["profile", "curve"], choices=["profile", "curve"])
    ap.add_argument("--skip", nargs="*", default=[], help="engines to leave out (e.g. dask)")
    ap.add_argument("--keep", type=Path, default=None, help="write the datasets here and keep them")
    args = ap.parse_args()
    engines = {"profile": ["embedded", "agg", "dask", "duckdb", "polars-lazy"],
               "curve": ["embedded", "dask", "duckdb", "polars-lazy"]}
    results = []
    with tempfile.TemporaryDirectory(prefix="bearing-scale-") as tmp:
        base = args.keep or Path(tmp)
        for rows in args.rows:
            for task in args.tasks:
                path = base / f"{task}-{rows}"
                if not path.exists():
                    t = time.perf_counter()
                    (write_production if task == "profile" else write_loadtest)(path, rows)
                    print(f"wrote {path} ({rows:,} rows) in {time.perf_counter() - t:.1f} s", flush=True)
                for eng in engines[task]:
                    if eng in args.skip:
                        continue
                    r = run_child(task, eng, path)
                    results.append({"task": task, "rows": rows, "engine": eng, **r})
                    print(json.dumps(results[-1]), flush=True)
    print()
    print("load = the machine's 1-minute load average at the end of the measurement (2 cores)")
    print(f"{'task':8} {'rows':>12} {'engine':12} {'wall s':>8} {'inner s':>8} {'peak GiB':>9} "
          f"{'/duckdb t':>9} {'/duckdb m':>9} {'load':>5}")
    for r in results:
        ref = next((x for x in results if (x["task"], x["rows"], x["engine"]) == (r["task"], r["rows"], "duckdb")),
                   None)
        rt = f"{r['inner_s'] / ref['inner_s']:.2f}" if ref else "-"
        rm = f"{r['peak_gib'] / ref['peak_gib']:.2f}" if ref else "-"
        print(f"{r['task']:8} {r['rows']:>12,} {r['engine']:12} {r['wall_s']:>8.2f} {r['inner_s']:>8.2f} "
              f"{r['peak_gib']:>9.2f} {rt:>9} {rm:>9} {r['load1']:>5.1f}")


if __name__ == "__main__":
    main()
