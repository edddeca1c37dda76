"""Per-step sufficient statistics of a stepped load test, computed in a streaming pass (issue #27 item 3).

``fit_limits`` on requests held in memory keeps every request of a run (10 M requests: 4 GiB).
Everything the judged steps and the pooled estimate read is a function of a few counts per
run × step × mix and per **time block** of the step's steady window:

* **counts** (exact): requests, successes, failures, requests of known outcome, per SLA clause
  the requests counting against it and those that can (``limits.pooled.bad_expr``), goodput
  hits, output tokens of successes, and per latency metric the count, sum and maximum of the
  successes' values;
* **latency histograms** per metric: counts in log-spaced bins of relative width
  :data:`REL_BIN` (0.5 %) above :data:`V0_MS`. A quantile read off them (an order statistic is
  represented by its bin's geometric midpoint) is within :data:`TOLERANCE` (0.25 %) of the exact
  one, relative; zero and negative values are counted as 0 exactly.

Both tables are additive over requests, so they are computed per file and summed (the Dask
engine maps the same queries over its files, ``Engine.map_partitions``), and memory grows with
groups × blocks × occupied bins, not with requests. Each table is one streaming polars query
over the scan; every group is keyed by a single integer (run × step × mix numbered, then block,
metric and bin) so the hash tables stay small.

The steady windows (``limits.curves.step_windows``), the completions inside them, Little's law
and the steady-window filter are the in-memory code, run over the lazy scan with polars'
streaming engine (:class:`ScanTrace`), so the windows are the same.

The block bootstrap (``limits.bootstrap``) reads per-block counts: a replicate's rates are
``W @ hits / W @ n`` exactly as on the requests, and its quantile is the one of the histogram
``W @ per-block histogram`` (within :data:`TOLERANCE`). Blocks here are :data:`N_BLOCKS` equal
time spans of each step's steady window; the in-memory path takes ``n / b`` blocks for the
Politis–White block length ``b`` of the step's latency series, clipped to [10, 50], which is
50 for any step holding 50 · b requests or more (every step of the 10 M-request benchmark).
Requests without start times fall in blocks by row number modulo :data:`N_BLOCKS` (an i.i.d.
bootstrap; the in-memory path cuts consecutive rows), said in the fit's notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.data.mixes import OTHER, MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.limits import bootstrap as bs
from bearing_lib.limits import evidence as ev_mod
from bearing_lib.limits import pooled
from bearing_lib.limits.curves import (
    METRICS,
    QUANTILES,
    completions_in_window,
    curve_columns,
    littles_law,
    order_stat_ranks,
    qname,
    step_flags,
    step_rates,
    step_windows,
    with_little,
)
from bearing_lib.limits.replicates import StepReplicates, TraceReplicates
from bearing_lib.limits.sla import FAILED_EXPR, KNOWN_EXPR, OK_EXPR, SLA

REL_BIN = 0.005
"""Relative width of a latency bin: bin ``k ≥ 1`` holds ``[V0·(1+REL_BIN)^(k−1), V0·(1+REL_BIN)^k)``."""
V0_MS = 1e-6
"""Lower edge of the first positive bin (1 ns): smaller positive values are counted in bin 1."""
N_BINS = 8192
"""Bins per metric (bin 0 holds values ≤ 0): the last bin starts at ~5.6e11 ms."""
TOLERANCE = math.sqrt(1.0 + REL_BIN) - 1.0
"""Largest relative difference between a quantile (or CI bound) read off the histogram and the exact one:
each order statistic is replaced by its bin's geometric midpoint (≈ 0.2497 %)."""
N_BLOCKS = 50
"""Time blocks per step for the block bootstrap (the in-memory path's ``MAX_BLOCKS``)."""
STATS_COLUMNS = ("run_id", "step", "offered_load", "offered_load_unit", "start_s", "end_s", "ttft_ms",
                 "latency_ms", "tpot_ms", "itl_ms", "input_tokens", "output_tokens", "cached_tokens", "status")
"""The request columns the statistics read."""

_LOG_R = math.log1p(REL_BIN)


def bin_expr(value: pl.Expr) -> pl.Expr:
    """The histogram bin (Int64) of each value: 0 for ≤ 0, ``1 + floor(log(v / V0) / log(1 + REL_BIN))``
    (clipped to [1, N_BINS − 1]) above; null stays null (and NaN is null)."""
    pos = ((value / V0_MS).log() / _LOG_R).floor().cast(pl.Int64).clip(0, N_BINS - 2) + 1
    return pl.when(value.is_nan()).then(None).when(value <= 0).then(0).otherwise(pos)


def bin_value(bins: np.ndarray) -> np.ndarray:
    """The value representing each bin: its geometric midpoint (0 for bin 0)."""
    b = np.asarray(bins, dtype=np.float64)
    return np.where(b <= 0, 0.0, V0_MS * np.exp((b - 0.5) * _LOG_R))


@dataclass
class StepStats:
    """The statistics of one stepped load test (or of the runs of one partition).

    ``groups``: run_id, step, mix and its number ``_g``; ``counts``: per ``_g`` and ``_block`` the exact
    counts (``n``, ``n_ok``, ``n_failed``, ``n_known``, ``out_tok`` and ``out_tok_n`` (the successful requests with
    a token count), ``lat_sum``, ``lat_n``, per clause ``i``
    ``_pk_i`` / ``_pn_i`` / ``_gk_i`` / ``_gn_i``, per metric ``{m}_n`` / ``{m}_sum`` / ``{m}_max``);
    ``hist``: per ``_g``, ``_block`` (block 0 only for a metric no percentile clause reads), metric index ``_m`` (into
    :data:`METRICS`) and ``_bin``: ``count``.
    ``windows``: the steps' steady windows (``step_windows``).
    """

    groups: pl.DataFrame
    counts: pl.DataFrame
    hist: pl.DataFrame
    windows: pl.DataFrame
    n_blocks: int
    clauses: int


# ------------------------------------------------------------------------------------------------ lazy trace


class _Column:
    def __init__(self, nulls: int) -> None:
        self._nulls = nulls

    def null_count(self) -> int:
        return self._nulls


_NULL_COUNTED = ("step", "start_s", "end_s", "ttft_ms", "latency_ms")
"""The columns whose null counts the window code reads (one streaming query of numeric columns; any other column
is counted when asked for)."""


class _ScanFrame:
    """What ``step_windows``, ``completions_in_window``, ``littles_law`` and ``check_sla_against`` read of a
    trace's frame, over a lazy scan: ``lazy()``, ``columns``, ``height`` and a column's ``null_count()``."""

    def __init__(self, lf: pl.LazyFrame) -> None:
        self._lf = lf
        self.columns = lf.collect_schema().names()
        self._nulls: dict[str, int] = {}
        self.height = self._count([c for c in _NULL_COUNTED if c in self.columns])

    def _count(self, cols: list[str]) -> int:
        facts = self._lf.select(pl.len().alias("_n"), *[pl.col(c).null_count().alias(c) for c in cols]).collect(
            engine="streaming").row(0, named=True)
        self._nulls.update({c: int(facts[c]) for c in cols})
        return int(facts["_n"])

    def lazy(self) -> pl.LazyFrame:
        return self._lf

    def __getitem__(self, column: str) -> _Column:
        if column not in self._nulls:
            self._count([column])
        return _Column(self._nulls[column])


def scan_trace(lf: pl.LazyFrame, source: str, time_origin: str) -> RequestTrace:
    """A :class:`RequestTrace` whose frame is a lazy scan (:class:`_ScanFrame`): what the window code reads."""
    return RequestTrace(_ScanFrame(lf), Provenance(source=source, format="parquet-dataset",  # type: ignore[arg-type]
                                                   tool="bearing engine", sha256="", time_origin=time_origin))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ the pass


def step_groups(windows: pl.DataFrame, mix_names: Sequence[str]) -> pl.DataFrame:
    """Every run × step × mix (the mixes and ``other``), numbered ``_g``: as ``limits.curves._aggregate``."""
    return windows.select("run_id", "step").join(
        pl.DataFrame({"mix": list(dict.fromkeys([*mix_names, OTHER]))}), how="cross").with_row_index("_g")


def _steady_blocks(lf: pl.LazyFrame, windows: pl.DataFrame, spec: MixSpec, groups: pl.DataFrame,
                   n_blocks: int) -> pl.LazyFrame:
    """The requests inside each step's steady window (``limits.curves.steady_requests``' filter) with their group
    number ``_g`` and time block ``_block`` (``limits.bootstrap.time_blocks``)."""
    w = windows.lazy().select("run_id", "step", pl.col("t_start_s").alias("_ws"), pl.col("t_end_s").alias("_we"),
                              pl.col("has_times").alias("_wt"))
    lf = lf.with_row_index("_row").with_columns(pl.col("run_id").fill_null("run")).filter(
        pl.col("step").is_not_null()).join(w, on=["run_id", "step"], how="inner").filter(
        ~pl.col("_wt") | pl.col("start_s").is_between(pl.col("_ws"), pl.col("_we")))
    lf = spec.assign(lf).join(groups.lazy(), on=["run_id", "step", "mix"], how="inner")
    span = pl.col("_we") - pl.col("_ws")
    timed = ((pl.col("start_s") - pl.col("_ws")) / span * n_blocks).floor().cast(pl.Int64).clip(0, n_blocks - 1)
    block = (pl.when(pl.col("_wt") & (span > 0)).then(timed).when(pl.col("_wt")).then(0)
             .otherwise((pl.col("_row") % n_blocks).cast(pl.Int64)))
    return lf.with_columns(block.alias("_block"))


def _count_query(steady: pl.LazyFrame, sla: SLA, n_blocks: int) -> pl.LazyFrame:
    aggs = [pl.len().cast(pl.Int64).alias("n"), OK_EXPR.cast(pl.Int64).sum().alias("n_ok"),
            FAILED_EXPR.cast(pl.Int64).sum().alias("n_failed"), KNOWN_EXPR.cast(pl.Int64).sum().alias("n_known"),
            pl.when(OK_EXPR).then(pl.col("output_tokens")).sum().alias("out_tok"),
            pl.when(OK_EXPR).then(pl.col("output_tokens")).count().cast(pl.Int64).alias("out_tok_n"),
            pl.col("latency_ms").sum().alias("lat_sum"), pl.col("latency_ms").count().cast(pl.Int64).alias("lat_n")]
    for i, c in enumerate(sla.clauses):
        bad, elig = pooled.bad_expr(c)
        aggs += [bad.cast(pl.Int64).sum().alias(f"_pk_{i}"), elig.cast(pl.Int64).sum().alias(f"_pn_{i}")]
        if c.kind == "goodput":
            good = OK_EXPR
            for b in c.bounds or ():
                good = good & b.holds()
            good = good.filter(KNOWN_EXPR)
            aggs += [good.cast(pl.Int64).sum().alias(f"_gk_{i}"), good.count().cast(pl.Int64).alias(f"_gn_{i}")]
    for m in METRICS:
        v = pl.when(OK_EXPR).then(pl.col(m))
        aggs += [v.count().cast(pl.Int64).alias(f"{m}_n"), v.sum().alias(f"{m}_sum"), v.max().alias(f"{m}_max")]
    key = (pl.col("_g").cast(pl.Int64) * n_blocks + pl.col("_block")).alias("_key")
    return steady.group_by(key).agg(aggs)


def _hist_query(steady: pl.LazyFrame, n_blocks: int, boot_metrics: set[str]) -> pl.LazyFrame:
    """Histogram counts by one integer code; per block only for the metrics the bootstrap reads (the SLA's
    percentile clauses), the other metrics' blocks merged into block 0 (the curve reads their sums)."""
    g = pl.col("_g").cast(pl.Int64) * n_blocks
    codes = [(((g + (pl.col("_block") if m in boot_metrics else 0)) * len(METRICS) + i) * N_BINS
              + bin_expr(pl.when(OK_EXPR).then(pl.col(m)))).alias(f"_c{i}") for i, m in enumerate(METRICS)]
    long = steady.select(codes).unpivot(on=[f"_c{i}" for i in range(len(METRICS))], value_name="_code")
    return long.select("_code").drop_nulls().group_by("_code").agg(pl.len().cast(pl.Int64).alias("count"))


def stat_queries(lf: pl.LazyFrame, *, windows: pl.DataFrame, spec: MixSpec, sla: SLA, groups: pl.DataFrame,
                 n_blocks: int = N_BLOCKS) -> list[pl.LazyFrame]:
    """The two additive partial tables of a lazy frame of requests (one file, or all): counts by ``_key`` (group ×
    block) and histogram counts by ``_code`` (group × block × metric × bin). Picklable through ``functools.partial``
    (``Engine.map_partitions``)."""
    steady = _steady_blocks(lf, windows, spec, groups, n_blocks)
    boot = {c.metric for c in sla.clauses if c.kind == "percentile"}
    return [_count_query(steady, sla, n_blocks), _hist_query(steady, n_blocks, boot)]


def combine(parts: Sequence[pl.DataFrame], sla: SLA, groups: pl.DataFrame, windows: pl.DataFrame,
            n_blocks: int = N_BLOCKS) -> StepStats:
    """Partial tables (concatenated over partitions) summed into :class:`StepStats` (sums of counts and of
    values, maxima of maxima: exact for counts)."""
    counts_p, hist_p = parts
    sums = [c for c in counts_p.columns if c != "_key" and not c.endswith("_max")]
    counts = counts_p.group_by("_key").agg([pl.col(c).sum() for c in sums]
                                           + [pl.col(c).max() for c in counts_p.columns if c.endswith("_max")])
    counts = counts.with_columns((pl.col("_key") // n_blocks).alias("_g"),
                                 (pl.col("_key") % n_blocks).alias("_block")).drop("_key").sort("_g", "_block")
    hist = hist_p.group_by("_code").agg(pl.col("count").sum())
    code = pl.col("_code")
    hist = hist.select(
        (code // (N_BINS * len(METRICS) * n_blocks)).alias("_g"),
        (code // (N_BINS * len(METRICS)) % n_blocks).alias("_block"),
        (code // N_BINS % len(METRICS)).alias("_m"),
        (code % N_BINS).alias("_bin"), "count")
    return StepStats(groups=groups, counts=counts, hist=hist, windows=windows, n_blocks=n_blocks,
                     clauses=len(sla.clauses))


def step_stats(lf: pl.LazyFrame, windows: pl.DataFrame, spec: MixSpec, sla: SLA, *,
               n_blocks: int = N_BLOCKS) -> StepStats:
    """The statistics of a lazy frame of canonical requests, in this process (streaming)."""
    groups = step_groups(windows, spec.names())
    parts = [q.collect(engine="streaming") for q in stat_queries(lf, windows=windows, spec=spec, sla=sla,
                                                                   groups=groups, n_blocks=n_blocks)]
    return combine(parts, sla, groups, windows, n_blocks)


# ------------------------------------------------------------------------------------------------ reading


def hist_quantile(bins: np.ndarray, counts: np.ndarray, q: float) -> float | None:
    """The linear ``q`` quantile (``(n − 1) q``, numpy's default) of the values of a histogram, each order
    statistic at its bin's midpoint; None without values."""
    n = int(counts.sum())
    if n == 0:
        return None
    cum = np.cumsum(counts)
    h = (n - 1) * q
    j = math.floor(h)
    vals = bin_value(bins)
    xj = vals[np.searchsorted(cum, j + 1)]
    xj1 = vals[np.searchsorted(cum, min(j + 2, n))]
    return float(xj + (h - j) * (xj1 - xj))


def _order_stat(vals: np.ndarray, cum: np.ndarray, rank: int) -> float:
    """The ``rank``-th (1-based) smallest value of a histogram."""
    return float(vals[np.searchsorted(cum, rank)])


def _metric_columns(stats: StepStats, qs: dict[str, float]) -> pl.DataFrame:
    """Per ``_g``: each metric's mean, max and quantiles with their order-statistic CIs (as
    ``limits.curves._metric_quantiles``: a quantile only where both CI ranks exist)."""
    tot = stats.counts.group_by("_g").agg([pl.col(f"{m}_{s}").sum() for m in METRICS for s in ("n", "sum")]
                                          + [pl.col(f"{m}_max").max() for m in METRICS])
    hist = stats.hist.group_by("_g", "_m", "_bin").agg(pl.col("count").sum()).sort("_g", "_m", "_bin")
    per = {(g, m): (b, c) for (g, m), b, c in (
        ((k[0], k[1]), f["_bin"].to_numpy(), f["count"].to_numpy())
        for k, f in hist.partition_by(["_g", "_m"], as_dict=True, maintain_order=True).items())}
    rows = []
    for r in tot.iter_rows(named=True):
        row: dict[str, float | int | None] = {"_g": r["_g"]}  # one frame row (pl.DataFrame(rows) below)
        for mi, m in enumerate(METRICS):
            n_m = int(r[f"{m}_n"] or 0)
            row[f"{m}_max"] = r[f"{m}_max"] if n_m else None
            row[f"{m}_mean"] = r[f"{m}_sum"] / n_m if n_m else None
            b, c = per.get((r["_g"], mi), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
            cum, vals = np.cumsum(c), bin_value(b)
            for name, q in qs.items():
                lo_r, hi_r = (int(x) for x in order_stat_ranks(n_m, q))
                supported = n_m > 0 and hi_r <= n_m and lo_r >= 1
                row[f"{m}_{name}"] = hist_quantile(b, c, q) if supported else None
                row[f"{m}_{name}_ci95_lo"] = _order_stat(vals, cum, lo_r) if n_m and 1 <= lo_r <= n_m else None
                row[f"{m}_{name}_ci95_hi"] = _order_stat(vals, cum, hi_r) if supported else None
        rows.append(row)
    cols = ["_g"] + [f"{m}_{s}" for m in METRICS for s in ("max", "mean")] + [
        f"{m}_{name}{s}" for m in METRICS for name in qs for s in ("", "_ci95_lo", "_ci95_hi")]
    schema = {c: (pl.UInt32 if c == "_g" else pl.Float64) for c in cols}
    return pl.DataFrame(rows, schema=schema)


def curve_from_stats(stats: StepStats, *, extra_quantiles: tuple[float, ...] = (),
                     done: pl.DataFrame | None = None, little: pl.DataFrame | None = None) -> pl.DataFrame:
    """The load-curve frame (``limits.curves.load_curve``'s columns) of the statistics.

    Counts, error rates and their Wilson CIs, throughputs and flags are the in-memory path's exactly (the same
    expressions as ``limits.curves._aggregate``, on the summed counts); means are sums over counts (float sums
    in another order: equal within 1e-12 relative); quantiles and their CI bounds within :data:`TOLERANCE`.
    """
    qs = dict(QUANTILES)
    for q in extra_quantiles:
        qs.setdefault(qname(q), q)
    win = stats.windows
    g = stats.counts.group_by("_g").agg(
        pl.col("n").sum().alias("n_requests"), pl.col("n_ok").sum(), pl.col("n_failed").sum().alias("n_errors"),
        # no successful request with a token count: unknown, as in memory (polars' sum of nulls is 0)
        pl.when(pl.col("out_tok_n").sum() > 0).then(pl.col("out_tok").sum()).alias("_out_tok"),
        (pl.col("lat_sum").sum() / pl.col("lat_n").sum() / 1000.0).alias("_mean_lat_s"))
    g = step_rates(stats.groups.join(g, on="_g"), win, done)
    g = g.join(_metric_columns(stats, qs), on="_g", how="left")
    g = step_flags(g, qs)
    curve = g.select(curve_columns(qs)).sort("run_id", "step", "mix")
    return with_little(curve, little)


def sla_columns(stats: StepStats, sla: SLA) -> pl.DataFrame:
    """Per run, step and mix: the pooled counts ``_pk_i`` / ``_pn_i`` (``limits.pooled.count_columns``) and each
    goodput clause's observed share ``_goodput_i`` (``fit._goodput_columns``): exact."""
    aggs = []
    for i, c in enumerate(sla.clauses):
        aggs += [pl.col(f"_pk_{i}").sum(), pl.col(f"_pn_{i}").sum()]
        if c.kind == "goodput":
            aggs += [pl.col(f"_gk_{i}").sum(), pl.col(f"_gn_{i}").sum()]
    out = stats.counts.group_by("_g").agg(aggs)
    gp = [pl.when(pl.col(f"_gn_{i}") > 0).then(pl.col(f"_gk_{i}") / pl.col(f"_gn_{i}")).alias(f"_goodput_{i}")
          for i, c in enumerate(sla.clauses) if c.kind == "goodput"]
    out = out.with_columns(gp).drop([c for c in out.columns if c.startswith(("_gk_", "_gn_"))])
    return stats.groups.join(out, on="_g").drop("_g")


def replicates_from_stats(stats: StepStats, sla: SLA, n_boot: int, rng: np.random.Generator | int,
                          ) -> TraceReplicates:
    """Every (run, mix) group's replicates per step and clause as ``resample.trace_replicates`` returns them, from the
    per-block counts and histograms: one block-weight draw per step (steps in run, step order), shared by its
    mixes and clauses; rates exact given the blocks, quantiles within :data:`TOLERANCE`. ``rng`` an integer: each
    run draws from its own generator seeded with it (as ``fit_limits_dataset`` fits each run)."""
    nb = stats.n_blocks
    counts = stats.counts.join(stats.groups, on="_g")
    hist = stats.hist.join(stats.groups.select("_g"), on="_g")
    hist_by = {k[0]: f for k, f in hist.partition_by(["_g"], as_dict=True).items()}
    out: list[tuple[object, object, int, StepReplicates]] = []

    def per_block(f: pl.DataFrame, col: str) -> np.ndarray:
        v = np.zeros(nb)
        np.add.at(v, f["_block"].to_numpy(), f[col].fill_null(0).to_numpy().astype(np.float64))
        return v

    gens: dict[object, np.random.Generator] = {}
    for (run, step), part in counts.sort("run_id", "step").partition_by(["run_id", "step"], as_dict=True,
                                                                         maintain_order=True).items():
        gen = rng if isinstance(rng, np.random.Generator) else gens.setdefault(run, np.random.default_rng(rng))
        wts = bs.block_weights(nb, n_boot, gen)
        for (mix,), f in part.partition_by(["mix"], as_dict=True, maintain_order=True).items():
            gid = f["_g"][0]
            hf = hist_by.get(gid)
            margins: list[np.ndarray] = []
            shares: list[np.ndarray] = []
            tails: list[float | None] = []
            for i, c in enumerate(sla.clauses):
                tails.append(None)
                if c.kind == "percentile":
                    hist = _block_hist(hf, METRICS.index(c.metric), nb)
                    v = _boot_hist_quantile(wts, hist, c.q)
                    tails[-1] = _hist_tail_deff(wts, hist)
                elif c.kind == "error_rate":
                    v = bs.block_rate(wts, per_block(f, "n_failed"), per_block(f, "n_known"))
                else:
                    v = bs.block_rate(wts, per_block(f, f"_gk_{i}"), per_block(f, "n_known"))
                margins.append(c.observed_to_margin(v))
                shares.append(pooled.share_to_margin(
                    c, bs.block_rate(wts, per_block(f, f"_pk_{i}"), per_block(f, f"_pn_{i}"))))
            out.append((run, mix, int(step), StepReplicates(tuple(margins), tuple(shares), tuple(tails))))
    return TraceReplicates.collect(out)


def _block_hist(hf: pl.DataFrame | None, mi: int, nb: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Metric ``mi``'s histogram per block: (its bins, an ``(nb, bins)`` count matrix); None without a value."""
    if hf is None:
        return None
    f = hf.filter(pl.col("_m") == mi)
    if f.height == 0:
        return None
    bins, inv = np.unique(f["_bin"].to_numpy(), return_inverse=True)
    cnt = np.zeros((nb, bins.size))
    np.add.at(cnt, (f["_block"].to_numpy(), inv), f["count"].to_numpy().astype(np.float64))
    return bins, cnt


def _hist_tail_deff(w: np.ndarray, hist: tuple[np.ndarray, np.ndarray] | None) -> float | None:
    """``limits.evidence.tail_design_effect`` from the per-block histogram (:func:`_block_hist`): the tail is every
    bin above the one that holds the step's own :data:`limits.evidence.TAIL_Q` quantile (so within the histogram's
    resolution of the in-memory path's tail)."""
    if hist is None:
        return None
    cnt = hist[1]
    cum = np.cumsum(cnt.sum(axis=0))
    n = cum[-1]
    if n < 2:
        return None
    rank = (n - 1.0) * ev_mod.TAIL_Q  # the linear quantile's lower order statistic (0-based)
    at = int(np.searchsorted(cum, rank + 1.0, side="left"))
    return ev_mod.tail_design_effect_of_blocks(w, cnt[:, at + 1:].sum(axis=1), cnt.sum(axis=1))


def _boot_hist_quantile(w: np.ndarray, hist: tuple[np.ndarray, np.ndarray] | None, q: float) -> np.ndarray:
    """Replicates of the linear quantile of the histogram ``W @ per-block counts`` (``bootstrap.boot_quantile``'s
    order-statistic search, on bins instead of values)."""
    if hist is None:
        return np.full(w.shape[0], np.nan)
    bins, cnt = hist
    c = w @ np.cumsum(cnt, axis=1)
    grid = bin_value(bins)
    big_n = c[:, -1]
    h = (big_n - 1.0) * q
    j = np.floor(h)
    frac = h - j
    kk = bins.size
    idx_j = np.minimum((c < (j + 1.0)[:, None]).sum(axis=1), kk - 1)
    idx_j1 = np.minimum((c < np.minimum(j + 2.0, big_n)[:, None]).sum(axis=1), kk - 1)
    out = grid[idx_j] + frac * (grid[idx_j1] - grid[idx_j])
    return np.where(big_n >= 1, out, np.nan)


def windows_of(trace: RequestTrace, options: object | None = None, *, trend_metric: str | None = None,
               ) -> pl.DataFrame:
    """``step_windows`` of a (lazy) trace with polars' streaming engine for every query."""
    with pl.Config(engine_affinity="streaming"):
        return step_windows(trace, options, trend_metric=trend_metric)  # type: ignore[arg-type]


def stats_curve(trace: RequestTrace, spec: MixSpec, sla: SLA, *, extra_quantiles: tuple[float, ...] = (),
                options: object | None = None, windows: pl.DataFrame | None = None,
                n_blocks: int = N_BLOCKS, stats: StepStats | None = None) -> tuple[pl.DataFrame, StepStats]:
    """The load curve (with the SLA's pooled counts and goodput) and the statistics of a trace whose frame may be
    a lazy scan (:func:`scan_trace`), every query streaming (``stats``: already computed, e.g. on an engine)."""
    if trace.frame["step"].null_count() == trace.frame.height:
        raise InsufficientDataError(f"{trace.provenance.source}: the trace has no load steps (column 'step' is "
                                    "empty): limits need a stepped load test, not production traffic")
    with pl.Config(engine_affinity="streaming"):
        win = windows if windows is not None else step_windows(trace, options)  # type: ignore[arg-type]
        st = stats if stats is not None else step_stats(trace.frame.lazy(), win, spec, sla, n_blocks=n_blocks)
        curve = curve_from_stats(st, extra_quantiles=extra_quantiles, done=completions_in_window(trace, win, spec),
                                 little=littles_law(trace, win))
    return curve.join(sla_columns(st, sla), on=["run_id", "step", "mix"], how="left"), st


__all__ = [
    "N_BINS",
    "N_BLOCKS",
    "REL_BIN",
    "STATS_COLUMNS",
    "TOLERANCE",
    "V0_MS",
    "StepStats",
    "bin_expr",
    "bin_value",
    "combine",
    "curve_from_stats",
    "hist_quantile",
    "replicates_from_stats",
    "scan_trace",
    "sla_columns",
    "stat_queries",
    "stats_curve",
    "step_groups",
    "step_stats",
    "windows_of",
]
