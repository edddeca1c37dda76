"""The traffic profile of a Parquet dataset, aggregated by an engine (embedded polars-lazy or Dask).

``profile_dataset(path, engine=...)`` computes the same :class:`~bearing_lib.traffic.document.TrafficProfile` as
``profile_traffic(load(path))`` without loading the requests into one frame: every
figure comes from aggregates that add up across partitions. The embedded engine computes
all of them in one streaming read (:mod:`bearing_lib.traffic.onepass`: dense counts with
``numpy.bincount``, the start times kept for the gaps); on Dask they are computed per file by
:class:`bearing_lib.data.engine.Engine`:

* one pass of facts (requests, first and last start, null counts, the input checks);
* one pass of partial counts: requests and token sums per minute and per second, status
  counts per minute (error budget), requests per hour × mix (mix shares), and
  value -> count tables of the token counts (sequence-length quantiles are exact from
  them: a linear quantile needs two order statistics);
* the gaps between consecutive starts (timestamp grid, inter-arrival CV). Embedded: the
  start times alone are sorted in memory (8 bytes per request). Dask: each file's start
  times are sorted by its worker, which returns the file's gap count, sum, mean, sum of
  squared deviations and smallest positive gap; when the files' time ranges do not
  overlap (a dataset partitioned by time) the client adds the gaps across file boundaries
  and combines the blocks (Chan et al.'s pairwise variance combination); otherwise rows
  are first shuffled by start minute and the minutes are the blocks. No worker holds the
  whole column.

Everything after aggregation (rate statistics, slots, MSTL, bursts, targets) is the
in-memory code (``profile.assemble_profile``). Counts are exact on both engines; float
figures that are sums of floats (mean, CV) agree to rounding (tests assert 1e-9).
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from bearing_lib.common.errors import BadValueError, InsufficientDataError, ParameterError
from bearing_lib.common.progress import Progress
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.engine import EPOCH_FLOOR_S, Engine, ParquetDataset, open_dataset
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.provenance import sha256_of
from bearing_lib.data.trace import NON_NEGATIVE, OUTCOME_UNKNOWN, STATUSES
from bearing_lib.traffic.binning import (
    FINE_RESOLUTION_S,
    TimestampResolution,
    bin_range,
    empty_bins,
    finish_bins,
    resolution_from_gaps,
    resolution_of,
)
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.onepass import gap_summary, one_pass
from bearing_lib.traffic.profile import (
    MixShares,
    assemble_profile,
    dispersion_from_gaps,
    hour_basis,
    mix_hour_partials,
    mix_minute_counts,
    shares_from_counts,
)
from bearing_lib.traffic.seqlen import seq_len_from_counts, seq_len_partials
from bearing_lib.traffic.slo_budget import DEFAULT_BAD_STATUSES, budget_from_minutes, no_outcome_statuses
from bearing_lib.traffic.source import EngineRun, ProfileParameters, ProfileSource
from bearing_lib.traffic.targets import DEFAULT_SEED

PROFILE_COLUMNS = ("start_s", "input_tokens", "output_tokens", "cached_tokens", "status", "step")
FORMAT = "parquet-dataset"


def _facts(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
    s = pl.col("start_s")
    tok = [c for c in NON_NEGATIVE if c in ("input_tokens", "output_tokens", "cached_tokens")]
    return [lf.select(
        pl.len().cast(pl.Int64).alias("n"),
        s.min().alias("t_min"),
        s.max().alias("t_max"),
        s.null_count().cast(pl.Int64).alias("null_start_s"),
        pl.col("step").is_not_null().sum().cast(pl.Int64).alias("n_step"),
        *[pl.col(c).null_count().cast(pl.Int64).alias(f"null_{c}") for c in (*tok, "status")],
        *[(pl.col(c) < 0).sum().cast(pl.Int64).alias(f"neg_{c}") for c in tok],
        (pl.col("status").is_not_null() & ~pl.col("status").is_in(STATUSES)).sum().cast(pl.Int64).alias("bad_status"),
        pl.col("status").is_in(no_outcome_statuses(DEFAULT_BAD_STATUSES)).sum().cast(pl.Int64).alias("no_outcome"),
    )]


def _combine_facts(t: pl.DataFrame) -> dict[str, object]:
    sums = {c: int(t[c].sum()) for c in t.columns if c not in ("t_min", "t_max")}
    return {**sums, "t_min": t["t_min"].min(), "t_max": t["t_max"].max()}


def _check(facts: dict[str, object], parts: pl.DataFrame, ds: ParquetDataset, engine: Engine) -> None:
    """The loader's checks that raise, from the facts; the file is named when the engine ran per file."""

    def where(col: str) -> str:  # the file, when the engine ran file by file (Dask)
        i = int(np.argmax(parts[col].to_numpy() > 0))
        if engine.name == "dask" and parts.height == len(ds.files):
            return ds.files[i]
        return ds.path

    if facts["n"] == 0:
        raise BadValueError("the dataset holds no requests", path=ds.path)
    if facts["null_start_s"]:
        raise BadValueError(f"missing request start time ({facts['null_start_s']} row(s) affected)",
                            path=where("null_start_s"), field="start_s")
    for c in ("input_tokens", "output_tokens", "cached_tokens"):
        if facts.get(f"neg_{c}"):
            raise BadValueError(f"expected a non-negative number ({facts[f'neg_{c}']} row(s) affected)",
                                path=where(f"neg_{c}"), field=c)
    if facts["bad_status"]:
        raise BadValueError(f"expected one of {', '.join(STATUSES)} ({facts['bad_status']} row(s) affected)",
                            path=where("bad_status"), field="status")
    if facts["n_step"]:
        raise ParameterError(
            f"{ds.path}: the requests carry load-test steps; a traffic profile describes production traffic. "
            "Use `bearing limits` for load-test results"
        )


def _counts(lf: pl.LazyFrame, *, origin: float, spec: MixSpec, bad_statuses: tuple[str, ...]) -> list[pl.LazyFrame]:
    """Every partial count of the profile, one read: per minute (requests, token sums, requests with a
    status, bad ones), per second (requests), hour x mix, token value counts. Minutes and seconds are
    keyed from ``origin`` over the whole span; the complete ones are picked from the small tables."""
    t = pl.col("start_s") - origin
    status = pl.col("status")
    return [
        lf.group_by((t / 60.0).floor().cast(pl.Int64).alias("k")).agg(
            pl.len().cast(pl.Int64).alias("requests"), pl.col("input_tokens").sum(), pl.col("output_tokens").sum(),
            # cancelled / unknown: neither good nor bad, out of the ratio (as slo_budget.status_minute_partials)
            (status.is_not_null() & ~status.is_in([s for s in OUTCOME_UNKNOWN if s not in bad_statuses]))
            .sum().cast(pl.Int64).alias("n"),
            status.is_in(list(bad_statuses)).sum().cast(pl.Int64).alias("bad"),
        ),
        lf.group_by(t.floor().cast(pl.Int64).alias("k")).agg(pl.len().cast(pl.Int64).alias("requests")),
        *mix_hour_partials(lf, spec, origin),
        *seq_len_partials(lf),
    ]


def _facts_and_counts(lf: pl.LazyFrame, *, origin: float, spec: MixSpec, bad_statuses: tuple[str, ...],
                      gaps: bool) -> list[pl.LazyFrame]:
    """Facts (and on Dask the file's gap summary) and the counts in one read, when the origin is known
    beforehand (an epoch clock: origin 0)."""
    return [*_facts(lf), *(_file_gap_stats(lf) if gaps else []),
            *_counts(lf, origin=origin, spec=spec, bad_statuses=bad_statuses)]


def _in_range(table: pl.DataFrame, k: tuple[int, int]) -> pl.DataFrame:
    return table.filter(pl.col("k").is_between(k[0], k[1] - 1))


# --------------------------------------------------------------------------- gaps between starts


def _bucketed(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.select("start_s", (pl.col("start_s") / 60.0).floor().cast(pl.Int64).alias("_b"))


def _gap_stats(frame: pl.DataFrame) -> pl.DataFrame:
    """Per start minute ``_b`` of one shuffled partition: count, first, last and the gaps' count,
    sum, mean, sum of squared deviations, positive count and smallest positive gap."""
    d = pl.col("start_s").diff().over("_b")
    f = frame.sort("_b", "start_s").with_columns(d.alias("d"))
    pos = pl.col("d").filter(pl.col("d") > 0)
    return f.group_by("_b").agg(
        pl.len().alias("n"), pl.col("start_s").first().alias("first"), pl.col("start_s").last().alias("last"),
        pl.col("d").count().alias("gn"), pl.col("d").sum().alias("gsum"), pl.col("d").mean().alias("gmean"),
        ((pl.col("d") - pl.col("d").mean()) ** 2).sum().alias("gm2"),
        (pl.col("d") > 0).sum().alias("npos"), pos.min().alias("dmin"),
    )


def _distinct(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select("_b", "start_s").unique()


def _file_gap_stats(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
    """The same statistics as :func:`_gap_stats` for one whole file (one row; numpy on its sorted starts)."""
    v = np.sort(lf.select("start_s").collect()["start_s"].to_numpy())
    d = np.diff(v)
    pos = d[d > 0]
    row = {"_b": 0, "n": v.size, "first": v[0] if v.size else None, "last": v[-1] if v.size else None,
           "gn": d.size, "gsum": float(d.sum()), "gmean": float(d.mean()) if d.size else None,
           "gm2": float(((d - d.mean()) ** 2).sum()) if d.size else 0.0, "npos": int(pos.size),
           "dmin": float(pos.min()) if pos.size else None}
    schema = {"_b": pl.Int64, "n": pl.Int64, "first": pl.Float64, "last": pl.Float64, "gn": pl.Int64,
              "gsum": pl.Float64, "gmean": pl.Float64, "gm2": pl.Float64, "npos": pl.Int64, "dmin": pl.Float64}
    return [pl.DataFrame([row], schema=schema).lazy()]


def _facts_and_gaps(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
    """Dask: the facts and the file's gap summary in one read of each file."""
    return _facts(lf) + _file_gap_stats(lf)


def _gaps_dask(engine: Engine, ds: ParquetDataset, n: int,
               per_file: pl.DataFrame) -> tuple[TimestampResolution, int, float | None]:
    """(resolution, number of gaps, inter-arrival CV) from per-block gap statistics (see module docstring).

    Blocks are the files (``per_file``: their summaries) when their time ranges do not overlap (a
    dataset partitioned by time: no shuffle at all), else the start minutes after a shuffle by minute.
    """
    t = per_file.filter(pl.col("n") > 0).sort("first")
    if not _disjoint(t):
        t = pl.concat(engine.shuffle_apply(ds, ["start_s"], _bucketed, "_b", _gap_stats)).sort("_b")

    def distinct() -> np.ndarray:
        vals = pl.concat(engine.shuffle_apply(ds, ["start_s"], _bucketed, "_b", _distinct))
        return vals.sort("_b", "start_s")["start_s"].to_numpy()

    return _combine_blocks(t, n, distinct)


def _disjoint(t: pl.DataFrame) -> bool:
    first, last = t["first"].to_numpy(), t["last"].to_numpy()
    return bool((first[1:] >= last[:-1]).all())


def _combine_blocks(t: pl.DataFrame, n: int, distinct) -> tuple[TimestampResolution, int, float | None]:  # noqa: ANN001
    """Combine per-block gap statistics (blocks in time order, not overlapping); ``distinct()`` gives the
    sorted distinct start times when the grid test needs them."""
    first, last = t["first"].to_numpy(), t["last"].to_numpy()
    bd = first[1:] - last[:-1]  # the gap across each block boundary (consecutive non-empty blocks)
    gn, gmean, gm2 = t["gn"].to_numpy().astype(float), t["gmean"].fill_null(0.0).to_numpy(), t["gm2"].to_numpy()
    n_gaps = int(gn.sum()) + bd.size
    npos = int(t["npos"].sum()) + int((bd > 0).sum())
    dmins = [x for x in (t["dmin"].min(), bd[bd > 0].min() if (bd > 0).any() else None) if x is not None]
    dmin = float(min(dmins)) if dmins else None
    if dmin is not None and dmin >= FINE_RESOLUTION_S and npos >= 10:
        # a coarse grid: the distinct start times are few (at most one per ms); test the grid exactly
        res = resolution_from_gaps(n, np.diff(distinct()))
    elif npos == 0:
        res = resolution_of(n, 1, None, None, None)
    else:
        res = resolution_of(n, npos + 1, dmin, None, None)
    cv = None
    if n_gaps >= 2:
        mean = (float(t["gsum"].sum()) + float(bd.sum())) / n_gaps
        m2 = float(np.sum(gm2 + gn * (gmean - mean) ** 2)) + float(np.sum((bd - mean) ** 2))
        if mean > 0:
            cv = math.sqrt(m2 / (n_gaps - 1)) / mean
    return res, n_gaps, cv


# --------------------------------------------------------------------------- public entry


def _start_sha(ds: ParquetDataset) -> Future | None:
    """The dataset's sha256 in a thread (hashlib releases the GIL), while the data is aggregated."""
    local = not any("://" in f for f in ds.files)
    if not (local and Path(ds.path).exists()):
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bearing-sha256")
    fut = pool.submit(sha256_of, ds.path)
    pool.shutdown(wait=False)
    return fut


def _source(ds: ParquetDataset, n: int, origin: str, engine: Engine, sha: Future | None = None) -> ProfileSource:
    if sha is None:
        sha = _start_sha(ds)
    sha = sha.result() if sha is not None else None
    return ProfileSource(path=ds.path, sha256=sha, format=FORMAT, tool="bearing-canonical Parquet dataset",
                         kind="requests", time_origin=origin, timezone="UTC" if origin == "epoch" else "none",
                         n_rows=n, n_files=len(ds.files), engine=EngineRun.of(engine))


def profile_dataset(
    source: str | Path | ParquetDataset,
    *,
    engine: str | Engine = "embedded",
    scheduler: str | None = None,
    mix_spec: MixSpec | None = None,
    quantile_level: float = 0.99,
    growth: float = 1.0,
    burst_k: float = 3.0,
    burst_merge_gap_bins: int = 0,
    slo_objective: float = 0.999,
    n_boot: int = 1000,
    seed: int = DEFAULT_SEED,
    time_origin: str = "auto",
    progress: Progress | None = None,
) -> TrafficProfile:
    """Profile a production trace stored as a Parquet dataset (a file, a folder, a glob, a URL).

    The same numbers as :func:`bearing_lib.traffic.profile.profile_traffic` on the loaded
    trace (see the module docstring for how each is aggregated). ``engine`` is
    ``"embedded"`` (polars lazy, this process), ``"dask"`` (``scheduler`` ``tcp://...`` or
    a LocalCluster with 2 workers), or an :class:`Engine` (left open for the caller).
    ``time_origin``: ``auto`` reads the files' ``bearing.time_origin`` metadata, else
    epoch when the first start is at least 1e9 s, else relative (the canonical loader's rule).
    The source's ``engine`` entry says where the work ran.
    """
    ds = source if isinstance(source, ParquetDataset) else open_dataset(source)
    eng = engine if isinstance(engine, Engine) else Engine(engine, scheduler=scheduler)
    own = not isinstance(engine, Engine)
    try:
        return _profile(ds, eng, mix_spec or MixSpec.single(), quantile_level, growth, burst_k,
                        burst_merge_gap_bins, slo_objective, n_boot, seed, time_origin, progress)
    finally:
        if own:
            eng.close()


def _origin_kind(t_min: float, ds: ParquetDataset, time_origin: str) -> str:
    """``epoch`` or ``relative``: as asked, else the files' metadata, else the canonical loader's rule."""
    if ds.time_origin == "none":
        raise InsufficientDataError(f"{ds.path}: the dataset keeps no per-request times (time_origin 'none'); "
                                    "a traffic profile needs arrival times")
    if time_origin != "auto":
        return time_origin
    if ds.time_origin in ("epoch", "relative"):
        return ds.time_origin
    return "epoch" if t_min >= EPOCH_FLOOR_S else "relative"


def _origin(facts: dict[str, object], ds: ParquetDataset, time_origin: str) -> float:
    """The origin of the bin keys: 0 on an epoch clock, else the first start."""
    t_min = float(facts["t_min"])
    return 0.0 if _origin_kind(t_min, ds, time_origin) == "epoch" else t_min


def _profile(ds: ParquetDataset, eng: Engine, spec: MixSpec, quantile_level: float, growth: float, burst_k: float,
             merge_gap: int, slo_objective: float, n_boot: int, seed: int, time_origin: str,
             progress: Progress | None = None) -> TrafficProfile:
    params = ProfileParameters(quantile=quantile_level, growth=growth, burst_k=burst_k,
                               burst_merge_gap_bins=merge_gap, slo_objective=slo_objective, n_boot=n_boot, seed=seed)
    if not (0 < slo_objective < 1):
        raise ParameterError(f"objective must be in (0, 1), e.g. 0.999; got {slo_objective!r}")
    if time_origin not in ("auto", "epoch", "relative"):
        raise ParameterError(f"time_origin must be auto, epoch or relative for a profile, got {time_origin!r}")
    bad = tuple(DEFAULT_BAD_STATUSES)
    dask = eng.name == "dask"
    counts = None
    known_epoch = time_origin == "epoch" or (time_origin == "auto" and ds.time_origin == "epoch")
    onep = None
    sha = _start_sha(ds)
    if not dask:
        # embedded: one streaming read for everything (traffic/onepass.py); on a clock that is not known to be
        # epoch, the first start (the origin of the bins) comes from a facts pass first
        fact_parts = None if known_epoch else eng.map_partitions(ds, PROFILE_COLUMNS, _facts)[0]
        if fact_parts is not None:
            _check(_combine_facts(fact_parts), fact_parts, ds, eng)
        origin0 = 0.0 if known_epoch else _origin(_combine_facts(fact_parts), ds, time_origin)
        eng.partitions = len(ds.files)
        if progress is not None:
            progress.start(ds.n_rows())
        onep = one_pass(ds, list(PROFILE_COLUMNS), origin=origin0, spec=spec, bad_statuses=bad,
                        progress=None if progress is None else progress.advance)
        fact_parts = onep.facts
        counts = [onep.minute, onep.second, onep.mix_hour, *onep.seq]
        gap_parts = None
    elif known_epoch:
        # the clock is known: one read for the facts, the counts (and on Dask the gap summaries)
        fn = functools.partial(_facts_and_counts, origin=0.0, spec=spec, bad_statuses=bad, gaps=dask)
        fact_parts, *rest = eng.map_partitions(ds, PROFILE_COLUMNS, fn)
        gap_parts, counts = (rest[0], rest[1:]) if dask else (None, rest)
    else:
        fact_parts, gap_parts = eng.map_partitions(ds, PROFILE_COLUMNS, _facts_and_gaps)
    facts = _combine_facts(fact_parts)
    _check(facts, fact_parts, ds, eng)
    n, t_min, t_max = int(facts["n"]), float(facts["t_min"]), float(facts["t_max"])
    origin_kind = _origin_kind(t_min, ds, time_origin)
    aligned = origin_kind == "epoch"
    origin = 0.0 if aligned else t_min
    if onep is not None:
        res, n_gaps, cv = gap_summary(onep.starts, n)
    else:
        res, n_gaps, cv = _gaps_dask(eng, ds, n, gap_parts)
    if not res.allows_bin(60.0):
        raise ParameterError(f"{ds.path}: timestamps move in {res.quantum_s:.3f} s steps; per-minute rates would be "
                             "artefacts of that grid")
    k60 = bin_range(t_min, t_max, origin, 60.0)
    if k60[1] <= k60[0]:
        raise InsufficientDataError(f"{ds.path}: the trace spans {t_max - t_min:.1f} s and holds no complete minute; "
                                    "a traffic profile needs at least one")
    k1 = bin_range(t_min, t_max, origin, 1.0) if res.allows_bin(1.0) else None
    k0 = math.floor((t_min - origin) / 60.0)
    if counts is None:
        counts = eng.map_partitions(ds, PROFILE_COLUMNS,
                                    functools.partial(_counts, origin=origin, spec=spec, bad_statuses=bad))
    minute_p, second_p, mix_p, *seq_p = counts
    minute_p = minute_p.group_by("k").agg(pl.col("requests", "input_tokens", "output_tokens", "n", "bad").sum())
    absent = (facts["null_input_tokens"] == n, facts["null_output_tokens"] == n)
    minutes = finish_bins(_in_range(minute_p, k60).select("k", "requests", "input_tokens", "output_tokens"),
                          origin, 60.0, *k60, absent).rename({"bin_start_s": "minute_start_s"})
    status_p = minute_p.filter(pl.col("n") > 0).select((pl.col("k") - k0).alias("k"), "n", "bad")
    if k1 is None:
        seconds = None
    elif k1[1] <= k1[0]:
        seconds = empty_bins()
    else:
        sec = _in_range(second_p, k1).with_columns(pl.lit(0, pl.Int64).alias("input_tokens"),
                                                   pl.lit(0, pl.Int64).alias("output_tokens"))
        seconds = finish_bins(sec, origin, 1.0, *k1, (True, True))  # per-second rates read requests only
    c = minutes["requests"].to_numpy()
    disp = dispersion_from_gaps(c, res, n_gaps, cv)
    notes = []
    needed = {d for m in spec.mixes for d in m.bounds}
    mixes: object = None
    for dim in sorted(needed):
        col = "input_tokens" if dim == "cache_hit_ratio" else dim
        nulls = facts.get(f"null_{col}", 0)
        if nulls == n:
            mixes = Unavailable(f"mix bounds use {dim}, but the trace has no {col}")
            break
        if nulls:
            notes.append(f"{nulls} request(s) have no {col} and fall outside mixes bounded on it")
    if "cache_hit_ratio" in needed and facts["null_cached_tokens"] == n:
        notes.append("the trace has no cached_tokens: cache-hit ratio taken as 0 for every request")
    if mixes is None:
        mixes = shares_from_counts(spec, mix_p, origin, hour_basis(aligned), notes)
    if facts["null_status"] == n:
        slo: object = Unavailable(
            f"{ds.path} records no request outcome (no status column), so no error budget can be computed")
    else:
        slo = budget_from_minutes(status_p, origin=origin, k0=k0, t_last=t_max, n_no_status=int(facts["null_status"]),
                                  objective=slo_objective)
        n_out = int(facts.get("no_outcome", 0))
        if n_out:  # the in-memory slo_budget's note, word for word
            slo.notes.append(f"{n_out} request(s) have no outcome (status {' / '.join(no_outcome_statuses(bad))}): "
                             "neither good nor bad, left out")
    try:
        seq: object = seq_len_from_counts(seq_p, n, source=ds.path)
    except InsufficientDataError as exc:
        seq = Unavailable(str(exc))
    if progress is not None:
        progress.step("slots, MSTL, bursts, bootstrap targets")
    mix_minutes = None
    if isinstance(mixes, MixShares) and len(mixes.overall) > 1:  # one more read, only with several mixes
        mix_minutes = eng.map_partitions(ds, PROFILE_COLUMNS, functools.partial(_mix_minutes, origin=origin,
                                                                                  spec=spec))[0]
    return assemble_profile(
        source=_source(ds, n, origin_kind, eng, sha), time_origin=origin_kind, t_min=t_min, t_max=t_max, resolution=res,
        minutes=minutes, seconds=seconds, dispersion=disp, mixes=mixes, slo=slo, seq_len=seq, params=params,
        quantile_level=quantile_level, growth=growth, burst_k=burst_k, burst_merge_gap_bins=merge_gap,
        n_boot=n_boot, seed=seed, mix_minutes=mix_minutes,
    )


def _mix_minutes(lf: pl.LazyFrame, *, origin: float, spec: MixSpec) -> list[pl.LazyFrame]:
    """Requests per (minute, mix): the partial of the per-mix peaks."""
    return [mix_minute_counts(lf, spec, origin)]


__all__ = ["PROFILE_COLUMNS", "profile_dataset"]
