"""Benchmark (not a test): load + validate a large canonical trace through ``bearing_lib.load``.

Generates a synthetic request trace (fixed seed; 10,000,000 requests by default) as
bearing-canonical Parquet and CSV under ``bench/out/`` (gitignored), then times
``bearing_lib.load(path)`` (detection, read, conform, validate) in a fresh child process
per run, reporting the child's wall seconds (interpreter start and imports included),
the load time measured inside the child, and the child's peak RSS from
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (each child is started from its own
measuring wrapper process, so the peak belongs to that one run).

Goal on the project's 2-core machine: Parquet load + validate <= 3 s and <= 2 GiB peak.

Usage::

    python bench/bench_load.py                 # 10 M rows, 3 runs per file
    python bench/bench_load.py --rows 200000   # a quick run
    python bench/bench_load.py --regenerate    # rebuild the files even if present
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SEED = 20261129
GOAL_S = 3.0
GOAL_RSS_GIB = 2.0


def generate(rows: int, out: Path) -> tuple[Path, Path]:
    """Write a synthetic canonical trace (Parquet and CSV); returns their paths."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(SEED)
    t0 = 1_777_593_600.0  # 2026-05-01T00:00:00Z
    span_s = 7 * 86_400.0
    start = t0 + np.sort(rng.uniform(0.0, span_s, rows))
    start = np.round(start, 3)  # ms resolution, like real logs
    inp = np.minimum(rng.lognormal(np.log(700), 1.0, rows).astype(np.int64) + 1, 128_000)
    out_tok = np.minimum(rng.lognormal(np.log(180), 0.9, rows).astype(np.int64) + 1, 8_192)
    cached = (inp * rng.uniform(0, 1, rows) * (rng.uniform(0, 1, rows) < 0.65)).astype(np.int64)
    ttft = np.round(rng.gamma(2.0, 60.0, rows) + inp * 0.02, 3)
    tpot = np.round(rng.gamma(4.0, 5.0, rows), 3)
    latency = np.round(ttft + tpot * (out_tok - 1), 3)
    err = rng.uniform(0, 1, rows) < 0.0103
    models = np.array(["model-a", "model-b", "model-c", "model-d", "model-e"])
    frame = pl.DataFrame(
        {
            "request_id": pl.int_range(rows, eager=True).cast(pl.String).str.zfill(9),
            "start_s": start,
            "end_s": np.round(start + latency / 1000.0, 3),
            "ttft_ms": np.where(err, np.nan, ttft),
            "latency_ms": latency,
            "tpot_ms": tpot,
            "input_tokens": inp,
            "output_tokens": np.where(err, 0, out_tok),
            "cached_tokens": cached,
            "status": np.where(err, "error", "ok"),
            "model": models[rng.integers(0, len(models), rows)],
        }
    ).with_columns(
        pl.col("ttft_ms").fill_nan(None),
        pl.when(pl.col("status") == "error").then(pl.lit("http_500")).alias("error"),
    )
    frame = frame.select("request_id", "start_s", "end_s", "ttft_ms", "latency_ms", "tpot_ms", "input_tokens",
                         "output_tokens", "cached_tokens", "status", "error", "model")
    out.mkdir(parents=True, exist_ok=True)
    pq = out / f"trace_{rows}.parquet"
    csv = out / f"trace_{rows}.csv"
    frame.write_parquet(pq, metadata={"bearing.time_origin": "epoch"})
    frame.write_csv(csv)
    return pq, csv


CHILD = """
import json, sys, time
t = time.perf_counter()
import bearing_lib
t_import = time.perf_counter() - t
t = time.perf_counter()
ds = bearing_lib.load(sys.argv[1])
t_load = time.perf_counter() - t
print(json.dumps({"rows": ds.frame.height, "import_s": t_import, "load_s": t_load,
                  "format": ds.provenance.format, "findings": [f.code for f in ds.provenance.findings]}))
"""

# Reference measured in the same run: polars' own eager read of the same file, nothing else
# (the machine is shared, so absolute seconds drift; the ratio to this reference does not).
REFERENCE = """
import json, sys, time
t = time.perf_counter()
import polars as pl
t_import = time.perf_counter() - t
t = time.perf_counter()
df = pl.read_parquet(sys.argv[1]) if sys.argv[1].endswith(".parquet") else pl.read_csv(sys.argv[1])
t_load = time.perf_counter() - t
print(json.dumps({"rows": df.height, "import_s": t_import, "load_s": t_load, "format": "polars read", "findings": []}))
"""


def measure_once(path: Path, reference: bool = False) -> dict[str, object]:
    """Run in a wrapper process: start one loader child, return its wall, inner times, CPU and peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    code = REFERENCE if reference else CHILD
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"child failed on {path}:\n{proc.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        **json.loads(proc.stdout),
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,  # Linux: KiB
    }


def measure(path: Path, reference: bool = False) -> dict[str, object]:
    """One measured run in a fresh wrapper (so RUSAGE_CHILDREN covers this run only)."""
    proc = subprocess.run(
        [sys.executable, __file__, "_reference" if reference else "_measure", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr or proc.stdout)
    return json.loads(proc.stdout)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("_measure", "_reference"):
        print(json.dumps(measure_once(Path(sys.argv[2]), reference=sys.argv[1] == "_reference")))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="requests in the synthetic trace")
    ap.add_argument("--repeat", type=int, default=3, help="measured runs per file (after one warm-up)")
    ap.add_argument("--regenerate", action="store_true", help="rebuild the files even if present")
    ap.add_argument("--only", choices=("parquet", "csv"), help="time one file kind only")
    args = ap.parse_args()
    pq, csv = OUT / f"trace_{args.rows}.parquet", OUT / f"trace_{args.rows}.csv"
    if args.regenerate or not (pq.exists() and csv.exists()):
        t = time.perf_counter()
        pq, csv = generate(args.rows, OUT)
        print(f"generated {args.rows:,} requests in {time.perf_counter() - t:.1f} s (seed {SEED})")
    print(f"files: {pq.name} {pq.stat().st_size / 2**20:,.0f} MiB, {csv.name} {csv.stat().st_size / 2**20:,.0f} MiB")
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    kinds = [("parquet", pq), ("csv", csv)]
    if args.only:
        kinds = [k for k in kinds if k[0] == args.only]
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for kind, path in kinds:
        measure(path)  # warm-up: page cache, allocator
        runs, refs = [], []
        for _ in range(args.repeat):  # bearing and the bare polars read alternate
            runs.append(measure(path))
            refs.append(measure(path, reference=True))
        for label, rs in (("bearing.load", runs), ("polars read", refs)):
            wall = [r["wall_s"] for r in rs]
            print(
                f"{kind:8s} {label:12s} {rs[0]['rows']:,} rows: wall median {statistics.median(wall):.2f} s "
                f"(min {min(wall):.2f}, max {max(wall):.2f}); "
                f"in-process {statistics.median(r['load_s'] for r in rs):.2f} s; "
                f"import {statistics.median(r['import_s'] for r in rs):.2f} s; "
                f"CPU {statistics.median(r['cpu_s'] for r in rs):.2f} s; "
                f"peak RSS median {statistics.median(r['peak_rss_mib'] for r in rs):,.0f} MiB "
                f"(max {max(r['peak_rss_mib'] for r in rs):,.0f})"
            )
        ratio = statistics.median(a["wall_s"] / b["wall_s"] for a, b in zip(runs, refs, strict=True))
        med_wall = statistics.median(r["wall_s"] for r in runs)
        med_rss = statistics.median(r["peak_rss_mib"] for r in runs)
        line = f"{kind:8s} bearing.load / polars read (wall, per pair): median {ratio:.2f}x"
        if kind == "parquet":
            ok = med_wall <= GOAL_S and med_rss <= GOAL_RSS_GIB * 1024
            line += f"; goal <= {GOAL_S:g} s and <= {GOAL_RSS_GIB:g} GiB: {'met' if ok else 'NOT met'}"
        print(line)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
