"""Phases of a load curve (elastic / plastic / failure) and ``P_critical``.

Rules (docs/domain.md, "The three phases of a load curve"), applied per step of one run and
mix, steps ordered by offered load:

* **baseline**: the P99 latency of the lowest-load valid steps (the mean of the
  ``n_baseline`` lowest, default 2, leaving out a step whose P99 is already above 2x the
  lowest one's: it is past the knee). Steps flagged invalid (too few requests for a P99,
  generator behind, too short, not steady) never form the baseline.
* **elastic**: P99 <= 2 x baseline **and** error rate < 0.1%.
* **failure**: error rate > 5%, **or** timeouts >= 1% of requests (when the curve has a
  ``timeout_rate`` column), **or** throughput retrograde: completed throughput falls
  more than 5% below the best throughput seen at any lower offered load.
* **plastic**: everything else. docs/domain.md gives plastic errors as 0.5-2%; the bands
  leave gaps (0.1-0.5% and 2-5%). bearing reads elastic and failure as the two
  *criteria* and plastic as the residual: a step is elastic only when it meets every
  elastic criterion and failure only when it meets a failure criterion, so an error rate
  in either gap makes the step plastic. This never calls a step with 0.3% errors
  elastic (the elastic band is explicit) and never calls 3% errors a failure (the
  failure band is explicit, > 5%).

``P_critical`` (the elastic -> plastic transition) is estimated two ways:

* **2x rule** (the DOMAIN definition in practice): the offered load at which P99 first
  exceeds 2 x baseline, interpolated (linearly in log P99) between the last step below
  and the first step above. 95% CI by a bootstrap over steps that redraws every step's
  P99 (and so the baseline) and recomputes the crossing: from the steps' requests by a
  time-block bootstrap when the caller passes them (``requests=``; recommended), else
  from a normal on the log scale whose spread matches the step's order-statistic CI
  (``{m}_p99_ci95_lo/hi``). The order-statistic CIs assume independent requests; near
  capacity latencies are autocorrelated and those CIs are too narrow (on simulated
  M/M/1 steps the parametric form covered the true P_critical in 14 of 20 seeds).
* **segmented regression**: a broken-stick (hinge) model
  ``log P99 = a + b x + c (x - x_b)+`` fitted by OLS for every candidate breakpoint
  ``x_b`` on a fine grid between the 2nd and the 2nd-to-last step (statsmodels fits the
  chosen one); the
  breakpoint minimising the residual sum of squares is the estimate, and the 95% CI is
  the profile-likelihood set ``{x_b : n log(RSS(x_b)/RSS_min) <= 3.84}``.

The result trusts the 2x rule whenever it crosses inside the tested range: it is the
project's definition, it needs no model, and its CI comes from the measured percentile
CIs. The breakpoint is reported as the alternative (and as a check: when the two
disagree by more than their CIs allow, the reason says so). When P99 never exceeds 2x
baseline, ``P_critical`` is censored: ``>= the highest valid load``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError, SchemaError
from bearing_lib.limits.result import PCritical, PCriticalEstimate

ELASTIC_MAX_ERROR = 0.001
FAILURE_MIN_ERROR = 0.05
PLASTIC_ERROR_BAND = (0.005, 0.02)  # DOMAIN's stated band; see module docstring for the gaps
TIMEOUT_FAILURE_RATE = 0.01
RETROGRADE_DROP = 0.05
LATENCY_FACTOR = 2.0
PHASES = ("elastic", "plastic", "failure")
_RANK = {p: k for k, p in enumerate(PHASES)}
FALLBACK_PERCENTILES = ("p95", "p90", "p50", "mean")
INFO_FLAGS = frozenset({"no_times", "no_ci", "steadiness_unknown"})  # as limits.curves

_Z975 = 1.959963984540054


def _require(curve: pl.DataFrame, cols: list[str]) -> None:
    missing = [c for c in cols if c not in curve.columns]
    if missing:
        raise SchemaError(f"load curve lacks column(s) {missing}; found {curve.columns}")


def _groups(curve: pl.DataFrame) -> list[str]:
    return [c for c in ("run_id", "mix") if c in curve.columns]


def classify_phases(
    curve: pl.DataFrame,
    *,
    metric: str = "latency_ms",
    n_baseline: int = 2,
) -> pl.DataFrame:
    """Add ``phase``, ``phase_reason``, ``phase_evidence``, ``p99_over_baseline`` and ``baseline_p99`` per step.

    Parameters
    ----------
    curve
        Load-curve frame (docs/interfaces.md section 3): ``offered_load``,
        ``{metric}_p99``, ``error_rate``, ``throughput_rps``; optional ``valid``,
        ``timeout_rate``, ``run_id``, ``mix`` (phases are classified within each
        run x mix, ordered by offered load).
    metric
        Latency column family whose P99 is compared with the baseline (ms).
    n_baseline
        How many of the lowest-load valid steps form the baseline.

    Returns
    -------
    polars.DataFrame
        ``curve`` with ``phase``, ``phase_reason``, ``phase_evidence``,
        ``p99_over_baseline`` and ``baseline_p99`` added (original row order kept). A step
        whose P99 is null is judged on the best supported evidence (the P99's lower bound,
        a lower percentile, the mean) or is ``unknown``; never elastic by default. Phases
        are monotone in load unless a step's CI contradicts it (then flagged in the reason).
    """
    p99 = f"{metric}_p99"
    _require(curve, ["offered_load", p99, "error_rate", "throughput_rps"])
    if n_baseline < 1:
        raise ParameterError(f"n_baseline must be >= 1, got {n_baseline}")
    if curve.height == 0:
        raise InsufficientDataError("the load curve has no step left to classify (every step was a recovery step "
                                    "or could not be judged)")
    keys = _groups(curve)
    frame = curve.with_row_index("_row")
    parts = []
    for _, g in frame.group_by(keys, maintain_order=True) if keys else [((), frame)]:
        parts.append(_classify_group(g.sort("offered_load"), p99, n_baseline))
    return pl.concat(parts, how="vertical").sort("_row").drop("_row")


def _invalid_note(g: pl.DataFrame, p99: str, n_valid: int, *, too_few: bool = True) -> str:
    """"; 7 more steps report one but are flagged invalid (see their flags)" where steps carry a P99 the fits leave out
    (LLMPerf's summaries report one over 80–128 requests, too few to support it: a new user read "0 valid steps have
    one" as "the P99 is missing"; round 22); "" otherwise."""
    n_any = int(np.isfinite(g[p99].to_numpy().astype(float)).sum())
    more = n_any - n_valid
    note = f"; {more} more step(s) report one but are flagged invalid (see their flags)" if more > 0 else ""
    return note + (_too_few_note(g, p99) if too_few else "")


def _too_few_note(g: pl.DataFrame, p99: str) -> str:
    """"; 20 step(s) hold too few requests for a P99 (its 95 % CI needs at least 368; the largest holds 196)" where
    steps carry ``too_few_for_p99`` and no P99 (the demo's llm-d sharegpt steps: a reader saw "0 valid step(s) have
    one" and no reason, round 61); "" otherwise."""
    if "flags" not in g.columns:
        return ""
    from bearing_lib.limits.curves import min_n_supported

    vals = g[p99].to_numpy().astype(float)
    few = np.array([fl is not None and "too_few_for_p99" in fl for fl in g["flags"].to_list()], dtype=bool)
    few &= ~np.isfinite(vals)
    if not few.any():
        return ""
    largest = ""
    if "n_ok" in g.columns:
        sizes = [v for v, f in zip(g["n_ok"].to_list(), few, strict=True) if f and v is not None]
        largest = f"; the largest holds {max(sizes):,}" if sizes else ""
    return (f"; {int(few.sum())} step(s) hold too few requests for a P99 (its 95 % CI needs at least "
            f"{min_n_supported(0.99):,}{largest})")


def _valid_mask(g: pl.DataFrame) -> np.ndarray:
    if "valid" in g.columns:
        return g["valid"].fill_null(False).to_numpy().astype(bool)
    return np.ones(g.height, dtype=bool)


def baseline_p99(g: pl.DataFrame, p99: str, n_baseline: int = 2) -> tuple[float | None, list[int]]:
    """Mean P99 of the ``n_baseline`` lowest-load valid steps with a P99; (None, []) if none.

    ``g`` must be sorted by offered load. Returns the value and the row positions used.
    """
    vals = g[p99].to_numpy().astype(float)
    return _lowest(vals, _valid_mask(g) & np.isfinite(vals), n_baseline)


def _lowest(vals: np.ndarray, ok: np.ndarray, n_baseline: int) -> tuple[float | None, list[int]]:
    """Mean of the first ``n_baseline`` ok values in the lower half of the loads, leaving out any above 2x the first.

    A step already past the knee (more than 2x the lowest step's value) is not a baseline:
    averaging it in would hide the knee (inference-perf's vLLM v0 sweep: 40 rps at 80 ms and
    79 rps at 3.9 s made a 2 s "baseline" under which the saturated steps looked elastic). Nor is a step in the
    upper half of the loads tested (the steps are sorted by load): where the low loads have too few requests for the
    percentile, the first load that has one may be the highest (Vegeta's 1/2/4/8 rps: the 8 rps step became the P99
    baseline and its 1 rps step read "0.62x baseline"); the phase then reads a lower percentile, and the knee has no
    baseline to double.
    """
    half = (len(vals) + 1) // 2
    cand = [int(i) for i in np.flatnonzero(ok[:half])[:n_baseline]]
    if not cand:
        return None, []
    idx = [i for i in cand if vals[i] <= LATENCY_FACTOR * vals[cand[0]]]
    return float(np.mean(vals[idx])), idx


def _usable(g: pl.DataFrame) -> np.ndarray:
    """Steps whose only flags are informational or too-few-for-a-percentile ones.

    Such a step's *supported* percentiles are sound evidence (a step with 200 requests has a
    sound P90 though no P99); a step flagged too short, not steady or generator behind is not.
    """
    valid = _valid_mask(g)
    if "flags" not in g.columns:
        return valid
    out = valid.copy()
    for i, fl in enumerate(g["flags"].to_list()):
        if not out[i] and fl is not None:
            out[i] = all(f in INFO_FLAGS or f.startswith("too_few_for_") for f in fl)
    return out


def _baseline_of(g: pl.DataFrame, col: str, usable: np.ndarray, n_baseline: int) -> float | None:
    vals = g[col].to_numpy().astype(float) if col in g.columns else np.full(g.height, np.nan)
    return _lowest(vals, usable & np.isfinite(vals), n_baseline)[0]


def _col(g: pl.DataFrame, name: str) -> np.ndarray:
    return g[name].to_numpy().astype(float) if name in g.columns else np.full(g.height, np.nan)


def _latency_evidence(g: pl.DataFrame, metric: str, i: int, base99: float | None, usable: np.ndarray,
                      n_baseline: int, bases: dict[str, float | None]) -> tuple[str, str, float, float]:
    """The best supported latency evidence of step ``i``: (phase or "", evidence, ratio, ratio CI high).

    Order: the P99 against the P99 baseline; the P99's lower bound when it alone proves the
    step above 2x baseline (an unsupported P99 keeps it); the highest supported lower
    percentile (P95, P90, P50) against the same percentile's baseline; the mean (e.g. a
    tool's own summary that reports no percentile) against the mean's baseline. Returns
    phase "" when no latency evidence exists.
    """
    p99 = f"{metric}_p99"
    v = float(g[p99][i]) if g[p99][i] is not None else math.nan
    hi = _col(g, f"{p99}_ci95_hi")[i]
    if base99 and math.isfinite(v):
        r = v / base99
        r_hi = hi / base99 if math.isfinite(hi) else math.nan
        ph = "plastic" if r > LATENCY_FACTOR else "elastic"
        rel = ">" if r > LATENCY_FACTOR else "within"
        return ph, f"P99 {r:.2f}x baseline ({rel} {LATENCY_FACTOR:g}x)", r, r_hi
    lo = _col(g, f"{p99}_ci95_lo")[i]
    if base99 and math.isfinite(lo) and lo / base99 > LATENCY_FACTOR:
        return ("plastic", f"P99 unsupported, but its 95% lower bound is {lo / base99:.2f}x baseline"
                f" (> {LATENCY_FACTOR:g}x)", lo / base99, math.inf)
    for name in FALLBACK_PERCENTILES:
        col = f"{metric}_{name}"
        b = bases.get(name)
        if b is None and name not in bases:
            b = bases[name] = _baseline_of(g, col, usable, n_baseline)
        vq = _col(g, col)[i]
        if not b or not math.isfinite(vq):
            continue
        r = vq / b
        hq = _col(g, f"{col}_ci95_hi")[i]
        lq = _col(g, f"{col}_ci95_lo")[i]
        ci = f" [95% CI {lq / b:.2f}-{hq / b:.2f}x]" if math.isfinite(lq) and math.isfinite(hq) else ""
        ph = "plastic" if r > LATENCY_FACTOR else "elastic"
        rel = ">" if r > LATENCY_FACTOR else "within"
        label = "mean" if name == "mean" else name.upper()
        fl = g["flags"][i] if "flags" in g.columns else None
        why = ("P99 without a baseline (no valid step in the lower half of the loads has one)"
               if math.isfinite(v) and not base99 and "too_few_for_p99" not in (fl if fl is not None else [])
               else "P99 unsupported")
        return (ph, f"{why}; {label} {r:.2f}x its baseline{ci} ({rel} {LATENCY_FACTOR:g}x)",
                r, hq / b if math.isfinite(hq) else math.nan)
    return "", "no supported latency percentile", math.nan, math.nan


def _classify_group(g: pl.DataFrame, p99: str, n_baseline: int) -> pl.DataFrame:
    metric = p99[: -len("_p99")]
    base, _ = baseline_p99(g, p99, n_baseline)
    vals = g[p99].to_numpy().astype(float)
    err = g["error_rate"].to_numpy().astype(float)
    err_hi = _col(g, "error_rate_ci95_hi")
    thr = g["throughput_rps"].to_numpy().astype(float)
    tmo = _col(g, "timeout_rate")
    usable = _usable(g)
    bases: dict[str, float | None] = {}
    phases, reasons, ratios, evidence, decisive = [], [], [], [], []
    loads = g["offered_load"].to_numpy().astype(float)
    for i in range(g.height):
        lower = (loads < loads[i]) & np.isfinite(thr)
        best_below = float(thr[lower].max()) if lower.any() else -math.inf
        ratios.append(vals[i] / base if base and np.isfinite(vals[i]) else math.nan)
        why_fail = []
        if np.isfinite(err[i]) and err[i] > FAILURE_MIN_ERROR:
            why_fail.append(f"errors {err[i]:.1%} > {FAILURE_MIN_ERROR:.0%}")
        if np.isfinite(tmo[i]) and tmo[i] >= TIMEOUT_FAILURE_RATE:
            why_fail.append(f"timeouts {tmo[i]:.1%} >= {TIMEOUT_FAILURE_RATE:.0%}")
        # a step without a finite load (vLLM's rate inf: every request sent at once) has no lower loads to fall
        # behind: its rate is counted over its own drain, which the steps below it do not include (a new user read
        # "throughput retrograde: 1.58 rps < 95% of 16" on such a step; round 22)
        if (np.isfinite(loads[i]) and np.isfinite(thr[i]) and best_below > 0
                and thr[i] < (1 - RETROGRADE_DROP) * best_below):
            why_fail.append(
                f"throughput retrograde: {thr[i]:.3g} rps < {1 - RETROGRADE_DROP:.0%} of {best_below:.3g} at lower load"
            )
        if why_fail:
            phases.append("failure")
            reasons.append("; ".join(why_fail))
            evidence.append("errors" if "errors" in why_fail[0] or "timeouts" in why_fail[0] else "throughput")
            decisive.append(True)
            continue
        lat_phase, lat_why, _r, r_hi = _latency_evidence(g, metric, i, base, usable, n_baseline, bases)
        # a later step is lower than an earlier one only when its own evidence rules the earlier phase out
        no_failure = bool(np.isfinite(err_hi[i]) and err_hi[i] <= FAILURE_MIN_ERROR)
        why_plastic = []
        if np.isfinite(err[i]) and err[i] >= ELASTIC_MAX_ERROR:
            why_plastic.append(f"errors {err[i]:.2%} >= {ELASTIC_MAX_ERROR:.1%}")
        if lat_phase == "plastic":
            why_plastic.append(lat_why)
        if why_plastic:
            phases.append("plastic")
            reasons.append("; ".join(why_plastic))
            evidence.append("latency" if lat_phase == "plastic" else "errors")
            decisive.append(no_failure)
        elif lat_phase == "elastic":
            phases.append("elastic")
            errs = f"errors < {ELASTIC_MAX_ERROR:.1%}" if np.isfinite(err[i]) else "errors not reported"
            reasons.append(f"{lat_why} and {errs}")
            evidence.append("latency")
            decisive.append(bool(np.isfinite(r_hi) and r_hi <= LATENCY_FACTOR))
        else:
            phases.append("unknown")
            reasons.append(f"{lat_why} and no error or throughput sign of failure: phase unknown"
                           " (a longer step supports a P99)")
            evidence.append("none")
            decisive.append(False)
    _monotone(phases, reasons, loads, usable, decisive)
    return g.with_columns(
        pl.Series("phase", phases, dtype=pl.String),
        pl.Series("phase_reason", reasons, dtype=pl.String),
        pl.Series("phase_evidence", evidence, dtype=pl.String),
        pl.Series("p99_over_baseline", ratios, dtype=pl.Float64),
        pl.lit(base, dtype=pl.Float64).alias("baseline_p99"),
    )


def _monotone(phases: list[str], reasons: list[str], loads: np.ndarray, usable: np.ndarray,
              decisive: list[bool]) -> None:
    """Phases never fall as load rises unless a step's own evidence says so (then flagged).

    ``phases`` is in load order. The floor is the worst phase of the usable steps below; a
    step under the floor is raised to it, unless its evidence is decisive: an elastic step
    whose latency CI lies wholly within 2x baseline, or a plastic step whose error-rate CI
    lies wholly under the failure threshold. Such a step keeps its phase and the reason says
    the curve is not monotone. An unknown step under a plastic or failure floor takes the
    floor (monotonicity is the best evidence it has).
    """
    floor, at = -1, None
    for i, ph in enumerate(phases):
        r = _RANK.get(ph, -1)
        if floor > r and at is not None and np.isfinite(loads[i]):
            prev = PHASES[floor]
            if decisive[i] and ph != "unknown":
                reasons[i] += (f"; not monotone: {ph} at a higher load than the {prev} step at {loads[at]:.4g},"
                               " and this step's CI rules that out (check run order and steady state)")
            else:
                phases[i] = prev
                reasons[i] = (f"{prev}, as the step at {loads[at]:.4g} (phases are monotone in load; this step's"
                              f" own evidence does not rule it out: {reasons[i]})")
                r = floor
        if usable[i] and r > floor:
            floor, at = r, i


# ---------------------------------------------------------------------------------------
# P_critical


def _sigma_log(g: pl.DataFrame, p99: str) -> np.ndarray:
    """Per-step SD of log P99 from its 95% order-statistic CI (NaN when unsupported)."""
    lo_c, hi_c = f"{p99}_ci95_lo", f"{p99}_ci95_hi"
    if lo_c not in g.columns or hi_c not in g.columns:
        return np.full(g.height, np.nan)
    lo = g[lo_c].to_numpy().astype(float)
    hi = g[hi_c].to_numpy().astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.log(hi) - np.log(lo)) / (2 * _Z975)


def _first_crossing(x: np.ndarray, y: np.ndarray, level: float) -> float | None:
    """x where y (> 0) first exceeds level, interpolated linearly in log y.

    None if never; x[0] if already above. Log-linear, because latency grows about
    exponentially towards saturation: a straight chord between two steps of a convex
    curve crosses the level too early (for M/M/1 steps 1 rps apart at mu = 10 the chord
    is 0.05 rps early, log-linear 0.03).
    """
    above = np.flatnonzero(y > level)
    if above.size == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(x[0])
    x0, x1 = x[i - 1], x[i]
    l0, l1, lv = math.log(y[i - 1]), math.log(y[i]), math.log(level)
    return float(x0 + (lv - l0) * (x1 - x0) / (l1 - l0))


BLOCK_S = 30.0
MIN_BLOCKS, MAX_BLOCKS = 10, 50


def _block_draws(
    requests: pl.DataFrame, steps: np.ndarray, metric: str, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[int]]:
    """``(n_boot, len(steps))`` block-bootstrap replicates of each step's P99 from its requests.

    Each step's requests (ok ones with a value) are cut into equal time blocks of about
    ``BLOCK_S`` seconds (10-50 blocks) and resampled with replacement
    (``bearing_lib.limits.bootstrap``). Columns come back NaN for steps without requests.
    """
    from bearing_lib.limits import bootstrap as bs
    need = ["step", "start_s", metric]
    missing = [c for c in need if c not in requests.columns]
    if missing:
        raise SchemaError(f"requests for the P_critical bootstrap lack column(s) {missing}")
    ok = pl.col(metric).is_not_null()
    if "status" in requests.columns:
        ok = ok & (pl.col("status").is_null() | (pl.col("status") == "ok"))
    rows = requests.filter(ok & pl.col("start_s").is_not_null())
    out = np.full((n_boot, steps.size), np.nan)
    nblocks = []
    for k, st in enumerate(steps):
        sub = rows.filter(pl.col("step") == int(st))
        if sub.height == 0:
            nblocks.append(0)
            continue
        t = sub["start_s"].to_numpy().astype(float)
        v = sub[metric].to_numpy().astype(float)
        t0, t1 = float(t.min()), float(t.max())
        nb = int(np.clip(round((t1 - t0) / BLOCK_S), MIN_BLOCKS, MAX_BLOCKS))
        blocks = bs.time_blocks(t, t0, t1 + 1e-9, nb)
        w = bs.block_weights(nb, n_boot, rng)
        out[:, k] = bs.boot_quantile(w, blocks, v, 0.99, nb)
        nblocks.append(nb)
    return out, nblocks


def p_critical_2x(
    curve: pl.DataFrame,
    *,
    metric: str = "latency_ms",
    n_baseline: int = 2,
    n_boot: int = 2000,
    seed: int = 0,
    requests: pl.DataFrame | None = None,
    too_few_note: bool = True,
) -> PCriticalEstimate:
    """The 2x rule for one run x mix: value, CI, censoring, reason and the baseline P99.

    ``too_few_note=False`` leaves out of an unavailable reason the steps' shared cause (too few
    requests for a P99), for a caller that states it once for both methods (:func:`p_critical`).

    With ``requests`` (the steady-window rows of the same run and mix: ``step``,
    ``start_s``, the metric, ``status``) the CI comes from a time-block bootstrap of each
    step's P99, which respects the autocorrelation of latencies under load. Without them
    it is a parametric bootstrap from the curve's order-statistic CIs, which assume
    independent requests and are too narrow near capacity (measured: 14/20 coverage on
    M/M/1 steps; see docs/phases-and-fits.md).
    """
    p99 = f"{metric}_p99"
    _require(curve, ["offered_load", p99])
    g = curve.sort("offered_load")
    base, base_idx = baseline_p99(g, p99, n_baseline)
    keep = _valid_mask(g) & np.isfinite(g[p99].to_numpy().astype(float))
    x = g["offered_load"].to_numpy().astype(float)[keep]
    y = g[p99].to_numpy().astype(float)[keep]
    sig = _sigma_log(g, p99)[keep]
    if base is None or x.size < 2:
        return PCriticalEstimate(value=None, ci95=(None, None), censored="unavailable",
                                 reason=("fewer than 2 valid steps with a P99: no baseline to double"
                                         + _invalid_note(g, p99, x.size, too_few=too_few_note)) if x.size < 2
                                 else "no valid step with a P99 in the lower half of the loads tested: no unloaded "
                                 "baseline to double" + (_too_few_note(g, p99) if too_few_note else ""))
    level = LATENCY_FACTOR * base
    value = _first_crossing(x, y, level)
    if value is None:
        return PCriticalEstimate(
            value=float(x[-1]), ci95=(float(x[-1]), None), censored="above",
            reason=f"P99 never exceeded 2x baseline ({base:.4g} ms) up to {x[-1]:.4g}: P_critical >= that load")
    if value == x[0] and y[0] > level:
        return PCriticalEstimate(value=float(x[0]), ci95=(None, float(x[0])), censored="below",
                                 reason="P99 above 2x baseline at the lowest valid load")
    rng = np.random.default_rng(seed)
    kept = np.flatnonzero(keep)
    base_pos = [int(np.flatnonzero(kept == i)[0]) for i in base_idx]  # baseline steps among the kept ones
    if requests is not None:
        steps = g["step"].to_numpy()[keep] if "step" in g.columns else None
        if steps is None:
            raise SchemaError("the curve needs a 'step' column to match requests for the block bootstrap")
        draws, nblocks = _block_draws(requests, steps, metric, n_boot, rng)
        draws = np.where(np.isfinite(draws), draws, y[None, :])
        how = f"time-block bootstrap of each step's P99 ({min(nblocks)}-{max(nblocks)} blocks per step)"
    else:
        # parametric bootstrap over steps (baseline steps are redrawn with the others)
        s = np.where(np.isfinite(sig), sig, np.nanmax(sig) if np.isfinite(sig).any() else 0.0)
        draws = np.exp(np.log(y)[None, :] + rng.standard_normal((n_boot, y.size)) * s[None, :])
        how = "parametric bootstrap over step P99s from their order-statistic CIs"
    vals = np.full(n_boot, np.nan)
    never = 0
    for b in range(n_boot):
        lvl = LATENCY_FACTOR * draws[b, base_pos].mean()
        v = _first_crossing(x, draws[b], lvl)
        if v is None:
            never += 1
            vals[b] = math.inf
        else:
            vals[b] = v
    # "never crosses" draws are +inf; interpolating between two infinities gives NaN, so
    # quantiles are taken on a finite stand-in and mapped back (an infinite bound = open CI).
    big = np.finfo(float).max
    lo, hi = np.quantile(np.where(np.isinf(vals), big, vals), [0.025, 0.975], method="linear")
    lo, hi = (math.inf if v >= big else v for v in (lo, hi))
    hi_out = None if not np.isfinite(hi) else float(hi)
    x_before = x[x < value].max() if (x < value).any() else x[0]
    note = "" if requests is not None or np.isfinite(sig).all() else " (steps without a P99 CI used the widest CI seen)"
    return PCriticalEstimate(
        value=value,
        ci95=(float(lo), hi_out),
        censored="none",
        reason=f"P99 first exceeds 2x baseline ({base:.4g} ms) between {x_before:.4g}"
        f" and {x[x >= value].min():.4g}; CI by {how} ({n_boot} draws,"
        f" {never} never crossed){note}",
        baseline_p99_ms=base,
    )


def p_critical_breakpoint(
    curve: pl.DataFrame,
    *,
    metric: str = "latency_ms",
    n_grid: int = 400,
    too_few_note: bool = True,
) -> PCriticalEstimate:
    """Segmented-regression breakpoint of log P99 vs load (statsmodels OLS, profile likelihood).

    ``too_few_note`` as in :func:`p_critical_2x`.
    """
    import statsmodels.api as sm
    from scipy.stats import chi2

    p99 = f"{metric}_p99"
    _require(curve, ["offered_load", p99])
    g = curve.sort("offered_load")
    keep = _valid_mask(g) & np.isfinite(g[p99].to_numpy().astype(float)) & (g[p99].to_numpy() > 0)
    x = g["offered_load"].to_numpy().astype(float)[keep]
    y = np.log(g[p99].to_numpy().astype(float)[keep])
    n = x.size
    if n < 5 or np.unique(x).size < 5:
        # the count is of the steps that carry a P99 (a new user read "found 0" of a sweep with six valid steps)
        found = (f"{n} valid step(s) have one" if np.unique(x).size == n else
                 f"{n} valid step(s) have one, at {np.unique(x).size} distinct loads")
        found += _invalid_note(g, p99, n, too_few=too_few_note)
        return PCriticalEstimate(value=None, ci95=(None, None), censored="unavailable", reason=(
            f"a broken-stick fit needs a P99 at >= 5 valid steps of distinct loads; {found}"))
    xs = np.unique(x)
    grid = np.linspace(xs[1], xs[-2], n_grid)
    rss = np.empty(grid.size)
    # The grid search uses numpy's least squares (the same OLS as statsmodels, without
    # building 400 result objects: 4 ms instead of 0.1 s per curve); statsmodels fits the
    # chosen model below and reports its R^2 and slope change.
    for k, xb in enumerate(grid):
        exog = np.column_stack([np.ones(n), x, np.clip(x - xb, 0.0, None)])
        beta, *_ = np.linalg.lstsq(exog, y, rcond=None)
        rss[k] = float(np.sum((y - exog @ beta) ** 2))
    kmin = int(np.argmin(rss))
    rmin = max(rss[kmin], 1e-300)
    inside = grid[n * np.log(np.maximum(rss, 1e-300) / rmin) <= chi2.ppf(0.95, 1)]
    xb = float(grid[kmin])
    exog = np.column_stack([np.ones(n), x, np.clip(x - xb, 0.0, None)])
    fit = sm.OLS(y, exog).fit()
    slope_change = float(fit.params[2])
    lo_open = bool(inside.min() <= grid[0])
    hi_open = bool(inside.max() >= grid[-1])
    c_lo, c_hi = float(inside.min()), float(inside.max())
    cell = ""
    if c_lo == c_hi:
        # the likelihood interval is narrower than the search grid: a zero-width interval is not one; the grid
        # cell around the minimum is what the search can resolve
        k_lo, k_hi = int(np.searchsorted(grid, c_lo)), int(np.searchsorted(grid, c_hi))
        c_lo, c_hi = float(grid[max(k_lo - 1, 0)]), float(grid[min(k_hi + 1, grid.size - 1)])
        cell = "; the likelihood interval is narrower than the search grid: the grid cell around it is given"
    return PCriticalEstimate(
        value=xb,
        ci95=(None if lo_open else c_lo, None if hi_open else c_hi),
        censored="none",
        reason=f"hinge model on log P99, {n} steps; slope change {slope_change:+.3g} per unit load"
        + ("; CI reaches the edge of the searchable range" if (lo_open or hi_open) else "") + cell,
        slope_change=slope_change,
        r_squared=float(fit.rsquared),
    )


def p_critical(
    curve: pl.DataFrame,
    *,
    metric: str = "latency_ms",
    n_baseline: int = 2,
    n_boot: int = 2000,
    seed: int = 0,
    requests: pl.DataFrame | None = None,
) -> PCritical:
    """``P_critical`` for one run x mix by the 2x rule and the breakpoint; trusts the 2x rule.

    Parameters
    ----------
    curve
        Steps of one run and mix (``offered_load``, ``{metric}_p99`` and, for the CI,
        ``{metric}_p99_ci95_lo/hi``; optional ``valid``, ``offered_load_unit``).
    metric
        Latency family (``latency_ms`` by default, ``ttft_ms`` for a TTFT view).
    requests
        Optional steady-window request rows of the same run and mix (``step``,
        ``start_s``, the metric, ``status``): the 2x rule's CI then comes from a
        time-block bootstrap instead of the curve's order-statistic CIs (recommended:
        those assume independent requests and are too narrow near capacity).

    Examples
    --------
    >>> import polars as pl
    >>> c = pl.DataFrame({"offered_load": [1.0, 2, 3, 4, 5, 6],
    ...                   "latency_ms_p99": [100.0, 102, 110, 150, 400, 900]})
    >>> round(p_critical(c).value, 3)
    4.303
    """
    # the steps' shared reason for an unavailable method (too few requests for a P99) is built once here: each
    # unavailable method kept as an alternative carries it, as it does called alone, and the combined reason says it
    # once, after both methods' own reasons (review, round 62: the 2x rule may lack a baseline in the lower half of
    # the loads, where the too-few steps are, while the breakpoint has its five steps above)
    two0 = p_critical_2x(curve, metric=metric, n_baseline=n_baseline, n_boot=n_boot, seed=seed, requests=requests,
                         too_few_note=False)
    brk0 = p_critical_breakpoint(curve, metric=metric, too_few_note=False)
    few = _too_few_note(curve.sort("offered_load"), f"{metric}_p99")
    two, brk = (dataclasses.replace(e, reason=(e.reason or "") + few) if few and e.censored == "unavailable" else e
                for e in (two0, brk0))
    unit = None
    if "offered_load_unit" in curve.columns and curve.height:
        unit = curve["offered_load_unit"].drop_nulls().first()
    if two.censored in ("none", "above", "below"):
        reason = ("2x rule trusted: it is docs/domain.md's working definition and needs no curve model; "
                  + two.reason)
        if two.censored == "none" and brk.value is not None:
            lo, hi = two.ci95
            b = float(brk.value)
            blo, bhi = brk.ci95
            overlap = (hi is None or blo is None or blo <= hi) and (bhi is None or lo is None or bhi >= lo)
            reason += (
                f". The breakpoint ({b:.4g}) {'agrees (CIs overlap)' if overlap else 'disagrees (CIs do not overlap)'}"
            )
        return PCritical(
            value=two.value,
            ci95=two.ci95,
            method="2x_baseline",
            censored=two.censored,
            reason=reason,
            alternatives={"breakpoint": brk},
            unit=unit,
        )
    if brk.value is not None:
        return PCritical(
            value=brk.value,
            ci95=brk.ci95,
            method="breakpoint",
            censored="none",
            reason=f"2x rule unavailable ({two.reason}); breakpoint used: {brk.reason}",
            alternatives={"2x_baseline": two},
            unit=unit,
        )
    two_r, brk_r = two0.reason or "", brk0.reason or ""
    return PCritical(
        value=None,
        ci95=(None, None),
        method="none",
        censored="unavailable",
        reason=f"2x rule: {two_r}; breakpoint: {brk_r}{few}",
        alternatives={"2x_baseline": two, "breakpoint": brk},
        unit=unit,
    )
