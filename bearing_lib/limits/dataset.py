"""Load curves of a stepped load test stored as a Parquet dataset, aggregated by an engine.

``load_curve_dataset(path, mixes, engine=...)`` returns the frame
:func:`bearing_lib.limits.curves.load_curve` returns for the loaded trace. Per-step
latency percentiles (and their order-statistic CIs) need every value of a step, and a
step's steadiness test counts requests in flight across the steps of its run, so the unit
of work is a whole **run**: the rows (only the columns a curve reads) are shuffled by
``run_id`` (``Engine.shuffle_apply``: ``dask.dataframe`` on Dask) and each worker runs the
in-memory curve code over its runs. The numbers are therefore the in-memory numbers:
counts exact, percentiles exact with the same linear interpolation. Choices that the
in-memory path makes over the whole trace (the trend metric: TTFT when any request has
one) are made once over the dataset and passed to every partition.

The embedded engine does the same in this process: one run after the other when the files are
split by run (memory: one run's columns), else all requests at once.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.data.engine import EPOCH_FLOOR_S, Engine, EngineRun, ParquetDataset, open_dataset
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, RequestTrace
from bearing_lib.limits.curves import CurveOptions, load_curve, step_windows

CURVE_COLUMNS = ("run_id", "step", "offered_load", "offered_load_unit", "start_s", "end_s", "ttft_ms",
                 "latency_ms", "tpot_ms", "itl_ms", "input_tokens", "output_tokens", "cached_tokens", "status")


def dataset_facts(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
    run = pl.col("run_id").fill_null("run").filter(pl.col("step").is_not_null())
    return [lf.select(
        run.min().alias("run_min"),
        run.max().alias("run_max"),
        pl.len().cast(pl.Int64).alias("n"),
        pl.col("step").is_not_null().sum().cast(pl.Int64).alias("n_step"),
        pl.col("start_s").min().alias("t_min"),
        pl.col("start_s").is_not_null().sum().cast(pl.Int64).alias("n_start"),
        pl.col("ttft_ms").is_not_null().sum().cast(pl.Int64).alias("n_ttft"),
    )]


def stepped_requests(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.with_columns(pl.col("run_id").fill_null("run")).filter(pl.col("step").is_not_null())


def _curve_part(frame: pl.DataFrame, *, time_origin: str, source: str, mixes: MixSpec | None,
                extra_quantiles: tuple[float, ...], options: CurveOptions | None, trend_metric: str) -> pl.DataFrame:
    """One partition's whole runs -> their load-curve rows (the in-memory code)."""
    missing = [pl.lit(None, dtype).alias(c) for c, dtype in REQUEST_SCHEMA.items() if c not in frame.columns]
    frame = frame.with_columns(missing).select(list(REQUEST_SCHEMA))
    trace = RequestTrace(frame, Provenance(source=source, format="parquet-dataset", tool="bearing engine",
                                           sha256="", time_origin=time_origin))  # type: ignore[arg-type]
    win = step_windows(trace, options, trend_metric=trend_metric)
    return load_curve(trace, mixes, extra_quantiles=extra_quantiles, options=options, windows=win)


def run_file_groups(ds: ParquetDataset, tab: pl.DataFrame) -> list[list[str]] | None:
    """Files grouped by run when each file (with steps) holds a single run, else None. ``tab``: the
    facts, one row per file (Dask), or one row for the whole dataset (embedded: the run of each
    file is then read from its ``run_id=`` folder, when there is one)."""
    if tab.height != len(ds.files):
        if "run_id" not in ds.hive_columns:
            return None
        from bearing_lib.data.engine import hive_values

        groups: dict[str, list[str]] = {}
        for f in ds.files:
            groups.setdefault(hive_values(f, ["run_id"]).get("run_id", "run"), []).append(f)
        return list(groups.values())
    groups: dict[str, list[str]] = {}
    for f, lo, hi in zip(ds.files, tab["run_min"].to_list(), tab["run_max"].to_list(), strict=True):
        if lo is None:
            continue  # no stepped rows in this file
        if lo != hi:
            return None
        groups.setdefault(lo, []).append(f)
    return list(groups.values())


def load_curve_dataset(
    source: str | Path | ParquetDataset,
    mixes: MixSpec | None = None,
    *,
    engine: str | Engine = "embedded",
    scheduler: str | None = None,
    extra_quantiles: tuple[float, ...] = (),
    options: CurveOptions | None = None,
) -> tuple[pl.DataFrame, EngineRun]:
    """The load curve of a Parquet dataset and where it was computed (:meth:`Engine.description`).

    Same rows and numbers as ``load_curve(load(path), mixes, ...)`` (see the module
    docstring). ``engine``: ``"embedded"``, ``"dask"`` (``scheduler`` ``tcp://...`` or a
    LocalCluster), or an open :class:`Engine`.
    """
    ds = source if isinstance(source, ParquetDataset) else open_dataset(source)
    eng = engine if isinstance(engine, Engine) else Engine(engine, scheduler=scheduler)
    try:
        tab = eng.map_partitions(ds, CURVE_COLUMNS, dataset_facts)[0]
        facts = tab.drop("t_min", "run_min", "run_max").sum().row(0, named=True)
        t_min = tab["t_min"].min()
        if not facts["n_step"]:
            raise InsufficientDataError(
                f"{ds.path}: the dataset has no load steps (column 'step' is empty): a load curve needs a stepped "
                "load test, not production traffic"
            )
        origin = time_origin_of(ds, facts, t_min)
        fn = functools.partial(_curve_part, time_origin=origin, source=ds.path, mixes=mixes,
                               extra_quantiles=tuple(extra_quantiles), options=options,
                               trend_metric="ttft_ms" if facts["n_ttft"] else "latency_ms")
        groups = run_file_groups(ds, tab)
        if groups is not None:  # every file holds one run (e.g. run_id=... folders): a task per run, no shuffle
            parts = eng.apply_file_groups(ds, CURVE_COLUMNS, groups, stepped_requests, fn)
        else:
            parts = eng.shuffle_apply(ds, CURVE_COLUMNS, stepped_requests, "run_id", fn)
        curve = pl.concat(parts, how="vertical_relaxed").sort("run_id", "step", "mix")
        return curve, eng.description()
    finally:
        if not isinstance(engine, Engine):
            eng.close()




def time_origin_of(ds: ParquetDataset, facts: dict, t_min: float | None) -> str:
    if ds.time_origin in ("epoch", "relative", "none"):
        return ds.time_origin
    if not facts["n_start"]:
        return "none"
    return "epoch" if t_min >= EPOCH_FLOOR_S else "relative"


__all__ = [
    "CURVE_COLUMNS",
    "dataset_facts",
    "load_curve_dataset",
    "run_file_groups",
    "stepped_requests",
    "time_origin_of",
]
