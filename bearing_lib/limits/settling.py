"""Steady state on the whole step: a step whose latency keeps rising through it is judged on its late part.

The steady window (``limits.curves``) cuts ``max(10 %, 2 mean latencies)`` from each end of a step's send
window, up to a quarter each side, and the curve's ``not_steady`` test looks at the last half of what is
left. A step whose queue only breaks out in its last quarter passes on that window: the bundled vLLM
ShareGPT sweep's 2.5 rps step (LMBenchmark, 252 requests over 100 s) has a P90 TTFT of 625 ms on its
steady window and of 3.64 s over its last quarter of requests.

The rule, per run, step and mix, over **every** request sent in the step (its whole send window
``[first start, last start]``):

* **rising**: the window is cut into :data:`TREND_BINS` equal-time bins; per bin the median of the trend
  metric (TTFT when the trace has it, else latency) of the successful requests; the Mann–Kendall test
  (Kendall's τ of the bin medians against the bin order, ``scipy.stats.kendalltau``, one-sided) has
  ``p <`` :data:`TREND_ALPHA`. Bins, not requests: near capacity consecutive latencies are strongly
  autocorrelated, and a per-request test calls almost every busy step rising.
  The rise must also survive the request mix: a regression of ``log(metric)`` on the request's
  ``log(input tokens)`` and its send time (statsmodels OLS with Newey–West HAC standard errors, lags
  ``n^(1/3)``) must give the time coefficient a one-sided ``p <`` :data:`TREND_ALPHA`. LMBenchmark's
  ``short_input`` and ShareGPT runs send longer prompts late in every step (median 76 → 174 tokens by
  quarter in ``short_input``), so TTFT rises with the content even on an idle server.
* **late part breaks a clause**: the requests sent in the window's last :data:`LATE_FRACTION` (of its
  time) have a bad share above the clause's allowance by a one-sided exact binomial test
  (``scipy.stats.binomtest``, ``p <`` :data:`LATE_ALPHA`: the 95 % lower order-statistic bound of a
  percentile above its threshold); bad as in ``limits.pooled`` (above the threshold, failed, out of a
  goodput bound).

A step that is rising **and** whose late part breaks a clause is **unsettled**: it cannot pass on its early
window; ``limits.judging`` treats it as not steady (its ``reasons`` name the trend and the late part's
numbers): *undetermined* unless a clause already fails on its steady window, since a queue still rising is no
measurement of a sustained load, neither a pass nor a measured failure. A step that rises but whose late part
still holds keeps its verdict, with a note: latency may also rise with the content (the LMBenchmark ShareGPT
runs send longer multi-round prompts late in every step), which is only a problem when the SLA breaks. The
false-alarm rate of the rule on SYNTHETIC steady M/M/1 steps below the SLA limit is in docs/limits.md ("Steady
state on the whole step").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.trace import RequestTrace
from bearing_lib.limits import pooled
from bearing_lib.limits.sla import OK_EXPR, SLA

LATE_FRACTION = 0.25
"""The late part: the requests sent in the last quarter of the step's send window."""
TREND_BINS = 12
"""Equal-time bins of the whole send window for the trend test (as the curve's not-steady test)."""
MIN_TREND_BINS = 6
"""Fewer non-empty bins (with :data:`MIN_BIN_REQUESTS` each) than this: no trend test."""
MIN_BIN_REQUESTS = 2
TREND_ALPHA = 0.01
"""One-sided significance of the Mann–Kendall test on the bin medians."""
LATE_ALPHA = 0.025
"""One-sided significance of the late part's bad share above the allowance (a two-sided 95 % bound)."""


@dataclass(frozen=True)
class LateClause:
    """One clause on a step's late part."""

    clause: str
    bad: int
    of: int
    allowed: float
    p_value: float
    """One-sided exact binomial p of a bad share above ``allowed``."""
    value: float | None
    """The late part's statistic: the percentile (ms) of a percentile clause, else the bad share."""
    breaks: bool


@dataclass(frozen=True)
class StepSettling:
    """Whether a step's latency keeps rising through it, and how its late part meets the SLA."""

    run_id: str
    step: int
    mix: str
    metric: str
    n_bins: int
    tau: float | None
    p_value: float | None
    """Mann–Kendall on the bin medians."""
    content_z: float | None
    """HAC z of the send-time coefficient of log(metric) given log(input tokens) (None: not testable)."""
    content_p: float | None
    rising: bool
    late_start_s: float
    late_end_s: float
    late_n: int
    clauses: tuple[LateClause, ...]

    def broken(self, ignore: frozenset[str] = frozenset()) -> list[LateClause]:
        """The clauses the late part breaks (``ignore``: clauses a load-independent floor breaks everywhere)."""
        return [c for c in self.clauses if c.breaks and c.clause not in ignore]

    def unsettled(self, ignore: frozenset[str] = frozenset()) -> bool:
        """Rising through the step and its late part breaks a clause: the step cannot pass."""
        return self.rising and bool(self.broken(ignore))

    def _trend_text(self) -> str:
        what = "TTFT" if self.metric == "ttft_ms" else "latency"
        return (f"{what} rises through the whole step (Mann–Kendall over {self.n_bins} time bins of its send window:"
                f" τ = {self.tau:.2f}, one-sided p = {self.p_value:.2g}; given the prompt lengths, HAC z = "
                f"{self.content_z:.2f}, p = {self.content_p:.2g})")

    def reason(self, ignore: frozenset[str] = frozenset()) -> str | None:
        """The step's reason: unsettled (judged on its late part), or rising with a late part that holds."""
        if not self.rising:
            return None
        span = (self.late_end_s - self.late_start_s) / LATE_FRACTION
        late = (f"its last quarter ({self.late_n} requests sent in the last {span * LATE_FRACTION:.3g} s of its "
                f"{span:.3g} s send window)")
        broken = self.broken(ignore)
        if broken:
            parts = "; ".join(_clause_text(c) for c in broken)
            return (f"not settled: {self._trend_text()}, and {late} breaks the SLA: {parts}; its steady window "
                    "does not show the load it cannot sustain")
        return f"{self._trend_text()}, but {late} still meets the SLA: judged on its steady window"

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["clauses"] = [asdict(c) for c in self.clauses]
        return d


def _clause_text(c: LateClause) -> str:
    share = f"{c.bad} of {c.of} bad ({c.bad / c.of:.1%} > {c.allowed:.3g} allowed, p = {c.p_value:.2g})"
    if c.value is not None and c.clause.startswith("p"):
        return f"{c.clause}: {c.value:.4g} ms, {share}"
    return f"{c.clause}: {share}"


def _late_value_exprs(sla: SLA) -> list[pl.Expr]:
    out = []
    for i, c in enumerate(sla.clauses):
        if c.kind == "percentile":
            out.append(pl.col(c.metric).filter(OK_EXPR & pl.col("_late")).quantile(float(c.q), "linear")
                       .alias(f"_lv_{i}"))
    return out


@dataclass(frozen=True)
class StepSettlings:
    """The whole-step settling test of every step of a trace, by (run, mix) and step (:func:`settling_by_step`)."""

    by_group: Mapping[tuple[str, str], Mapping[int, StepSettling]] = field(default_factory=dict)

    def of(self, run: object, mix: object) -> Mapping[int, StepSettling] | None:
        """The settling tests of the steps of ``mix`` in ``run`` by step, or None when none was made."""
        return self.by_group.get((str(run), str(mix)))


def settling_by_step(trace: RequestTrace, mixes: MixSpec | None, sla: SLA, metric: str) -> StepSettlings:
    """The settling test of every step of a trace with per-request times, by (run, mix) and step.

    ``metric`` is the trend metric (``ttft_ms`` or ``latency_ms``). Steps without times, or whose
    send window has no length, are left out (nothing to test).
    """
    from scipy import stats  # here, not at module level: the limits JSON's types import this module

    if "start_s" not in trace.frame.columns or trace.frame["start_s"].null_count() == trace.frame.height:
        return StepSettlings()
    lf = trace.frame.lazy().with_columns(pl.col("run_id").fill_null("run")).filter(
        pl.col("step").is_not_null() & pl.col("start_s").is_not_null())
    keys = ["run_id", "step"]
    span = lf.group_by(keys).agg(pl.col("start_s").min().alias("_t0"), pl.col("start_s").max().alias("_t1"))
    lf = lf.join(span, on=keys).filter(pl.col("_t1") > pl.col("_t0"))
    d = pl.col("_t1") - pl.col("_t0")
    lf = (mixes or MixSpec.single()).assign(lf).with_columns(
        ((pl.col("start_s") - pl.col("_t0")) / d * TREND_BINS).floor().cast(pl.Int64).clip(0, TREND_BINS - 1)
        .alias("_bin"),
        (pl.col("start_s") >= pl.col("_t1") - LATE_FRACTION * d).alias("_late"),
    )
    gkeys = ["run_id", "step", "mix"]
    bins = lf.filter(OK_EXPR & pl.col(metric).is_not_null()).group_by([*gkeys, "_bin"]).agg(
        pl.col(metric).median().alias("_med"), pl.len().alias("_n")).collect()
    counts = []
    for i, c in enumerate(sla.clauses):
        bad, elig = pooled.bad_expr(c)
        counts += [(bad & pl.col("_late")).cast(pl.Int64).sum().alias(f"_lk_{i}"),
                   (elig & pl.col("_late")).cast(pl.Int64).sum().alias(f"_ln_{i}")]
    late = lf.group_by(gkeys).agg(
        *counts, *_late_value_exprs(sla), pl.col("_late").cast(pl.Int64).sum().alias("_late_n"),
        pl.col("_t0").first(), pl.col("_t1").first()).collect()
    by_group = {(r, s, m): g for (r, s, m), g in bins.partition_by(gkeys, as_dict=True).items()}
    inp = pl.col("input_tokens") if "input_tokens" in trace.frame.columns else pl.lit(None, pl.Int64)
    reqs = lf.filter(OK_EXPR & (pl.col(metric) > 0)).select(
        *gkeys, "start_s", pl.col(metric).log().alias("_y"), inp.cast(pl.Float64).alias("_inp")
    ).sort([*gkeys, "start_s"]).collect()
    per_req = dict(reqs.partition_by(gkeys, as_dict=True).items())
    out: dict[tuple[str, str], dict[int, StepSettling]] = {}
    for row in late.iter_rows(named=True):
        key = (row["run_id"], row["step"], row["mix"])
        tau, p = _trend(by_group.get(key))
        cz, cp = _content_trend(per_req.get(key)) if p is not None and p < TREND_ALPHA else (None, None)
        n_bins = 0 if key not in by_group else int((by_group[key]["_n"] >= MIN_BIN_REQUESTS).sum())
        clauses = []
        for i, c in enumerate(sla.clauses):
            k, n = int(row[f"_lk_{i}"] or 0), int(row[f"_ln_{i}"] or 0)
            if n == 0:
                continue
            allowed = pooled.allowed_share(c)
            pv = float(stats.binomtest(k, n, min(max(allowed, 1e-12), 1 - 1e-12), alternative="greater").pvalue)
            value = row.get(f"_lv_{i}") if c.kind == "percentile" else k / n
            clauses.append(LateClause(clause=c.text, bad=k, of=n, allowed=allowed, p_value=pv,
                                      value=None if value is None else float(value),
                                      breaks=k / n > allowed and pv < LATE_ALPHA))
        t0, t1 = float(row["_t0"]), float(row["_t1"])
        out.setdefault((str(row["run_id"]), str(row["mix"])), {})[int(row["step"])] = StepSettling(
            run_id=str(row["run_id"]), step=int(row["step"]), mix=str(row["mix"]), metric=metric, n_bins=n_bins,
            tau=tau, p_value=p, content_z=cz, content_p=cp,
            rising=p is not None and p < TREND_ALPHA and cp is not None and cp < TREND_ALPHA,
            late_start_s=t1 - LATE_FRACTION * (t1 - t0), late_end_s=t1, late_n=int(row["_late_n"] or 0),
            clauses=tuple(clauses))
    return StepSettlings(out)


def _content_trend(reqs: pl.DataFrame | None) -> tuple[float | None, float | None]:
    """HAC z and one-sided p of the send-time coefficient of ``log(metric)`` given ``log(input tokens)``."""
    import statsmodels.api as sm
    from scipy import stats

    if reqs is None or reqs.height < 10:
        return None, None
    y = reqs["_y"].to_numpy()
    t = reqs["start_s"].to_numpy()
    t = (t - t[0]) / max(float(np.ptp(t)), 1e-12)
    cols = [np.ones_like(t), t]
    inp = reqs["_inp"].to_numpy()
    if not np.isnan(inp).any() and np.ptp(inp) > 0:
        cols.insert(1, np.log(np.maximum(inp, 1.0)))
    x = np.column_stack(cols)
    if np.linalg.matrix_rank(x) < x.shape[1] or np.ptp(t) == 0:
        return None, None
    res = sm.OLS(y, x).fit(cov_type="HAC", cov_kwds={"maxlags": int(len(y) ** (1 / 3)) + 1})
    z = float(res.tvalues[-1])
    return (None, None) if not math.isfinite(z) else (z, float(stats.norm.sf(z)))


def _trend(bins: pl.DataFrame | None) -> tuple[float | None, float | None]:
    """Kendall's τ and its one-sided p of the bin medians against the bin order (Mann–Kendall)."""
    from scipy import stats

    if bins is None:
        return None, None
    b = bins.filter(pl.col("_n") >= MIN_BIN_REQUESTS).sort("_bin")
    if b.height < MIN_TREND_BINS:
        return None, None
    med = b["_med"].to_numpy().astype(float)
    if np.ptp(med) == 0:
        return 0.0, 1.0
    res = stats.kendalltau(b["_bin"].to_numpy(), med, alternative="greater")
    tau, p = float(res.statistic), float(res.pvalue)
    return (None, None) if math.isnan(tau) else (tau, p)


__all__ = ["LATE_ALPHA", "LATE_FRACTION", "TREND_ALPHA", "TREND_BINS", "LateClause", "StepSettling",
           "StepSettlings", "settling_by_step"]
