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

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.data.engine import EPOCH_FLOOR_S, Engine, ParquetDataset, open_dataset
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, RequestTrace
from bearing_lib.limits.curves import CurveOptions, load_curve, step_windows

CURVE_COLUMNS = ("run_id", "step", "offered_load", "offered_load_unit", "start_s", "end_s", "ttft_ms",
                 "latency_ms", "tpot_ms", "itl_ms", "input_tokens", "output_tokens", "cached_tokens", "status")


def _facts(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
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


def _prep(lf: pl.LazyFrame) -> pl.LazyFrame:
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


def _run_groups(ds: ParquetDataset, tab: pl.DataFrame) -> list[list[str]] | None:
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
) -> tuple[pl.DataFrame, dict[str, object]]:
    """The load curve of a Parquet dataset and where it was computed (``Engine.describe()``).

    Same rows and numbers as ``load_curve(load(path), mixes, ...)`` (see the module
    docstring). ``engine``: ``"embedded"``, ``"dask"`` (``scheduler`` ``tcp://...`` or a
    LocalCluster), or an open :class:`Engine`.
    """
    ds = source if isinstance(source, ParquetDataset) else open_dataset(source)
    eng = engine if isinstance(engine, Engine) else Engine(engine, scheduler=scheduler)
    try:
        tab = eng.map_partitions(ds, CURVE_COLUMNS, _facts)[0]
        facts = tab.drop("t_min", "run_min", "run_max").sum().row(0, named=True)
        t_min = tab["t_min"].min()
        if not facts["n_step"]:
            raise InsufficientDataError(
                f"{ds.path}: the dataset has no load steps (column 'step' is empty): a load curve needs a stepped "
                "load test, not production traffic"
            )
        origin = _origin(ds, facts, t_min)
        fn = functools.partial(_curve_part, time_origin=origin, source=ds.path, mixes=mixes,
                               extra_quantiles=tuple(extra_quantiles), options=options,
                               trend_metric="ttft_ms" if facts["n_ttft"] else "latency_ms")
        groups = _run_groups(ds, tab)
        if groups is not None:  # every file holds one run (e.g. run_id=... folders): a task per run, no shuffle
            parts = eng.apply_file_groups(ds, CURVE_COLUMNS, groups, _prep, fn)
        else:
            parts = eng.shuffle_apply(ds, CURVE_COLUMNS, _prep, "run_id", fn)
        curve = pl.concat(parts, how="vertical_relaxed").sort("run_id", "step", "mix")
        return curve, eng.describe()
    finally:
        if not isinstance(engine, Engine):
            eng.close()




# --------------------------------------------------------------------------- limits of a dataset


def _fit_part(frame: pl.DataFrame, *, time_origin: str, source: str, sla: object, spec: MixSpec, n_boot: int,
              seed: int, min_share: float, level: float, options: CurveOptions | None) -> list | None:
    """One partition's whole runs -> one :class:`LimitsResult` per run (``fit_limits`` on the run's requests).

    The run is the smallest unit that needs no request on the client: the bootstrap replicates,
    goodput, MSER warm-ups, ``T_recover``, the cost anomaly index and ``P_critical``'s request-level
    bootstrap all read the run's requests, and ``P_critical`` needs the run's judged steps (recovery
    steps are left out) first. What leaves the task is the run's small result.
    """
    from bearing_lib.limits.fit import fit_limits

    missing = [pl.lit(None, dtype).alias(c) for c, dtype in REQUEST_SCHEMA.items() if c not in frame.columns]
    frame = frame.with_columns(missing).select(list(REQUEST_SCHEMA))
    out = []
    # memory: one run (the usual task) is fitted on the frame itself, not on a partition_by copy of it
    runs = frame["run_id"].unique(maintain_order=True).to_list()
    parts = [(runs[0], frame)] if len(runs) == 1 else [
        (r, p) for (r,), p in frame.partition_by(["run_id"], as_dict=True, maintain_order=True).items()]
    del frame
    for run, part in parts:
        trace = RequestTrace(part, Provenance(source=source, format="parquet-dataset", tool="bearing engine",
                                              sha256="", time_origin=time_origin))  # type: ignore[arg-type]
        out.append((str(run), fit_limits(trace, sla, mixes=spec, n_boot=n_boot, seed=seed, min_share=min_share,
                                         level=level, options=options)))
    return out or None


def _mix_trace(ds: ParquetDataset, origin: str) -> RequestTrace:
    """The stepped requests' run, step and token columns (what ``mixes="auto"`` reads), in this process."""
    cols = ["run_id", "step", "input_tokens", "output_tokens", "cached_tokens"]
    f = _prep(ds.scan(cols)).collect(engine="streaming")
    f = f.with_columns([pl.lit(None, dt).alias(c) for c, dt in REQUEST_SCHEMA.items() if c not in f.columns])
    return RequestTrace(f.select(list(REQUEST_SCHEMA)), Provenance(
        source=ds.path, format="parquet-dataset", tool="bearing engine", sha256="", time_origin=origin))  # type: ignore[arg-type]


def fit_limits_dataset(
    source: str | Path | ParquetDataset,
    sla: object,
    mixes: object = "auto",
    weights: object = None,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    engine: str | Engine = "embedded",
    scheduler: str | None = None,
    min_share: float | None = None,
    level: float = 0.95,
    options: CurveOptions | None = None,
):  # noqa: ANN201 - LimitsResult (imported lazily: fit imports this module)
    """``fit_limits`` over a stepped load test stored as a Parquet dataset, run by an engine.

    The unit of work is a run (its requests are shuffled together, or read from its own
    files when the files are split by run, as for :func:`load_curve_dataset`): each task fits
    its runs with the in-memory code and returns their small results, which are merged
    here (limits, skipped groups, notes, curve; the blended limit over all of them). Every
    run gets its own bootstrap generator seeded with ``seed``, so a run's numbers do not
    depend on the engine, on the partitioning or on the other runs of the dataset (for a
    one-run test they equal ``fit_limits(load(file), ...)`` exactly). ``mixes="auto"`` is
    resolved once, over the token columns of every stepped request, in this process.
    ``conditions.extra["engine"]`` records where the work ran (engine, scheduler,
    workers, partitions).
    """
    from bearing_lib.limits import fit as fit_mod
    from bearing_lib.limits.result import LimitsResult, Source

    sla_obj = fit_mod._as_sla(sla)
    share = fit_mod.DEFAULT_MIN_SHARE if min_share is None else min_share
    if n_boot < 0:
        raise ParameterError(f"n_boot must be ≥ 0, got {n_boot}")
    ds = source if isinstance(source, ParquetDataset) else open_dataset(source)
    eng = engine if isinstance(engine, Engine) else Engine(engine, scheduler=scheduler)
    try:
        tab = eng.map_partitions(ds, CURVE_COLUMNS, _facts)[0]
        facts = tab.drop("t_min", "run_min", "run_max").sum().row(0, named=True)
        if not facts["n_step"]:
            raise InsufficientDataError(
                f"{ds.path}: the dataset has no load steps (column 'step' is empty): limits need a stepped "
                "load test, not production traffic"
            )
        origin = _origin(ds, facts, tab["t_min"].min())
        notes = list(sla_obj.notes())
        spec, mode = fit_mod._resolve_mixes(mixes, [_mix_trace(ds, origin)] if mixes == "auto" else [], share,
                                            sla_obj, notes)
        fn = functools.partial(_fit_part, time_origin=origin, source=ds.path, sla=sla_obj, spec=spec, n_boot=n_boot,
                               seed=seed, min_share=share, level=level, options=options)
        cols = list(ds.columns) + [c for c in ds.hive_columns if c not in ds.columns]
        groups = _run_groups(ds, tab)
        if groups is not None:
            parts = eng.apply_file_groups(ds, cols, groups, _prep, fn)
        else:
            parts = eng.shuffle_apply(ds, cols, _prep, "run_id", fn)
        where = eng.describe()
    finally:
        if not isinstance(engine, Engine):
            eng.close()
    runs = sorted((r for p in parts for r in p), key=lambda x: x[0])
    results = [r for _, r in runs]
    limits = sorted((m for r in results for m in r.mixes), key=lambda m: (m.run_id, m.mix.name))
    for r in results:
        for n in r.notes:
            if n not in notes:
                notes.append(n)
    notes.append(f"fitted one run per task on the {where['engine']} engine; each run's bootstrap has its own "
                 f"generator seeded {seed}")
    cond = results[0].conditions
    cond.sources = [Source(path=ds.path, sha256=None, format="parquet-dataset", tool="bearing engine",
                           kind="requests")]
    cond.model = sorted({m for r in results for m in r.conditions.model})
    cond.offered_load_unit = sorted({u for r in results for u in r.conditions.offered_load_unit})
    cond.mixes = mode
    cond.extra = {**cond.extra, "engine": where}
    blended = fit_mod._blended(limits, weights, level) if weights is not None else None
    from bearing_lib.common.version import __version__

    out = LimitsResult(sla=results[0].sla, conditions=cond, mix_spec=results[0].mix_spec, mixes=limits,
                       blended=blended, skipped=[s for r in results for s in r.skipped], notes=notes,
                       bearing_version=__version__)
    out.attach_curve(pl.concat([r.curve for r in results], how="diagonal_relaxed").sort("run_id", "step", "mix"))
    out.__dict__["sla_spec"] = sla_obj
    return out


def _origin(ds: ParquetDataset, facts: dict, t_min: float | None) -> str:
    if ds.time_origin in ("epoch", "relative", "none"):
        return ds.time_origin
    if not facts["n_start"]:
        return "none"
    return "epoch" if t_min >= EPOCH_FLOOR_S else "relative"


__all__ = ["CURVE_COLUMNS", "fit_limits_dataset", "load_curve_dataset"]
