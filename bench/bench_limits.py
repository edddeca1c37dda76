"""Speed of limits and of the load-curve aggregation (a script, not a test).

Goals (issue 6):
  limits   : a SYNTHETIC 1M-request, 12-step trace with 3 mixes and 1,000 bootstrap
             resamples within 30 s on 2 cores (``fit_limits`` end to end, incl. phases,
             fits, cost anomaly index and T_recover);
  aggregate: the per-step/per-mix load curve of a SYNTHETIC 10M-request trace within 5 s
             and 2.5 GiB peak RSS (reading the Parquet file + ``load_curve``).

Each measurement runs in a fresh child process; wall time is measured inside the child
around the work, peak RSS is the child's own VmHWM (see ``_vm_hwm_mib``).

Usage::

    PYTHONPATH=. nice python bench/bench_limits.py [--rows-agg 10000000] [--rows-limits 1000000] [--out DIR]
    PYTHONPATH=. nice python bench/bench_limits.py --only-aggregate --repeat 5 --out DIR   # load curve vs (c)
    PYTHONPATH=. nice python bench/bench_limits.py --only-aggregate --kinds aggregate curve_fixed curve_dataset ...
    PYTHONPATH=. nice python bench/bench_limits.py --stats 10000000 --kinds stats limits --repeat 2 --out DIR
    PYTHONPATH=. nice python bench/bench_limits.py --stats 100000000 --kinds stats --repeat 1 --out DIR
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


def _synth(rows: int, steps: int, path: Path, seed: int) -> None:
    """A stepped M/M/1-like trace (mu = 1000/s) with three mixes, written as canonical Parquet."""
    import numpy as np
    import polars as pl

    from bearing_lib.data.trace import conform
    from tests.limits.synth import mm1_frame

    mu = 1000.0
    rates = np.linspace(0.5 * mu, 1.15 * mu, steps)
    step_s = rows / rates.sum()
    df = mm1_frame(rates.tolist(), mu_rps=mu, step_s=step_s, seed=seed,
                   mix_weights={"chat": 0.5, "rag": 0.3, "cached": 0.2})
    conform(df.with_columns(pl.lit("synthetic-model").alias("model"))).write_parquet(path)


def _synth_chunked(rows: int, steps: int, path: Path, seed: int) -> None:
    """The same stepped trace as :func:`_synth`, generated and written one step at a time (memory: one step's
    rows; the queue starts empty at each step instead of carrying over), for traces that do not fit in memory
    (100 M requests)."""
    import numpy as np
    import polars as pl
    import pyarrow.parquet as pq

    from bearing_lib.data.trace import conform
    from tests.limits.synth import mm1_frame

    mu = 1000.0
    rates = np.linspace(0.5 * mu, 1.15 * mu, steps)
    step_s = rows / rates.sum()
    writer = None
    try:
        for k, lam in enumerate(rates):
            df = mm1_frame([float(lam)], mu_rps=mu, step_s=step_s, seed=seed + k,
                           mix_weights={"chat": 0.5, "rag": 0.3, "cached": 0.2}).drop("request_id")
            df = df.with_columns(pl.col("start_s") + k * step_s, pl.col("end_s") + k * step_s,
                                 pl.lit(k, pl.Int64).alias("step"), pl.lit("synthetic-model").alias("model"))
            table = conform(df).to_arrow()
            del df
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema)
            writer.write_table(table, row_group_size=1 << 20)
            del table
    finally:
        if writer is not None:
            writer.close()


CURVE_COLUMNS = ["run_id", "step", "offered_load", "offered_load_unit", "start_s", "end_s", "status", "ttft_ms",
                 "latency_ms", "tpot_ms", "itl_ms", "input_tokens", "output_tokens", "cached_tokens"]


def _child_reference(path: str) -> dict:
    """PERF-BASELINE task (c) in polars lazy (streaming), for a same-machine, same-moment ratio:
    per step x mix (log2 input, log2 output, hit-ratio quarter): n, errors, rates, P50/P95/P99 of
    e2e latency and TTFT over ok requests (linear)."""
    import polars as pl

    from bearing_lib.common.quantiles import quantile_expr

    t0 = time.perf_counter()
    ok = pl.col("status") == "ok"
    lf = pl.scan_parquet(path).with_columns(
        pl.col("input_tokens").log(2).floor().alias("bi"), pl.col("output_tokens").log(2).floor().alias("bo"),
        (pl.col("cached_tokens") / pl.col("input_tokens") * 4).floor().alias("bc"))
    dur = lf.group_by("step").agg((pl.col("start_s").max() - pl.col("start_s").min()).alias("d"))
    out = lf.group_by("step", "bi", "bo", "bc").agg(
        pl.len().alias("n"), (~ok).sum().alias("errors"),
        *[quantile_expr(pl.col(m).filter(ok), q).alias(f"{m}{q}") for m in ("latency_ms", "ttft_ms")
          for q in (0.5, 0.95, 0.99)],
    ).join(dur, on="step").with_columns((pl.col("n") / pl.col("d")).alias("rps")).collect(engine="streaming")
    return {"rows": None, "total_s": time.perf_counter() - t0, "groups": out.height}


def _child_limits(path: str, estimator: str = "pooled") -> dict:
    import polars as pl

    from bearing_lib.data.mixes import Mix, MixSpec
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.limits.fit import fit_limits

    t0 = time.perf_counter()
    frame = pl.read_parquet(path)
    tr = RequestTrace(frame, Provenance(source=path, format="parquet", tool="bench", sha256="", time_origin="relative"))
    t1 = time.perf_counter()
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1024)}),
                    Mix("cached", {"input_tokens": (1024, 4096)}),
                    Mix("long", {"input_tokens": (4096, float("inf"))})))
    res = fit_limits(tr, ["p99(ttft) <= 50ms", "error_rate <= 1%"], mixes=spec, n_boot=1000, seed=0,
                     estimator=estimator)
    t2 = time.perf_counter()
    return {"rows": frame.height, "read_s": t1 - t0, "fit_limits_s": t2 - t1, "total_s": t2 - t0,
            "groups": res.curve.height, "limits": [(m.mix.name, m.q_ult.statement) for m in res.limits]}


def _child_limits_model(path: str) -> dict:
    """``_child_limits`` with ``estimator="model"`` (the per-clause posterior on a grid; ``--only-limits``)."""
    return _child_limits(path, estimator="model")


def _child_stats(path: str, estimator: str = "pooled") -> dict:
    """The same fit as ``_child_limits`` from per-step statistics (``limits.stepstats``: streaming queries over the
    file, no request held): ``fit_limits_dataset(FILE, stats=True)``, the embedded engine."""
    from bearing_lib.data.mixes import Mix, MixSpec
    from bearing_lib.limits.fit import fit_limits_dataset

    t0 = time.perf_counter()
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1024)}),
                    Mix("cached", {"input_tokens": (1024, 4096)}),
                    Mix("long", {"input_tokens": (4096, float("inf"))})))
    res = fit_limits_dataset(path, ["p99(ttft) <= 50ms", "error_rate <= 1%"], mixes=spec, n_boot=1000, seed=0,
                             engine="embedded", stats=True, estimator=estimator)
    t1 = time.perf_counter()
    return {"rows": int(res.curve["n_requests"].sum()), "fit_limits_s": t1 - t0, "total_s": t1 - t0,
            "groups": res.curve.height, "limits": [(m.mix.name, m.q_ult.statement) for m in res.limits]}


def _child_stats_model(path: str) -> dict:
    """``_child_stats`` with ``estimator="model"`` (``--only-limits``)."""
    return _child_stats(path, estimator="model")


def _child_limits_dataset(path: str, estimator: str = "pooled") -> dict:
    """The same fit as ``_child_limits`` on the same requests stored as a ``step=`` partitioned Parquet
    dataset, through the embedded engine (``bearing limits DATASET --engine embedded``)."""
    from bearing_lib.data.mixes import Mix, MixSpec
    from bearing_lib.limits.fit import fit_limits

    t0 = time.perf_counter()
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1024)}),
                    Mix("cached", {"input_tokens": (1024, 4096)}),
                    Mix("long", {"input_tokens": (4096, float("inf"))})))
    res = fit_limits(path, ["p99(ttft) <= 50ms", "error_rate <= 1%"], mixes=spec, n_boot=1000, seed=0,
                     engine="embedded", estimator=estimator)
    return {"rows": int(res.curve["n_requests"].sum()), "fit_limits_s": time.perf_counter() - t0,
            "limits": [(m.mix.name, m.q_ult.statement) for m in res.limits]}


def _child_limits_dataset_model(path: str) -> dict:
    """``_child_limits_dataset`` with ``estimator="model"`` (``--only-limits``)."""
    return _child_limits_dataset(path, estimator="model")


def _child_aggregate(path: str) -> dict:
    import polars as pl

    from bearing_lib.data.mixes import auto_mixes
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform
    from bearing_lib.limits.curves import load_curve

    t0 = time.perf_counter()
    frame = conform(pl.scan_parquet(path).select(CURVE_COLUMNS))  # what a loader would hand over, minus ids/text
    tr = RequestTrace(frame, Provenance(source=path, format="parquet", tool="bench", sha256="", time_origin="relative"))
    t1 = time.perf_counter()
    spec = auto_mixes(frame.select("input_tokens", "output_tokens", "cached_tokens"), min_share=0.1)
    t2 = time.perf_counter()
    curve = load_curve(tr, spec)
    t3 = time.perf_counter()
    return {"rows": frame.height, "read_s": t1 - t0, "auto_mixes_s": t2 - t1, "load_curve_s": t3 - t2,
            "total_s": t3 - t0, "groups": curve.height, "mixes": spec.names()}


FIXED_MIXES = (("short", (0, 1024)), ("cached", (1024, 4096)), ("long", (4096, float("inf"))))
"""Three input-length mixes given up front (as task (c)'s bins are): the load curve without mix discovery."""


def _cpu_s() -> float:
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _child_curve_fixed(path: str) -> dict:
    """Read + ``load_curve`` with :data:`FIXED_MIXES` (no ``auto_mixes``): the work task (c) does."""
    import polars as pl

    from bearing_lib.data.mixes import Mix, MixSpec
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform
    from bearing_lib.limits.curves import load_curve, step_windows

    t0, c0 = time.perf_counter(), _cpu_s()
    frame = conform(pl.scan_parquet(path).select(CURVE_COLUMNS))
    tr = RequestTrace(frame, Provenance(source=path, format="parquet", tool="bench", sha256="", time_origin="relative"))
    t1, c1 = time.perf_counter(), _cpu_s()
    spec = MixSpec(tuple(Mix(n, {"input_tokens": b}) for n, b in FIXED_MIXES))
    win = step_windows(tr)
    t2, c2 = time.perf_counter(), _cpu_s()
    curve = load_curve(tr, spec, windows=win)
    t3, c3 = time.perf_counter(), _cpu_s()
    return {"rows": frame.height, "read_s": t1 - t0, "step_windows_s": t2 - t1, "load_curve_s": t3 - t2,
            "total_s": t3 - t0, "read_cpu_s": c1 - c0, "step_windows_cpu_s": c2 - c1, "aggregate_cpu_s": c3 - c2,
            "groups": curve.height}


def _child_curve_dataset(path: str) -> dict:
    """``load_curve_dataset(FILE, fixed mixes)``, the embedded engine (``bearing limits FILE --engine embedded``'s
    curve): the whole file in one partition, as the dataset path reads it."""
    from bearing_lib.data.mixes import Mix, MixSpec
    from bearing_lib.limits.dataset import load_curve_dataset

    t0 = time.perf_counter()
    spec = MixSpec(tuple(Mix(n, {"input_tokens": b}) for n, b in FIXED_MIXES))
    curve, _ = load_curve_dataset(path, spec, engine="embedded")
    t1 = time.perf_counter()
    import polars as pl

    return {"rows": pl.scan_parquet(path).select(pl.len()).collect().item(), "total_s": t1 - t0,
            "groups": curve.height}


def _vm_hwm_mib() -> float:
    """This process's peak resident set (VmHWM), MiB.

    Not ``ru_maxrss``: Linux carries the high-water mark of the forking parent's memory
    across fork + execve into the child's RUSAGE_SELF, so a child started after the
    parent generated a 10M-row trace would report the parent's peak. VmHWM belongs to the
    child's own address space.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


BEFORE: Path | None = None
"""A folder holding an earlier checkout (``bearing_lib`` and ``bench``, e.g. ``git archive main bearing_lib bench
tests``): the ``before`` child runs its ``aggregate`` child with that code (``--before``)."""


def _run_child(kind: str, path: Path) -> dict:
    root = ROOT
    if kind == "before":
        if BEFORE is None:
            raise SystemExit("the 'before' child needs --before DIR")
        kind, root = "aggregate", BEFORE
    code = (
        f"import json, sys; sys.path.insert(0, {str(root)!r}); import bench.bench_limits as b; "
        f"r = b._child_{kind}({str(path)!r}); r['peak_rss_mib'] = b._vm_hwm_mib(); import resource; "
        f"u = resource.getrusage(resource.RUSAGE_SELF); r['cpu_s'] = u.ru_utime + u.ru_stime; print(json.dumps(r))"
    )
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, cwd=str(root))
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_wall_s"] = time.perf_counter() - t
    return res


def _aggregate_rounds(path: Path, repeat: int, kinds: tuple[str, ...] = ("aggregate", "curve_fixed")) -> None:
    """``repeat`` rounds after a warm-up: bearing's load curve (each of ``kinds``) and polars-lazy task (c), in an
    order that rotates from round to round; each ratio is taken per round (same moment), then the median."""
    import statistics

    _run_child("reference", path)  # warm-up: page cache
    every = ("reference", *kinds)
    rounds = []
    for r in range(repeat):
        order = every[r % len(every):] + every[:r % len(every)]
        pair = {k: _run_child(k, path) for k in order}
        rounds.append(pair)
        b = pair["reference"]
        line = "; ".join(f"{k} {pair[k]['total_s']:.2f} s ({pair[k]['peak_rss_mib']:.0f} MiB, "
                         f"CPU {pair[k]['cpu_s']:.2f} s, x{pair[k]['total_s'] / b['total_s']:.2f} wall, "
                         f"x{pair[k]['cpu_s'] / b['cpu_s']:.2f} CPU)" for k in every)
        print(f"round {r + 1}: {line}; load {os.getloadavg()[0]:.1f}", flush=True)
    med = statistics.median
    print(json.dumps(rounds, indent=1))
    ref = [p["reference"] for p in rounds]
    print(f"\n{ref[0]['groups']} task-(c) groups; reference: polars-lazy task (c) "
          f"{med(x['total_s'] for x in ref):.2f} s "
          f"({min(x['total_s'] for x in ref):.2f}-{max(x['total_s'] for x in ref):.2f}), CPU "
          f"{med(x['cpu_s'] for x in ref):.2f} s, peak {med(x['peak_rss_mib'] for x in ref):.0f} MiB")
    for k in kinds:
        xs = [p[k] for p in rounds]
        parts = ", ".join(f"{f} {med(x[f] for x in xs):.2f}" for f in xs[0] if f.endswith("_s") and f != "total_s")
        print(f"{k}: {xs[0]['rows']:,} rows, {xs[0]['groups']} groups; in-process s median "
              f"{med(x['total_s'] for x in xs):.2f} "
              f"({min(x['total_s'] for x in xs):.2f}-{max(x['total_s'] for x in xs):.2f}) [{parts}]; process CPU "
              f"{med(x['cpu_s'] for x in xs):.2f} s; peak {med(x['peak_rss_mib'] for x in xs):.0f} MiB; "
              "x task (c) per round, median: wall "
              f"{med(p[k]['total_s'] / p['reference']['total_s'] for p in rounds):.2f}, "
              f"CPU {med(p[k]['cpu_s'] / p['reference']['cpu_s'] for p in rounds):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-limits", type=int, default=1_000_000)
    ap.add_argument("--rows-agg", type=int, default=10_000_000)
    ap.add_argument("--out", type=Path, default=None, help="Keep the generated Parquet files here.")
    ap.add_argument("--only-limits", action="store_true",
                    help="Only the limits fit: from one file (in memory; the pooled estimator and the model) and from "
                         "a step-partitioned dataset.")
    ap.add_argument("--only-aggregate", action="store_true",
                    help="Only the load-curve aggregation beside polars-lazy task (c), --repeat rounds alternating.")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of aggregate + reference (--only-aggregate)")
    ap.add_argument("--kinds", nargs="+", default=["aggregate", "curve_fixed"],
                    choices=["aggregate", "curve_fixed", "curve_dataset", "before", "stats", "limits"],
                    help="bearing's children beside task (c) (--only-aggregate): read + auto mixes + load_curve; "
                         "read + load_curve with three given mixes; load_curve_dataset on the file; "
                         "'before': the aggregate child of the checkout in --before DIR")
    ap.add_argument("--before", type=Path, default=None, help="an earlier checkout, for the 'before' child")
    ap.add_argument("--stats", type=int, default=None, metavar="ROWS",
                    help="the limits fit from per-step statistics ('stats') beside task (c) on a ROWS-request, "
                         "12-step trace, --repeat rounds (with --kinds stats [limits]: limits = in memory); "
                         "the file is written one step at a time above 10 M requests")
    args = ap.parse_args()
    global BEFORE
    BEFORE = args.before.resolve() if args.before else None
    tmp = args.out or Path(tempfile.mkdtemp(prefix="bench_limits_"))
    tmp.mkdir(parents=True, exist_ok=True)
    if args.stats:
        ps = tmp / f"limits-{args.stats}.parquet"
        if not ps.exists():
            (_synth if args.stats <= 10_000_000 else _synth_chunked)(args.stats, 12, ps, seed=1)
        _aggregate_rounds(ps, args.repeat, tuple(k for k in args.kinds if k in ("stats", "limits")) or ("stats",))
        return
    p1, p10 = tmp / f"limits-{args.rows_limits}.parquet", tmp / "aggregate.parquet"
    if not p1.exists():
        _synth(args.rows_limits, 12, p1, seed=1)
    if args.only_limits:
        import polars as pl

        ds = tmp / f"limits-{args.rows_limits}-dataset"
        if not ds.exists():
            f = pl.read_parquet(p1)
            f.drop([c for c in f.columns if f[c].null_count() == f.height]).write_parquet(ds, partition_by=["step"])
            del f
        runs = {k: _run_child(k, p) for k, p in (("limits", p1), ("limits_model", p1), ("limits_dataset", ds),
                                                  ("limits_dataset_model", ds), ("stats", p1), ("stats_model", p1),
                                                  ("reference", p1))}
        print(json.dumps(runs, indent=2))
        for name, r in (("in memory (one file)", runs["limits"]), ("in memory, estimator model", runs["limits_model"]),
                        ("dataset, embedded engine", runs["limits_dataset"]),
                        ("dataset, embedded engine, estimator model", runs["limits_dataset_model"]),
                        ("per-step statistics (one file)", runs["stats"]),
                        ("per-step statistics, estimator model", runs["stats_model"])):
            print(f"limits {name}: {r['rows']:,} rows, fit_limits {r['fit_limits_s']:.2f} s, "
                  f"peak {r['peak_rss_mib']:.0f} MiB, process {r['process_wall_s']:.1f} s")
        ref = runs["reference"]
        print(f"reference, polars-lazy task (c) on the same file: {ref['total_s']:.2f} s, "
              f"peak {ref['peak_rss_mib']:.0f} MiB, process {ref['process_wall_s']:.1f} s")
        return
    if not p10.exists():
        _synth(args.rows_agg, 20, p10, seed=2)
    if args.only_aggregate:
        _aggregate_rounds(p10, args.repeat, tuple(args.kinds))
        return
    lim = _run_child("limits", p1)
    agg = _run_child("aggregate", p10)
    ref = _run_child("reference", p10)
    print(json.dumps({"limits": lim, "aggregate": agg, "reference_polars_lazy_task_c": ref}, indent=2))
    print(f"\nlimits   : {lim['rows']:,} rows, fit_limits {lim['fit_limits_s']:.2f} s (goal 30 s), "
          f"peak {lim['peak_rss_mib']:.0f} MiB")
    print(f"aggregate: {agg['rows']:,} rows, read {agg['read_s']:.2f} s + auto mixes {agg['auto_mixes_s']:.2f} s + "
          f"load_curve {agg['load_curve_s']:.2f} s = {agg['total_s']:.2f} s (goal 5 s), "
          f"peak {agg['peak_rss_mib']:.0f} MiB (goal 2560 MiB), {agg['groups']} step x mix groups")
    print(f"reference: PERF-BASELINE task (c), polars lazy streaming from Parquet, same run: {ref['total_s']:.2f} s, "
          f"peak {ref['peak_rss_mib']:.0f} MiB; bearing / reference = {agg['total_s'] / ref['total_s']:.2f}")


if __name__ == "__main__":
    main()
