"""SLA-constrained load limits (``Q_ult``) per request mix, with bootstrap confidence intervals.

For each run and mix, every step of the load curve (``bearing_lib.limits.curves``) is judged
against the SLA (``bearing_lib.limits.judging``: one typed ``JudgedStep`` per step):

* **fail** when a clause's margin is below zero (a percentile that is unsupported by the
  step's request count still fails when its 95 % lower order-statistic bound — or, for a
  load-point table, a lower reported percentile — already breaks the threshold);
* a step **not steady** (latency or in-flight requests still rising) or **not settled**
  (``bearing_lib.limits.settling``: its latency rises through the whole send window and its last quarter
  breaks a clause) never passes and is no measured failure either: *undetermined* unless a clause fails on
  its window; it is the ``steady state`` pseudo-clause of the estimators;
* **pass** when every clause holds on a supported number and no blocking flag is set
  (``generator_behind``, ``too_short``);
* **undetermined** otherwise (the reasons are listed); such steps are left out.

The **bracket** is ``[last passing load, first (judged) failing load]``. The **point estimate** of a
request trace is, by default (``estimator="model"``), the **model** of every step's evidence
(``bearing_lib.limits.model``, below), as for a load-point table. With ``estimator="pooled"`` it is the **pooled
exceedance estimator**
(``bearing_lib.limits.pooled``): per clause the share of requests counting against it, over every usable
step (a step too small for a percentile on its own still contributes its counts), fitted non-decreasing in
load by weighted isotonic regression, crossing the allowed share; when the pooled requests could not support a
clause on their own, the step-wise estimator: per clause the judged steps' margins after the same isotonic fit
(``limits.pooled.crossing``, ``scipy.optimize.isotonic_regression``), interpolated to zero; when neither can
answer (the pool is too thin and no step passes on its own), the model. The lowest crossing is taken; the
clause that crosses first is **binding**; ``q_ult.estimator`` names the estimator used. A not-steady step
enters as a pseudo-clause ``steady state`` that is never pooled: its crossing is the midpoint between the first
not-steady step and the judged step below it. The estimate is kept within ``[judged step below the last pass,
first fail]``. (A local log-percentile line averaged in, tried in an earlier version, made 120 s oracle tests
look better and 600–1200 s ones far worse: docs/oracle.md.)

A **load-point table** (no requests to count) and a trace with ``estimator="model"`` (the default) get the
**model** of every step's evidence (``bearing_lib.limits.model``: the bad share as a logistic in log load with
step-to-step variability and a load-independent floor, on a grid); its interval is the posterior's.

**Censoring** is said as such: ``≥ X (never failed)`` (``above``), ``< Y (failed at the
lowest load)`` (``below``), ``not_monotone`` when a passing step lies above a failing
one (the isotonic estimate is still given, with that warning), ``no_data`` when no step
can be judged or the requests cannot place the limit (said with what would).

The pooled and step-wise **95 % CI** is a percentile block bootstrap (``bearing_lib.limits.bootstrap``):
requests are resampled within steps, in blocks of time, with a fixed seed; the steps' judgement (which are
usable, which are not steady) is held fixed and only the margins and shares vary. It is widened to the step
grid around the limit (one judged step below the last pass, up to the first fail; with pooled runs, every
run's own); ``q_ult.interval_method`` says so and ``q_ult.bootstrap_ci95`` keeps the bootstrap interval.
``fit_limits(..., pool_runs=True)`` pools runs (:func:`_pool_runs`).

This module reads the inputs, judges (``limits.judging``) and assembles the result; the estimators live in
``limits.estimators`` (their interval in ``limits.interval``, their words in ``limits.statement``) and the
load-independent failure floors in ``limits.failures``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from bearing_lib.common.blend import blended_capacity
from bearing_lib.common.errors import BearingError, InputError, InsufficientDataError, ParameterError, ShapeUnusable
from bearing_lib.common.files import jsonable
from bearing_lib.common.progress import Progress
from bearing_lib.data.engine import Engine, ParquetDataset, open_dataset
from bearing_lib.data.loadpoints import LoadPointTable
from bearing_lib.data.mixes import ALL, Mix, MixSpec, auto_mixes, load_mix_spec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, RequestTrace
from bearing_lib.limits import estimators, failures, followup, judging, model, pooled, settling
from bearing_lib.limits import evidence as ev_mod
from bearing_lib.limits.blended import blended_limit
from bearing_lib.limits.cost import CostAnomaly, CostAnomalyStep
from bearing_lib.limits.curve_row import CurveRow
from bearing_lib.limits.curves import (
    INFO_FLAGS,
    MAX_TRIM_FRACTION,
    QUANTILES,
    TRIM_LATENCIES,
    CurveOptions,
    SaturationCap,
    cap_limit,
    hold_ci_at_cap,
    load_curve,
    min_n_supported,
    qname,
    rate_at,
    rate_read,
    repeat_means,
    saturation_cap,
    spread_at,
    steady_requests,
    step_windows,
)
from bearing_lib.limits.dataset import CURVE_COLUMNS, dataset_facts, run_file_groups, stepped_requests, time_origin_of
from bearing_lib.limits.fits import QueueFit, UslFit
from bearing_lib.limits.judging import JudgedStep
from bearing_lib.limits.recovery import RecoveryResult
from bearing_lib.limits.replicates import ReplicateTable, TraceReplicates
from bearing_lib.limits.resample import trace_replicates
from bearing_lib.limits.result import (
    DEFAULT_ESTIMATOR,
    ESTIMATORS,
    BootstrapInfo,
    Conditions,
    Exceedance,
    LimitsResult,
    MixLimit,
    MixRef,
    PCritical,
    QUlt,
    Skipped,
    Source,
    SourceFinding,
    StatsSettings,
    Step,
)
from bearing_lib.limits.settling import StepSettling, StepSettlings
from bearing_lib.limits.shapes import ShapePriors
from bearing_lib.limits.sla import FAILED_EXPR, OK_EXPR, SLA, check_sla_against, parse_sla
from bearing_lib.limits.statement import ci_text, fmt
from bearing_lib.limits.steady import StepWarmups, mser_by_step
from bearing_lib.limits.steptotals import StepTotals

STEADY_UNUSED = ("end_s", "error", "model", "offered_load", "offered_load_unit")
DEFAULT_MIN_SHARE = 0.05


# --------------------------------------------------------------------------------------
# inputs


def _as_sla(sla: SLA | str | Sequence[str]) -> SLA:
    if isinstance(sla, SLA):
        return sla
    return parse_sla(sla)


def _as_items(data: object) -> list[RequestTrace | LoadPointTable]:
    items = list(data) if isinstance(data, (list, tuple)) else [data]
    if not items:
        raise ParameterError("fit_limits: no data given")
    for it in items:
        if not isinstance(it, (RequestTrace, LoadPointTable)):
            raise ParameterError(
                f"fit_limits takes RequestTrace or LoadPointTable objects (from bearing_lib.load), got "
                f"{type(it).__name__}"
            )
    return items


def _resolve_mixes(mixes: object, items: list, min_share: float, sla: SLA | None = None,
                   notes: list[str] | None = None) -> tuple[MixSpec, str]:
    if isinstance(mixes, MixSpec):
        return mixes, "user"
    if mixes is None or mixes == "none":
        return MixSpec.single(), "none"
    if mixes == "auto":
        traces = [it for it in items if isinstance(it, RequestTrace)]
        if not traces:
            return MixSpec.single(), "none"
        frames = [it.frame.select("input_tokens", "output_tokens", "cached_tokens", "status",
                                  "requested_output_tokens") for it in traces]
        share = max(min_share, 0.1)
        need, typical = _auto_mix_floor(traces, sla)
        if need and typical:
            # a mix must hold enough requests per step for the SLA's percentile (docs/limits.md, "Mixes")
            floor = need / typical
            if floor > 0.5:
                if notes is not None:
                    notes.append(f"mixes=auto gave one mix: a typical step holds {typical} requests and the SLA "
                                 f"needs {need} per step and mix to be judged, so no split of the requests could be "
                                 "judged (longer steps, a lower percentile or --mixes FILE would allow mixes)")
                return MixSpec.single(), "auto"
            if floor > share:
                share = floor
                if notes is not None:
                    notes.append(f"mixes=auto: each mix holds at least {floor:.0%} of the requests, so that a "
                                 f"typical step ({typical} requests) gives every mix the {need} requests the SLA "
                                 "needs to be judged")
        return auto_mixes(pl.concat(frames), min_share=min(share, 1.0)), "auto"
    if isinstance(mixes, (str, Path, list, dict)):
        if isinstance(mixes, str) and not Path(mixes).exists():
            raise ParameterError(f"mixes: expected 'auto', 'none', a MixSpec or a mix file; {mixes!r} is none of them")
        return load_mix_spec(mixes), "user"
    raise ParameterError(
        f"mixes: expected 'auto', 'none', a MixSpec, a dict/list or a file, got {type(mixes).__name__}"
    )


def _auto_mix_floor(traces: list[RequestTrace], sla: SLA | None) -> tuple[int, int]:
    """(requests a step needs per mix to judge every SLA clause, median requests per step).

    A percentile needs :func:`min_n_supported` requests for its CI; a rate clause (error
    rate, goodput) ``ceil(1 / allowance)`` to show a rate within its allowance (the rules of
    ``judge_clause``).
    """
    if sla is None:
        return 0, 0
    needs = [min_n_supported(c.q) for c in sla.percentile_clauses()]
    needs += [math.ceil(1.0 / c.allowed) for c in sla.clauses if c.kind in ("error_rate", "goodput")]
    if not needs:
        return 0, 0
    need = max(needs)
    counts: list[int] = []
    for it in traces:
        f = it.frame.filter(pl.col("step").is_not_null())
        if f.height:
            counts += f.group_by("run_id", "step").len()["len"].to_list()
    if not counts:
        return need, 0
    return need, int(np.median(counts))


def _unique_runs(items: list) -> list:
    """Give every item distinct run ids (a second file reusing ``run`` becomes ``run#2``)."""
    seen: set[str] = set()
    out = []
    for i, it in enumerate(items):
        runs = set(it.frame["run_id"].fill_null("run").unique().to_list())
        clash = runs & seen
        if clash:
            # a suffix none of the earlier runs already carries (a JMeter file's appended runs are named run#2, …)
            k = i + 1
            while any(r + f"#{k}" in seen for r in runs):
                k += 1
            suffix = f"#{k}"
            frame = it.frame.with_columns(pl.col("run_id").fill_null("run") + suffix)
            if isinstance(it, RequestTrace):
                steps = it.steps.with_columns(pl.col("run_id").fill_null("run") + suffix) if it.steps is not None \
                    else None
                it = RequestTrace(frame=frame, provenance=it.provenance, steps=steps)
            else:
                it = LoadPointTable(frame=frame, provenance=it.provenance)
            runs = {r + suffix for r in runs}
        seen |= runs
        out.append(it)
    return out


POOL_STEP_OFFSET = ev_mod.POOL_STEP_OFFSET


def _pool_runs(items: list) -> tuple[list, dict[str, list[str]]]:
    """All request traces' runs as one run (``pooled(run1+run2...)``) for ``fit_limits(..., pool_runs=True)``.

    Run ``k``'s steps are renumbered ``k · POOL_STEP_OFFSET + step``, so each keeps its own steady
    window and its own block bootstrap (runs are never resampled into each other), the recovery
    rule compares steps of the same run only, and the estimators see every step of every run on
    one load axis (steps at the same load merge in the pooled fit). Load-point tables are left alone.
    """
    from dataclasses import replace

    traces = [it for it in items if isinstance(it, RequestTrace)]
    if len(traces) < 2 and not (traces and traces[0].frame["run_id"].fill_null("run").n_unique() > 1):
        return items, {}
    runs: list[str] = []
    frames, step_tables = [], []
    for it in traces:
        f = it.frame.with_columns(pl.col("run_id").fill_null("run"))
        for run in f["run_id"].unique(maintain_order=True).to_list():
            k = len(runs)
            runs.append(str(run))
            frames.append(f.filter(pl.col("run_id") == run).with_columns(pl.col("step") + k * POOL_STEP_OFFSET))
            if it.steps is not None:
                st = it.steps.with_columns(pl.col("run_id").fill_null("run"))
                step_tables.append(st.filter(pl.col("run_id") == run).with_columns(
                    pl.col("step") + k * POOL_STEP_OFFSET))
    name = "pooled(" + "+".join(runs) + ")"
    frame = pl.concat(frames, how="vertical_relaxed").with_columns(pl.lit(name).alias("run_id"))
    steps = pl.concat(step_tables, how="vertical_relaxed").with_columns(pl.lit(name).alias("run_id")) \
        if step_tables else None
    prov = replace(traces[0].provenance, source=" + ".join(t.provenance.source for t in traces))
    pooled_trace = RequestTrace(frame=frame, provenance=prov, steps=steps)
    return [pooled_trace] + [it for it in items if not isinstance(it, RequestTrace)], {name: runs}


# --------------------------------------------------------------------------------------
# the estimator


def _ordered(ends: list[float | None]) -> list[float | None]:
    """Two ends low to high where both are known."""
    lo, hi = ends
    return [hi, lo] if lo is not None and hi is not None and hi < lo else [lo, hi]


def _count_bounds(n: float) -> tuple[float, float]:
    """The exact (Garwood) 95 % interval of a Poisson count ``n`` relative to ``n``: ``(lo, hi)`` multipliers, (1, 1)
    for no count (nothing to widen by: the steps then give the rates as measured)."""
    if not (n > 0 and math.isfinite(n)):
        return 1.0, 1.0
    from scipy.stats import chi2

    return float(chi2.ppf(0.025, 2 * n) / (2 * n)), float(chi2.ppf(0.975, 2 * (n + 1)) / (2 * n))


def _held_statement(statement: str, ci: list[float | None], held: list[float | None]) -> str:
    """``statement`` with its interval's text made ``held``'s (:func:`curves.hold_ci_at_cap`): the estimators write
    it as ``statement.ci_text`` or, a trace's, ``95% CI lo–hi``; a statement with neither (not monotone, a floor
    first) gets the held interval said after it, so it never shows the crossing's own end beside a held ci95."""
    mark = "high end held at the saturated throughput"
    for old in (ci_text(ci[0], ci[1]), f"95% CI {fmt(ci[0])}–{fmt(ci[1])}"):
        if old in statement:
            return statement.replace(old, f"{ci_text(held[0], held[1])}, {mark}", 1)
    return f"{statement}; {ci_text(held[0], held[1])}, {mark}"


def _held_completed(cap: SaturationCap | None, ci: list[float | None] | None) -> list[float | None] | None:
    """The completed-rate CI (:func:`_completed_ci`, read off the curve at the crossing's own ends) held at the
    saturation cap's 95 % upper end, a completed rate already (a review, round 26: reading the held offered end,
    itself a completed rate, off the curve again put SGLang 70b's at 7.23, below the 8.528 req/s the server
    completed; the crossing's own 15.35 reads 8.41)."""
    if ci is None or cap is None or ci[1] is None:
        return ci
    top = max(cap.rps, cap.rps_hi or cap.rps)
    return [ci[0] if ci[0] is None else min(ci[0], top), min(ci[1], top)]


def _completed_ci(value: float | None, ci: list[float | None], achieved: float | None, xs: np.ndarray,
                  ys: np.ndarray, unit: str | None = "rps", ns: np.ndarray | None = None) -> list[float | None] | None:
    """The limit's 95 % CI on the completed basis, each end read off the curve (:func:`curves.rate_at`), held on
    its side of the completed value; None where there is nothing to read. Scaling the offered CI by the value's
    ratio put a lower end below what a passing step completed (SGLang 405b random: 1.83 req/s beside the 2.0 its
    2 rps step completed; a new user's case, round 22): the server's completed rate is not a constant share of the
    offered load near its limit. Repeats at one load: the low end reads their lowest, the high end their highest.

    On a closed loop's axis (``unit`` not ``rps``) a completed rate is a measurement, not a schedule: the ends are
    widened by the Poisson noise of the completions they are read from (``ns``: each step's successful requests of
    the run, the count behind its rate; the exact Garwood interval of the count, conservative where a closed loop
    completes more regularly than Poisson; a repeat's own count, the smallest of two steps an end lies between).
    Without it a saturated server, completing the same ~17.7 req/s at every load of the interval (AIPerf's sweep,
    192–320 users), gave an interval 17.66–17.67 wide."""
    if value is None or achieved is None or ci is None:
        return None
    ux, _, r_lo, r_hi = repeat_means(xs, ys)
    # the low end on the repeats' lowest, the high end on their highest (review finding, round 22: repeats of 16 and
    # 19 req/s at one load gave an interval containing neither)
    lo = rate_at(ci[0], xs, ys, unit, ux_y=(ux, r_lo)) if ci[0] is not None else None
    hi = rate_at(ci[1], xs, ys, unit, ux_y=(ux, r_hi)) if ci[1] is not None else None
    if lo is None and hi is None:
        return None
    # a completed rate that peaks or dips inside the interval: the interval reaches the curve's highest and lowest
    # there, not only its ends' (review finding, round 22: steps completing 2.0, 2.9, 2.5 under a CI of 2.2–3.9)
    lo_x = ci[0] if ci[0] is not None else -math.inf
    hi_x = ci[1] if ci[1] is not None else math.inf
    inside = (ux > lo_x) & (ux < hi_x)
    down, up = np.ones(ux.size), np.ones(ux.size)
    if unit != "rps" and ns is not None:
        ok = ~np.isnan(ys) & ~np.isnan(xs)
        n_at: dict[float, float] = {}
        for x, n in zip(xs[ok], ns[ok], strict=True):  # a repeat's own count: the smallest of the repeats
            if np.isfinite(n) and n > 0:
                n_at[float(x)] = min(n_at.get(float(x), math.inf), float(n))
        bounds = [_count_bounds(n_at.get(float(x), 0.0)) for x in ux]
        down, up = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])

    def at_end(e: float, side: np.ndarray, worst) -> float:  # noqa: ANN001 - min or max
        """The widening of the steps an end is read from: the wider of the nearer two."""
        below, above = side[ux <= e], side[ux >= e]
        got = [v for v in (below[-1] if below.size else None, above[0] if above.size else None) if v is not None]
        return worst(got) if got else 1.0

    if lo is not None:
        lo = min([lo * at_end(float(ci[0]), down, min), *(r_lo[inside] * down[inside])])
    if hi is not None:
        hi = max([hi * at_end(float(ci[1]), up, max), *(r_hi[inside] * up[inside])])
    return [None if lo is None else min(lo, achieved), None if hi is None else max(hi, achieved)]


def _fit_group(
    run_id: str, mix: Mix, rows: list[dict], sla: SLA, tables: bool, reps: ReplicateTable | None,
    totals: StepTotals, n_boot: int, level: float, estimator: str = DEFAULT_ESTIMATOR,
    settle: Mapping[int, StepSettling] | None = None, shapes: ShapePriors | None = None, pooled: bool = False,
) -> MixLimit:
    # the curve's rows typed once (limits.curve_row); the polars rows stay for saturation_cap (limits.curves)
    typed = sorted((CurveRow.of(r) for r in rows),
                   key=lambda r: (r.offered_load if r.offered_load is not None else math.inf, r.step))
    # steps sorted by the load the server saw (achieved send rate when the generator fell behind)
    def judge(ignore: frozenset[str]) -> list[JudgedStep]:
        return judging.judge(typed, sla, tables, reps, level, ignore, settle)

    judged = judge(frozenset())
    floors = failures.clause_floors(judged, sla, tables, reps)
    broken = frozenset(f.clause for f in floors if f.breaks_clause)
    if broken:  # the steps are judged on the other clauses: the floor is said once, not as every step's failure
        judged = judge(broken)
    units = {r.offered_load_unit for r in typed if r.offered_load_unit}
    unit = units.pop() if len(units) == 1 else None
    notes: list[str] = []
    if len(units) > 0:
        notes.append("steps mix offered-load units; no limit can be placed on one axis")
    # the steps the estimators read: judged (pass, fail, too close to call) and the not-steady ones, undetermined
    # for the bracket but the steady-state pseudo-clause of the estimators
    det = [j for j in judged if j.status in ("pass", "fail") or j.close or j.not_steady]
    passes = [j.x for j in det if j.status == "pass"]
    fails = [j.x for j in det if j.status == "fail"]
    first_fail = min(fails) if fails else None
    last_pass = max((x for x in passes if first_fail is None or x < first_fail), default=None)
    contradict = [j for j in det if j.status == "pass" and first_fail is not None and j.x > first_fail]
    u = unit or "load"
    earlier, earlier_source = None, None
    if shapes is not None:
        found, why = shapes.match(run_id, mix.name)
        earlier, earlier_source = dict(found), shapes.source
        notes += [why] if why else []
    # each step's completed rate over every mix: a closed loop's cycle time is all its users over it (evidence)
    step_rates = {int(j.row.step): t.throughput_rps for j in judged
                  if (t := totals.total(j.row.step)) is not None and t.throughput_rps}
    if tables or estimator == "model":
        est = estimators.model_limit(judged, det, sla, tables, floors, level, n_boot, u, passes, fails, contradict,
                                     first_fail, notes, reps, earlier, earlier_source, pooled, step_rates)
    else:
        est = estimators.trace_limit(judged, det, sla, reps, floors, level, n_boot, unit, u, passes, fails,
                                     contradict, first_fail, last_pass, notes)
        if est is None:
            usable = judging.usable_steps(judged, tables)
            short = "; ".join(f"{text} has {have:,} of the {need:,} that would judge it at 95% with none bad"
                              for text, have, need
                              in estimators.pool_shortfall(usable, sla, {f.clause for f in floors if f.breaks_clause}))
            notes.append(f"the requests of the usable steps cannot judge every clause on their own ({short}) and no "
                         "step passes on its own: the model of every step's counts (limits.model) gives the limit and "
                         "its interval")
            est = estimators.model_limit(judged, det, sla, tables, floors, level, n_boot, u, passes, fails,
                                         contradict, first_fail, notes, reps, earlier, earlier_source, pooled,
                                         step_rates)
    value, ci, censored, statement = est.value, est.ci, est.censored, est.statement
    cap = saturation_cap(rows, totals)  # an rps limit above the saturated throughput is held at it (curves)
    value, ci, censored, statement, cap_note = cap_limit(cap, value, ci, censored, statement, unit)
    notes += [cap_note] if cap_note else []
    crossing_ci = ci  # the crossing's own interval: its completed-rate reading (below) is not held
    held, held_note = hold_ci_at_cap(cap, value, ci, unit)  # an uncapped crossing's CI held at the cap's upper end
    if held_note:
        notes.append(held_note)
        statement = _held_statement(statement, ci, held)
        ci = held
    binding, replicates, interval, estimator, pool = est.binding, est.replicates, est.interval, est.estimator, est.pool
    if (held_note or cap_note) and cap is not None and replicates is not None and unit == "rps":
        # the draws a blend or a comparison reads are held where ci95 is (no load above what the server completes
        # is sustained): a review found a blend of this one held mix reading the crossing's own 15.40 beside 8.83
        replicates = np.minimum(np.asarray(replicates, float), max(cap.rps, cap.rps_hi or cap.rps))
    if cap_note is not None and cap is not None and interval:
        # the interval is the crossing's held at or below the cap's own (curves.cap_limit): say so, as ci95 is not the
        # crossing's interval any more (a new user read the credible interval's words beside a clipped ci95)
        interval += ("; held at or below the saturated throughput's 95% CI "
                     f"({'–' if cap.rps_lo is None else f'{cap.rps_lo:.4g}'} to "
                     f"{'–' if cap.rps_hi is None else f'{cap.rps_hi:.4g}'} rps), as the limit is capped there")
    if held_note and interval:
        interval += f"; its high end held at the saturated throughput's 95% upper end ({fmt(ci[1])} rps)"
    resolution = followup.resolution_of(value, ci, censored, det)
    if resolution is not None and resolution.coarse:
        notes.append(resolution.statement)
    skipped_steps = [j for j in judged if j.status in ("undetermined", "excluded")]
    # a step the estimator read (its counts, though too few for a verdict of its own) is not left out: the report's
    # "steps (left out of the fit)" column counts the same way (a new user read "left out" here beside "(0)" there)
    read = [j for j in skipped_steps if any(j is p for p in pool)]
    out = len(skipped_steps) - len(read)
    if out:
        notes.append(f"{out} step(s) could not be judged and were left out (see each step's reasons)")
    if read:
        notes.append(f"{len(read)} step(s) could not be judged on their own, but the fit reads their counts "
                     "(see each step's reasons)")
    xs_all = np.array([j.x if j.x is not None and math.isfinite(j.x) else np.nan for j in judged])
    keep = ~np.isnan(xs_all)
    # each step's successful requests of the run (the count behind tot_rps): the mix's, scaled by the run's completed
    # rate over the mix's (review finding, round 22: the mix's own count widened a 10 % mix's interval √10 times)
    step_tot = [totals.total(j.row.step) for j in judged]  # None (a step not in the run's curve): NaN
    n_ok_all = np.array([float(j.row.n_ok) * (t.throughput_rps / j.row.throughput_rps)
                         if j.row.n_ok is not None and t is not None and t.throughput_rps and j.row.throughput_rps
                         else float(j.row.n_ok) if j.row.n_ok is not None else np.nan
                         for j, t in zip(judged, step_tot, strict=True)])
    thr_mix = np.array([j.row.throughput_rps if j.row.throughput_rps is not None else np.nan
                        for j in judged])
    tot_rps = np.array([np.nan if t is None else t.throughput_rps for t in step_tot], float)
    tot_tok = np.array([np.nan if t is None else t.output_tokens_per_s for t in step_tot], float)
    tot_rps, tot_tok = np.nan_to_num(tot_rps, nan=np.nan), np.nan_to_num(tot_tok, nan=np.nan)
    thr_at, thr_loads = rate_read(value, xs_all[keep], tot_rps[keep], unit)
    # a capped limit is the most the server completed (curves.saturation_cap, a completed rate): that is its
    # throughput, not the rate interpolated at the same number on the offered axis (SGLang's 405b random run read
    # 3.186 req/s at a cap of 3.723, below the 3.376 its passing 4 rps step completed; round 21); its token rate and
    # the mix's rate are scaled with it, so tokens per request stay those interpolated there
    scale = cap.rps / thr_at if cap_note is not None and cap is not None and thr_at else 1.0

    def scaled(v: float | None) -> float | None:
        return None if v is None else v * scale

    low: list[str] = []
    if value is not None and thr_at is not None and cap_note is None and censored != "below":
        # a step the achieved rate is read from (thr_loads, curves.rate_read: the steps either side of the limit
        # that have a rate) whose completed rate is a lower bound (curves.busy_span_rate) makes the limit's achieved
        # rate one too: typed (q_ult.achieved_lower_bound) and said (vLLM DeepSeek-V2.5 at 16 rps, 1.716 req/s over
        # its busy span). Not for a capped limit (its rate is the cap step's) nor an upper bound ("< x": an upper
        # bound on the limit read through a lower bound on the rate bounds nothing)
        low = sorted({f"{j.x:g}" for j in judged if "rate_lower_bound" in j.row.flags and j.x in thr_loads})
        if low:
            notes.append(f"the achieved rate at the limit ({thr_at:.4g} req/s) is read from the step(s) at "
                         f"{', '.join(low)} {u} whose completed rate is a lower bound (their send window was shorter "
                         "than a typical request, so it is read over the busy span): the server may have completed "
                         "more")

    q_ult = {
        "value": value,
        "unit": unit,
        "ci95": ci,
        "bracket": [last_pass, first_fail],
        "censored": censored,
        "statement": statement,
        "throughput_rps": scaled(thr_at),
        "tokens_per_s": scaled(rate_at(value, xs_all[keep], tot_tok[keep], unit)),
        "mix_throughput_rps": scaled(rate_at(value, xs_all[keep], thr_mix[keep], unit)),
        "throughput_range_rps": spread_at(value, xs_all[keep], tot_rps[keep], unit),
        # a capped limit's interval is the cap's own, already of completed requests (curves.cap_limit)
        "throughput_ci95_rps": (None if cap_note is not None or censored not in ("none", "not_monotone")
                                or unit not in ("rps", "concurrency") else
                                _held_completed(cap, _completed_ci(value, crossing_ci, scaled(thr_at), xs_all[keep],
                                                                   tot_rps[keep], unit, n_ok_all[keep]))),
        # the bracket's loads are steps: their own completed rates (the run's, as throughput_rps), low to high (a
        # saturated closed loop's failing step can complete less than its last passing one: AIPerf's 320 users
        # 17.65 req/s, 128 users 18.10)
        "throughput_bracket_rps": (None if cap_note is not None or unit not in ("rps", "concurrency") else
                                   _ordered([rate_at(b, xs_all[keep], tot_rps[keep], unit)
                                             for b in (last_pass, first_fail)])),
        "saturated_rps": cap.rps if cap is not None else None,
        "capped": cap_note is not None,
        "achieved_lower_bound": bool(low),
        "method": _method(tables, n_boot, estimator),
        "estimator": estimator,
        "interval_method": interval,
        "bootstrap_ci95": est.bootstrap_ci,
    }
    steps = []
    for j in judged:
        r = j.row
        steps.append({
            "step": r.step, "offered_load": r.offered_load, "load_axis": j.x,
            "throughput_rps": r.throughput_rps, "concurrency_mean": r.concurrency_mean,
            "output_tokens_per_s": r.output_tokens_per_s, "n_requests": r.n_requests, "n_ok": r.n_ok,
            "error_rate": r.error_rate, "duration_s": r.duration_s, "phase": r.phase,
            "valid": _valid_for_sla(j.flags, sla), "status": j.status, "flags": list(j.flags),
            "reasons": j.reasons, "sla_margin": j.sla_margin, "margins": j.margins,
            "recovery_step": bool(j.recovery), "settling": j.settling,
            "observed": _observed(r, sla),
            "exceedances": {c.text: Exceedance(bad=r.count(i).bad, of=r.count(i).n)
                            for i, c in enumerate(sla.clauses)} if r.has_counts else None,
            "pooled": any(j is p for p in pool),
            "stats": {f"{m}_{q}": r.q(m, q).value for m, q in _STAT_COLUMNS if r.q(m, q).value is not None},
        })
    if resolution is not None and resolution.coarse:
        resolution.followup = followup.attach_followup(run_id, mix, q_ult, steps, notes)
    # the typed diagnostics (settling, exceedances) go in as they are; the rest is made JSON-clean (NaN -> None)
    steps = [Step(**jsonable({k: v for k, v in st.items() if k not in _TYPED_STEP_PARTS}),
                  **{k: st[k] for k in _TYPED_STEP_PARTS}) for st in steps]
    # a tool that counts completed requests only (GenAI-Perf's export, SGLang's summary) leaves n_requests unknown:
    # the completed count stands in (it read 0)
    n_req = int(sum(int(r.n_requests if r.n_requests is not None else (r.n_ok or 0) + (r.n_errors or 0))
                    for r in typed))
    lim = MixLimit(run_id=run_id, mix=MixRef.of(mix), share=0.0, n_requests=n_req,
                   q_ult=QUlt(**jsonable(q_ult), resolution=resolution),
                   binding=binding, steps=steps, notes=notes, failure_floors=floors, shapes=est.shapes)
    lim.attach_replicates(replicates)
    return lim


_TYPED_STEP_PARTS = ("settling", "exceedances")
_STAT_COLUMNS = tuple((m, q) for m in ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")
                      for q in ("p50", "p90", "p95", "p99"))


def _method(tables: bool, n_boot: int, estimator: str = model.ESTIMATOR) -> str:
    """What gave the value and its interval (``q_ult.method``)."""
    if estimator == model.ESTIMATOR:
        what = ("the tool's reported percentiles and counts per load" if tables
                else "every usable step's request counts")
        return f"{estimator}, from {what}; interval: the model's posterior of the crossing"
    if estimator == pooled.ESTIMATOR:
        return f"{estimator}; {n_boot} block-bootstrap resamples of the pooled crossing"
    return f"isotonic margin interpolation; {n_boot} block-bootstrap resamples of the isotonic crossing"


def _valid_for_sla(flags: list[str] | None, sla: SLA) -> bool:
    """A step is valid for this SLA when no flag that matters to it is set.

    The curve is SLA-agnostic and flags every percentile a step is too small for
    (``too_few_for_p99`` ...); only the percentiles the SLA's clauses use count here, so a
    200-request step judged on a P95 is not called invalid for lacking a P99.
    """
    used = {f"too_few_for_{qname(c.q)}" for c in sla.clauses if c.kind == "percentile"}
    return not any(
        f not in INFO_FLAGS and (not f.startswith("too_few_for_") or f in used) for f in (flags or [])
    )


def _observed(r: CurveRow, sla: SLA) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for i, c in enumerate(sla.clauses):
        if c.kind == "percentile":
            out[c.text] = r.q(c.metric, qname(c.q)).value
        elif c.kind == "error_rate":
            out[c.text] = r.error_rate
        else:
            out[c.text] = r.goodput_share(i)
    return out


def _goodput_columns(steady: pl.DataFrame | pl.LazyFrame, sla: SLA) -> pl.DataFrame | None:
    exprs = []
    for i, c in enumerate(sla.clauses):
        if c.kind == "goodput":
            exprs.append(c.observed_expr().alias(f"_goodput_{i}"))
    if not exprs:
        return None
    return steady.lazy().group_by("run_id", "step", "mix").agg(exprs).collect()


# --------------------------------------------------------------------------------------
# phases, P_critical, model fits, cost anomaly index, T_recover (bearing_lib.limits.phases, fits, cost, recovery)


def _with_phases(part: pl.DataFrame, metric: str) -> pl.DataFrame:
    """``part`` with ``phase`` and ``phase_reason`` (``bearing_lib.limits.phases``), first latency metric."""
    from bearing_lib.limits.phases import classify_phases

    try:
        return classify_phases(part.drop("phase"), metric=metric)
    except BearingError as exc:
        return part.with_columns(pl.lit(f"phases not classified: {exc}").alias("phase_reason"))


def _safe(fn, unavailable, *args, **kwargs):  # noqa: ANN001, ANN202 - fn's own result type
    """``fn(*args, **kwargs)``, or ``unavailable(reason)`` when the data cannot support it."""
    try:
        return fn(*args, **kwargs)
    except BearingError as exc:
        return unavailable(str(exc))


def _enrich(lim: MixLimit, part: pl.DataFrame, metric: str, seed: int, requests: pl.DataFrame | None,
            sla: SLA) -> None:
    from bearing_lib.limits.cost import cost_anomaly_index
    from bearing_lib.limits.fits import fit_queueing_curve, fit_usl_curve
    from bearing_lib.limits.phases import p_critical

    recovery = [st.step for st in lim.steps if st.recovery_step]
    g = _with_phases(part.filter(~pl.col("step").is_in(recovery)).sort("offered_load"), metric)
    finite = g.filter(pl.col("offered_load").is_finite())
    # the time-block bootstrap CI (requests given): docs/phases-and-fits.md measured 20/20
    # coverage for it against 14/20 for the parametric one used without requests
    lim.p_critical = _safe(p_critical, lambda why: PCritical(available=False, reason=why), finite,
                           metric=metric, seed=seed, requests=requests)
    lim.usl = _safe(fit_usl_curve, lambda why: UslFit(False, why), finite)
    lim.queueing = _safe(fit_queueing_curve, lambda why: QueueFit(False, why), finite, metric=metric, stat=None)
    by_step = {r["step"]: r for r in g.to_dicts()}
    for st in lim.steps:
        st.phase = by_step.get(st.step, {}).get("phase")
        st.phase_evidence = by_step.get(st.step, {}).get("phase_evidence")
        st.phase_reason = by_step.get(st.step, {}).get("phase_reason") or (
            "recovery step: not part of the load curve" if st.recovery_step else None)
    if requests is None or requests.height == 0:
        lim.cost_anomaly_index = CostAnomaly(available=False,
                                             reason="needs per-request data (a load-point table has none)")
        return
    cai = cost_anomaly_index(requests, sla.request_violates(), by=("run_id", "step", "mix")).sort("step")
    values = {r["step"]: r for r in cai.to_dicts()}
    for st in lim.steps:
        cai_v = values.get(st.step, {}).get("cost_anomaly_index")
        st.cost_anomaly_index = None if cai_v is None or not math.isfinite(cai_v) else float(cai_v)
    lim.cost_anomaly_index = CostAnomaly(
        by_step=[CostAnomalyStep(int(r["step"]), by_step.get(r["step"], {}).get("offered_load"),
                                 r["cost_anomaly_index"], r["n_wasted"]) for r in cai.to_dicts()],
        compute_model=cai["compute_model"][0] if cai.height else None,
        wasted="failed, timed out, or above a latency bound of any SLA clause (SLA.request_violates)",
    )


def _describe_floors(lim: MixLimit, steady_part: pl.DataFrame, trace: RequestTrace) -> None:
    """Say what the requests behind a failure floor share (``limits.failures.describe_failures``), from the
    run's requests (the error texts from the trace itself: the steady frame drops them)."""
    frame = trace.frame.filter(pl.col("run_id").fill_null("run") == lim.run_id) if "run_id" in trace.frame.columns \
        else trace.frame
    text = failures.describe_failures(frame if frame.height else steady_part, FAILED_EXPR, OK_EXPR)
    if not text:
        return
    for f in lim.failure_floors:
        before = f.statement
        f.shared_by = text
        f.statement = f"{before}; the failed requests: {text}"
        lim.notes = [n.replace(before, f.statement) for n in lim.notes]
        if lim.q_ult is not None:
            lim.q_ult.statement = lim.q_ult.statement.replace(before, f.statement, 1)


def _recovery(trace: RequestTrace, sla: SLA) -> dict[str, RecoveryResult]:
    """``T_recover`` per run, on all the run's requests (the SLA over every mix, as a monitor sees it)."""
    from bearing_lib.limits.recovery import t_recover

    out: dict[str, RecoveryResult] = {}
    f = trace.frame.lazy().with_columns(pl.col("run_id").fill_null("run")).filter(pl.col("step").is_not_null())
    # memory: the loads per run first (a small group-by); a run's rows are copied only when its load drops
    loads_all = f.group_by("run_id", "step", maintain_order=True).agg(
        pl.col("offered_load").first(), pl.col("start_s").min()).collect()
    for (run,), loads in loads_all.partition_by(["run_id"], as_dict=True, maintain_order=True).items():
        loads = loads.sort("start_s")
        dropped = (loads["offered_load"].diff() < 0).any()
        if not dropped:
            out[str(run)] = RecoveryResult(None, "none", "no drop from an overloaded step to a lower load in this run")
            continue
        out[str(run)] = _safe(t_recover, lambda why: RecoveryResult(None, "none", why, available=False),
                              f.filter(pl.col("run_id") == run).collect(), sla.evaluate_window)
    return out


# --------------------------------------------------------------------------------------
# public entry


def _recovery_of(it: RequestTrace, items: list, pooled_runs: dict[str, list[str]],
                 sla: SLA) -> dict[str, RecoveryResult]:
    """``T_recover`` per run of ``it``; a pooled run takes the first of its runs that has one."""
    recovery = _recovery(it, sla)
    for name, runs in pooled_runs.items():  # T_recover is a property of one run: the first that has one
        if name in recovery:
            per_run = {**{k: v for o in items if isinstance(o, RequestTrace) for k, v in _recovery(o, sla)
                          .items()}}
            recovery[name] = next((per_run[r] for r in runs if r in per_run and per_run[r].value_s is not None),
                                  per_run.get(runs[0], recovery[name]))
    return recovery


def _run_notes(lim: MixLimit, n_steps: int, all_steps: int, pooled_runs: dict[str, list[str]]) -> None:
    """A mix missing from some of its run's steps, and the runs a pooled limit came from."""
    if n_steps < all_steps:
        lim.notes.append(f"the mix appears in {n_steps} of the run's {all_steps} steps")
    if lim.run_id in pooled_runs:
        runs = pooled_runs[lim.run_id]
        for st in lim.steps:
            st.source_run = runs[int(st.step) // POOL_STEP_OFFSET]
        lim.notes.append(f"pooled {len(runs)} runs ({', '.join(runs)}) into one limit: steps at the same "
                         "load pooled in the estimate, each run's steps resampled on their own")


@dataclass
class _TraceInputs:
    """What a request trace hands the fit: its curve (with goodput and pooled counts), the steady-window
    requests (lazy), MSER warm-ups, the whole-step settling tests and the bootstrap replicates."""

    curve: pl.DataFrame
    steady: pl.LazyFrame | None
    warmups: StepWarmups
    settle: StepSettlings
    reps: TraceReplicates | None  # None: no bootstrap (n_boot 0)


def sla_curve(trace: RequestTrace, sla: SLA | str | Sequence[str], mixes: MixSpec | None = None, *,
              options: CurveOptions | None = None) -> pl.DataFrame:
    """The load curve of a request trace as :func:`fit_limits` judges it: :func:`~bearing_lib.limits.curves.load_curve`
    with the SLA's own quantiles added and, per clause ``i`` of the SLA, the pooled counts ``_pk_{i}`` (bad) /
    ``_pn_{i}`` (eligible; ``limits.pooled``) and for a goodput clause its observed share ``_goodput_{i}``
    (docs/interfaces.md §3; ``CurveRow.of`` reads a row). ``mixes`` None: one mix of every request."""
    if not isinstance(trace, RequestTrace):
        raise ParameterError(f"sla_curve: expected a RequestTrace (per-request data to count against the SLA), got "
                             f"{type(trace).__name__}; a load-point table's curve is curves.load_curve(table)")
    sla_obj = _as_sla(sla)
    spec = mixes if mixes is not None else MixSpec.single()
    check_sla_against(sla_obj, [trace], mixes=spec)  # one error for every clause the trace cannot evaluate
    windows = step_windows(trace, options)
    curve = load_curve(trace, spec, extra_quantiles=_extra_quantiles(sla_obj), options=options, windows=windows)
    return _with_sla_columns(curve, steady_requests(trace, windows, spec).drop(STEADY_UNUSED, strict=False),
                             sla_obj)


def _extra_quantiles(sla_obj: SLA) -> tuple[float, ...]:
    """The SLA's percentile levels the load curve does not carry by default (``curves.QUANTILES``)."""
    return tuple(c.q for c in sla_obj.percentile_clauses() if qname(c.q) not in QUANTILES)


def _with_sla_columns(curve: pl.DataFrame, steady: pl.DataFrame | pl.LazyFrame, sla_obj: SLA) -> pl.DataFrame:
    """The curve joined with the SLA's goodput shares and pooled counts per (run, step, mix)."""
    gp = _goodput_columns(steady, sla_obj)
    if gp is not None:
        curve = curve.join(gp, on=["run_id", "step", "mix"], how="left")
    return curve.join(pooled.count_columns(steady, sla_obj), on=["run_id", "step", "mix"], how="left")


def _prepare_trace(it: RequestTrace, spec: MixSpec, sla_obj: SLA, extra_q: tuple[float, ...],
                   options: CurveOptions | None, n_boot: int, rng: np.random.Generator) -> _TraceInputs:
    windows = step_windows(it, options)
    curve = load_curve(it, spec, extra_quantiles=extra_q, options=options, windows=windows)
    # memory: only the columns the request-level steps read (goodput, pooled counts, MSER, bootstrap,
    # P_critical, cost index); the send window's other columns stay in the trace
    steady = steady_requests(it, windows, spec).drop(STEADY_UNUSED, strict=False)
    curve = _with_sla_columns(curve, steady, sla_obj)
    has_ttft = bool(steady.select(pl.col("ttft_ms").is_not_null().any()).collect().item())
    m_metric = "ttft_ms" if has_ttft else "latency_ms"
    warmups = mser_by_step(steady, m_metric)
    settle = settling.settling_by_step(it, spec, sla_obj, m_metric)
    reps = trace_replicates(steady, windows, sla_obj, n_boot, rng) if n_boot > 0 else None
    return _TraceInputs(curve, steady, warmups, settle, reps)


def check_shape_from(data: object, estimator: str, engine: str | None) -> None:
    """A :class:`ParameterError` when an earlier test's shape cannot inform this fit, whatever the shape: ``data``
    read on an engine (the model runs in memory), or request traces fitted with the pooled estimator (no shape)."""
    if engine or isinstance(data, (str, Path, ParquetDataset)):
        raise ParameterError("shape_from (--shape-from) informs the model, which runs in memory; it does not combine "
                             "with an engine")
    if estimator != "model" and not _all_tables(data):
        raise ParameterError("shape_from (--shape-from) informs the model's shape, and request traces fitted with "
                             "the pooled estimator have none: use the model estimator (the default: leave out "
                             "--estimator pooled; estimator='model' in Python), or leave shape_from out")


def _all_tables(data: object) -> bool:
    """True when every input is a load-point table (the model is their estimator whatever ``estimator`` says)."""
    items = data if isinstance(data, Sequence) and not isinstance(data, str) else [data]
    return bool(items) and all(isinstance(i, LoadPointTable) for i in items)


def _fit_input(it: RequestTrace | LoadPointTable, items: list, spec: MixSpec, sla_obj: SLA,
               extra_q: tuple[float, ...], options: CurveOptions | None, n_boot: int, rng: np.random.Generator,
               seed: int, level: float, estimator: str, min_share: float, metric: str, mix_by_name: dict[str, Mix],
               pooled_runs: dict[str, list[str]], notes: list[str], progress: Progress | None,
               prep: _TraceInputs | None = None,
               shapes: ShapePriors | None = None) -> tuple[pl.DataFrame, list[MixLimit], list[Skipped]]:
    """One input of :func:`fit_limits`: its load curve, the limit of each (run, mix) group and the groups skipped.
    ``prep`` given: the input's curve and replicates are already made (the statistics path, :func:`_fit_stats`)."""
    tables = isinstance(it, LoadPointTable)
    if progress is not None:
        progress.start(None, f"load curve and bootstrap of {it.provenance.source}")  # no count: a pulsing bar
    if prep is not None:
        curve = prep.curve
    elif tables:
        curve = load_curve(it, extra_quantiles=extra_q, options=options)
        if len(spec.mixes) > 1 or spec.mixes[0].name != ALL:
            notes.append(f"{it.provenance.source}: a load-point table has no per-request data; all its "
                         "requests form one mix 'all'")
    else:
        prep = _prepare_trace(it, spec, sla_obj, extra_q, options, n_boot, rng)
        curve = prep.curve
    recovery = {} if tables or (prep is not None and prep.steady is None) else _recovery_of(it, items, pooled_runs,
                                                                                             sla_obj)
    # a rate no mix of the step knows stays unknown (polars' sum of nulls is 0: a Locust step without token counts
    # read 0 tokens/s at the limit)
    totals_df = curve.group_by("run_id", "step").agg(
        *[pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c)
          for c in ("throughput_rps", "output_tokens_per_s")], pl.col("n_requests").sum()
    )
    run_n = dict(curve.group_by("run_id").agg(pl.col("n_requests").sum()).iter_rows())
    groups = curve.partition_by(["run_id", "mix"], as_dict=True, maintain_order=True)
    if progress is not None:
        progress.start(len(groups), f"fitting the run x mix groups of {it.provenance.source}")
    limits: list[MixLimit] = []
    skipped: list[Skipped] = []
    for (run, mix), part in groups.items():
        n_mix = int(part["n_requests"].sum())
        if tables:  # one mix per run; counts may be missing from a tool summary
            share = 1.0
        else:
            share = n_mix / run_n[run] if run_n.get(run) else 0.0
        if share < min_share:
            skipped.append(Skipped(run_id=str(run), mix=str(mix), share=share, n_requests=n_mix,
                                   reason=f"holds {share:.1%} of the run's requests (< min_share {min_share:.0%})"))
        else:
            lim = _fit_run_mix(it, prep, run, mix, mix_by_name.get(mix, Mix(mix, {})), part, totals_df, sla_obj,
                               n_boot, level, estimator, metric, seed, share, shapes,
                               pooled=str(run) in pooled_runs)
            lim.t_recover = recovery.get(str(run))
            lim.t_recover_s = lim.t_recover.value_s if lim.t_recover else None
            _run_notes(lim, part.height, totals_df.filter(pl.col("run_id") == run).height, pooled_runs)
            limits.append(lim)
        if progress is not None:
            progress.advance(1)
    return curve, limits, skipped


def _fit_run_mix(it: RequestTrace | LoadPointTable, prep: _TraceInputs | None, run: object, mix: object,
                 mix_obj: Mix, part: pl.DataFrame, totals_df: pl.DataFrame, sla_obj: SLA, n_boot: int, level: float,
                 estimator: str, metric: str, seed: int, share: float,
                 shapes: ShapePriors | None = None, pooled: bool = False) -> MixLimit:
    """The limit of one (run, mix) group of an input (``prep`` None for a load-point table), with its failure
    floors described, its curve enriched and each step's MSER warm-up."""
    tables = prep is None
    # no bootstrap when none was asked for (n_boot 0) or the input has no steady request to resample; a group
    # the bootstrap did not reach (no steady request of it) has no table
    reps = None if prep is None or prep.reps is None or prep.reps.empty else prep.reps
    tot = StepTotals.of_frame(totals_df.filter(pl.col("run_id") == run))
    lim = _fit_group(str(run), mix_obj, part.to_dicts(), sla_obj, tables,
                     None if reps is None else reps.table(run, mix), tot, 0 if reps is None else n_boot, level,
                     estimator, None if prep is None else prep.settle.of(run, mix), shapes, pooled)
    lim.share = share
    if prep is None or prep.steady is None:
        _enrich(lim, part, metric, seed, None, sla_obj)
        if prep is not None:  # the statistics path (_fit_stats): no request is held
            lim.cost_anomaly_index = CostAnomaly(available=False, reason=STATS_NO_REQUESTS)
        return lim
    steady = prep.steady
    if lim.failure_floors:
        _describe_floors(lim, steady.filter((pl.col("run_id") == run) & (pl.col("mix") == mix)).collect()
                         if isinstance(steady, pl.LazyFrame) else
                         steady.filter((pl.col("run_id") == run) & (pl.col("mix") == mix)), it)
    _enrich(lim, part, metric, seed, steady.filter((pl.col("run_id") == run) & (pl.col("mix") == mix)).collect(),
            sla_obj)
    for st in lim.steps:
        st.mser5 = prep.warmups.of(run, st.step)
    return lim


def fit_limits(
    data: RequestTrace | LoadPointTable | Sequence[RequestTrace | LoadPointTable],
    sla: SLA | str | Sequence[str],
    mixes: str | MixSpec | Path | list | dict | None = "auto",
    weights: Mapping[str, float] | str | Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    min_share: float = DEFAULT_MIN_SHARE,
    level: float = 0.95,
    options: CurveOptions | None = None,
    pool_runs: bool = False,
    engine: str | None = None,
    scheduler: str | None = None,
    estimator: str = DEFAULT_ESTIMATOR,
    progress: Progress | None = None,
    shape_from: LimitsResult | str | Path | None = None,
    shape_required: bool = True,
) -> LimitsResult:
    """The highest load each mix carries while the SLA holds, with a 95 % CI.

    Parameters
    ----------
    data
        One or more stepped load tests: :class:`RequestTrace` (bootstrap CIs) or
        :class:`LoadPointTable` (tool-reported percentiles; no CI).
    sla
        An :class:`SLA` or clause text(s), e.g. ``"p99(ttft) <= 500ms and error_rate <= 0.5%"``.
    mixes
        ``"auto"`` (log-scale bins of input/output length and cache-hit ratio, merged to
        ≥ 10 % shares), ``"none"`` (one mix), a :class:`MixSpec`, a list/dict of mix
        definitions, or a YAML/JSON file of them.
    weights
        Production weights per mix name (or ``"run/mix"``), or a YAML/JSON file of
        them: adds the blended limit ``1 / Σ w_m / Q_m``.
    n_boot, seed
        Bootstrap resamples (0 = none) and the seed of the one random generator.
    min_share
        (run, mix) groups holding less than this share of their run's requests are
        skipped (listed in ``skipped``).
    pool_runs
        Pool the runs of all request traces (repeats and follow-ups of the same service) into
        one limit per mix: steps at the same load pooled, each run's steps bootstrapped on
        their own (:func:`_pool_runs`); said in the mix's notes.
    estimator
        For request traces: ``"model"`` (default, :data:`DEFAULT_ESTIMATOR`) or ``"pooled"`` (see
        :data:`ESTIMATORS`); load-point tables always use the model.
    progress
        A terminal bar (:class:`bearing_lib.common.progress.Progress`) or None: per input, a bar without a
        count while its load curve and bootstrap replicates are computed, then one tick per (run, mix) group
        fitted or skipped.
    shape_from
        An earlier test of the same service (its :class:`LimitsResult` or limits JSON, from the model: a load-point
        table or ``estimator="model"``): each mix's clauses take that test's steepness and step-to-step variability
        as the prior of their own, where this test's steps favour it (``limits.shapes``; docs/oracle.md, round 13).
        Needs the model: with request traces, ``estimator="model"`` (the default).
    shape_required
        True (default): an earlier result that carries no shape, or that was fitted on the same files as this test,
        is a :class:`ParameterError`. False (a scheduled report offered last week's limits, whatever they were):
        it is left out, this test's shape is its own, and the result's notes say why.
    engine, scheduler
        Read ``data`` (then a Parquet dataset: a file, folder, glob or fsspec URL of canonical
        columns) on an engine, ``"embedded"`` or ``"dask"`` (``scheduler`` ``tcp://...``, else a
        LocalCluster): one task per run, see :func:`fit_limits_dataset`.
        A path or :class:`~bearing_lib.data.engine.ParquetDataset` given as ``data`` implies
        ``engine="embedded"``.
    """

    if estimator not in ESTIMATORS:
        raise ParameterError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    if shape_from is not None:
        check_shape_from(data, estimator, engine)
    if engine is not None or isinstance(data, (str, Path, ParquetDataset)):
        if pool_runs:
            raise ParameterError("pool_runs pools runs held in memory; it does not combine with an engine")
        if not isinstance(data, (str, Path, ParquetDataset)):
            raise ParameterError(f"engine={engine!r} reads a Parquet dataset: pass its path (file, folder, glob or "
                                 f"URL), got {type(data).__name__}")
        return fit_limits_dataset(data, sla, mixes, weights, n_boot, seed, engine=engine or "embedded",
                                  scheduler=scheduler, min_share=min_share, level=level, options=options,
                                  estimator=estimator)
    sla_obj = _as_sla(sla)
    items = _unique_runs(_as_items(data))
    notes = list(sla_obj.notes())
    spec, mode = _resolve_mixes(mixes, items, min_share, sla_obj, notes)
    check_sla_against(sla_obj, items, mixes=spec)  # one error for every clause the data cannot evaluate
    fit_items, pooled_runs = _pool_runs(items) if pool_runs else (items, {})
    n_tables = sum(isinstance(it, LoadPointTable) for it in items) if pool_runs else 0
    if pool_runs and not pooled_runs:
        notes.append("pool_runs: nothing was pooled: " + (
            f"{n_tables} load-point table(s) hold the tool's summaries per load, not requests, and their runs are "
            "fitted each on its own (pooling needs per-request data)" if n_tables else
            "one run only"))
    elif n_tables:
        notes.append(f"pool_runs: the request traces' runs were pooled; {n_tables} load-point table(s) hold the "
                     "tool's summaries per load, not requests, and were fitted each on its own")
    if n_boot < 0:
        raise ParameterError(f"n_boot must be ≥ 0, got {n_boot}")
    rng = np.random.default_rng(seed)
    extra_q = _extra_quantiles(sla_obj)
    limits: list[MixLimit] = []
    skipped: list[Skipped] = []
    curves: list[pl.DataFrame] = []
    mix_by_name = {m.name: m for m in spec.mixes}
    pcs = sla_obj.percentile_clauses()
    metric = pcs[0].metric if pcs else "latency_ms"
    shapes = _earlier_shapes(shape_from, [it.provenance.sha256 for it in items], shape_required, notes)
    for it in fit_items:
        curve, lims, skips = _fit_input(it, items, spec, sla_obj, extra_q, options, n_boot, rng, seed, level,
                                        estimator, min_share, metric, mix_by_name, pooled_runs, notes, progress,
                                        shapes=shapes)
        curves.append(curve)
        limits.extend(lims)
        skipped.extend(skips)
    limits.sort(key=lambda m: (m.run_id, m.mix.name))
    blended = blended_limit(limits, weights, level) if weights is not None else None
    conditions = _conditions(items, spec, mode, n_boot, seed, options or CurveOptions())
    conditions.estimator = estimator
    if pooled_runs:
        conditions.pooled_runs = pooled_runs
    curve_all = pl.concat([c.select([k for k in c.columns if not k.startswith("_")]) for c in curves],
                          how="diagonal_relaxed")
    from bearing_lib.common.version import __version__

    result = LimitsResult(sla=list(sla_obj.clauses), conditions=conditions,
                          mix_spec=[MixRef.of(m) for m in spec.mixes], mixes=limits, blended=blended,
                          skipped=skipped, notes=notes, bearing_version=__version__)
    result.attach_curve(curve_all)
    result.__dict__["sla_spec"] = sla_obj  # the parsed SLA itself (cached_property slot)
    return result


def _earlier_shapes(shape_from: LimitsResult | str | Path | None, sha256s: list[str | None], required: bool,
                    notes: list[str]) -> ShapePriors | None:
    """The earlier test's shapes (``shape_from``); not ``required``: None and a note where they cannot be used (no
    shape in them, this test's own files, a file that does not read as limits), instead of the error."""
    if shape_from is None:
        return None
    try:
        shapes = ShapePriors.of(shape_from)
        shapes.check_not_self(sha256s)
    except (ShapeUnusable, InputError) as exc:  # InputError: unreadable, or not a limits JSON of this bearing
        if required:
            raise
        notes.append(f"no earlier shape was used: {exc}; every limit's interval is this test's own")
        return None
    return shapes


def _window_rule(opt: CurveOptions) -> str:
    """The steady window in words: the rule of ``curves.step_windows``, each end trimmed by the larger of the
    fraction and :data:`~bearing_lib.limits.curves.TRIM_LATENCIES` mean latencies, at most
    :data:`~bearing_lib.limits.curves.MAX_TRIM_FRACTION` (a Vegeta 5 rps step of long requests kept its middle 50 %
    where the conditions said 80 %; round 21)."""
    frac = min(opt.trim_fraction, MAX_TRIM_FRACTION)  # the cap holds whatever the fraction asked
    return (f"middle of each step's send window: {frac:.0%} trimmed at each end, or {TRIM_LATENCIES:g} "
            f"mean request latencies where longer, at most {MAX_TRIM_FRACTION:.0%} (the middle "
            f"{1 - 2 * frac:.0%} to {1 - 2 * MAX_TRIM_FRACTION:.0%})")


def _conditions(items: list, spec: MixSpec, mode: str, n_boot: int, seed: int, opt: CurveOptions) -> Conditions:
    sources = []
    models: set[str] = set()
    units: set[str] = set()
    for it in items:
        p = it.provenance
        # the loader's findings travel with the limits, so a report shows what the load test's files hid
        found = [SourceFinding(code=f.code, level=f.level, message=f.message, count=f.count)
                 for f in getattr(p, "findings", [])]
        sources.append(Source(path=str(p.source), sha256=p.sha256, format=p.format, tool=p.tool,
                              tool_version=p.tool_version, kind=it.kind, findings=found))
        models |= set(it.frame["model"].drop_nulls().unique().to_list())
        units |= set(it.frame["offered_load_unit"].drop_nulls().unique().to_list())
    kinds = {it.kind for it in items}
    # a load-point table holds the tool's own statistics per load: no window is cut from it and nothing is resampled
    # (a new user read "middle 80 % of each step's send window" on an inference-perf summary; round 21)
    window = _window_rule(opt)
    whole = "the tool's own statistics over each load point (no per-request times to cut a window from)"
    method = ("non-overlapping block bootstrap within steps (time blocks; exact order statistics from per-block "
              "counts)")
    untouched = "none: a load-point table holds no requests to resample (its interval is the model's)"
    if kinds == {"loadpoints"}:
        window, method = whole, untouched
    elif "loadpoints" in kinds:
        window, method = f"request traces: {window}; load-point tables: {whole}", f"request traces: {method}; " \
            f"load-point tables: {untouched}"
    return Conditions(
        sources=sources,
        model=sorted(models),
        offered_load_unit=sorted(units),
        mixes=mode,
        steady_window=window,
        bootstrap=BootstrapInfo(n_boot=n_boot, seed=seed, method=method),
    )


# --------------------------------------------------------------------------- limits of a Parquet dataset
# (here, not in limits/dataset.py: fit_limits hands a dataset to fit_limits_dataset, whose tasks call fit_limits
# on each run; dataset.py holds the reading and the load curve, below this module)


def _fit_part(frame: pl.DataFrame, *, time_origin: str, source: str, sla: object, spec: MixSpec, n_boot: int,
              seed: int, min_share: float, level: float, options: CurveOptions | None,
              estimator: str = DEFAULT_ESTIMATOR) -> list | None:
    """One partition's whole runs -> one :class:`LimitsResult` per run (``fit_limits`` on the run's requests).

    The run is the smallest unit that needs no request on the client: the bootstrap replicates,
    goodput, MSER warm-ups, ``T_recover``, the cost anomaly index and ``P_critical``'s request-level
    bootstrap all read the run's requests, and ``P_critical`` needs the run's judged steps (recovery
    steps are left out) first. What leaves the task is the run's small result.
    """
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
                                         level=level, options=options, estimator=estimator)))
    return out or None


def _mix_trace(ds: ParquetDataset, origin: str) -> RequestTrace:
    """The stepped requests' run, step and token columns (what ``mixes="auto"`` reads), in this process."""
    cols = ["run_id", "step", "input_tokens", "output_tokens", "cached_tokens"]
    f = stepped_requests(ds.scan(cols)).collect(engine="streaming")
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
    stats: bool | str = "auto",
    estimator: str = DEFAULT_ESTIMATOR,
):  # noqa: ANN201 - LimitsResult
    """``fit_limits`` over a stepped load test stored as a Parquet dataset, run by an engine.

    ``stats``: ``True`` fits from per-step sufficient statistics computed in streaming passes
    (:func:`_fit_stats`, ``limits.stepstats``: memory grows with steps × bins, not requests); ``False`` holds
    each run's requests in a task; ``"auto"`` (default) takes the statistics from
    :data:`STATS_MIN_REQUESTS` stepped requests on. Said in the notes and ``conditions.extra["stats"]``.

    The unit of work is a run (its requests are shuffled together, or read from its own
    files when the files are split by run, as for :func:`load_curve_dataset`): each task fits
    its runs with the in-memory code and returns their small results, which are merged
    here (limits, skipped groups, notes, curve; the blended limit over all of them). Every
    run gets its own bootstrap generator seeded with ``seed``, so a run's numbers do not
    depend on the engine, on the partitioning or on the other runs of the dataset (for a
    one-run test they equal ``fit_limits(load(file), ...)`` exactly). ``mixes="auto"`` is
    resolved once, over the token columns of every stepped request, in this process.
    ``conditions.extra["engine"]`` records where the work ran (engine, scheduler,
    workers, partitions). ``estimator`` is :func:`fit_limits`' (``pooled`` or ``model``): the model reads each
    step's counts and its bootstrap's design effects, which both paths compute (from the statistics, the per-block
    counts of the histograms: within their resolution).
    """

    if estimator not in ESTIMATORS:
        raise ParameterError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    sla_obj = _as_sla(sla)
    share = DEFAULT_MIN_SHARE if min_share is None else min_share
    if n_boot < 0:
        raise ParameterError(f"n_boot must be ≥ 0, got {n_boot}")
    ds = source if isinstance(source, ParquetDataset) else open_dataset(source)
    eng = engine if isinstance(engine, Engine) else Engine(engine, scheduler=scheduler)
    try:
        tab = eng.map_partitions(ds, CURVE_COLUMNS, dataset_facts)[0]
        facts = tab.drop("t_min", "run_min", "run_max").sum().row(0, named=True)
        if not facts["n_step"]:
            raise InsufficientDataError(
                f"{ds.path}: the dataset has no load steps (column 'step' is empty): limits need a stepped "
                "load test, not production traffic"
            )
        origin = time_origin_of(ds, facts, tab["t_min"].min())
        notes = list(sla_obj.notes())
        spec, mode = _resolve_mixes(mixes, [_mix_trace(ds, origin)] if mixes == "auto" else [], share,
                                            sla_obj, notes)
        if stats not in (True, False, "auto"):
            raise ParameterError(f"stats must be True, False or 'auto', got {stats!r}")
        if stats is True or (stats == "auto" and facts["n_step"] >= STATS_MIN_REQUESTS):
            return _fit_stats(ds, eng, sla_obj, spec, mode, notes, origin, weights, n_boot=n_boot, seed=seed,
                              min_share=share, level=level, options=options,
                              trend_metric="ttft_ms" if facts["n_ttft"] else "latency_ms", estimator=estimator)
        fn = functools.partial(_fit_part, time_origin=origin, source=ds.path, sla=sla_obj, spec=spec, n_boot=n_boot,
                               seed=seed, min_share=share, level=level, options=options, estimator=estimator)
        cols = list(ds.columns) + [c for c in ds.hive_columns if c not in ds.columns]
        groups = run_file_groups(ds, tab)
        if groups is not None:
            parts = eng.apply_file_groups(ds, cols, groups, stepped_requests, fn)
        else:
            parts = eng.shuffle_apply(ds, cols, stepped_requests, "run_id", fn)
        where = eng.description()
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
    notes.append(f"fitted one run per task on the {where.engine} engine; each run's bootstrap has its own "
                 f"generator seeded {seed}")
    cond = results[0].conditions
    cond.sources = [Source(path=ds.path, sha256=None, format="parquet-dataset", tool="bearing engine",
                           kind="requests")]
    cond.model = sorted({m for r in results for m in r.conditions.model})
    cond.offered_load_unit = sorted({u for r in results for u in r.conditions.offered_load_unit})
    cond.mixes = mode
    cond.extra = {**cond.extra, "engine": where}
    blended = blended_limit(limits, weights, level) if weights is not None else None
    from bearing_lib.common.version import __version__

    out = LimitsResult(sla=results[0].sla, conditions=cond, mix_spec=results[0].mix_spec, mixes=limits,
                       blended=blended, skipped=[s for r in results for s in r.skipped], notes=notes,
                       bearing_version=__version__)
    out.attach_curve(pl.concat([r.curve for r in results], how="diagonal_relaxed").sort("run_id", "step", "mix"))
    out.__dict__["sla_spec"] = sla_obj
    return out


STATS_MIN_REQUESTS = 5_000_000
"""``fit_limits_dataset(stats="auto")`` fits from streaming statistics from this many stepped requests on."""
STATS_NO_REQUESTS = ("needs per-request data: the fit read per-step statistics (limits.stepstats), not the "
                     "requests")


def _fit_stats(ds: ParquetDataset, eng: Engine, sla_obj: SLA, spec: MixSpec, mode: str, notes: list[str],
               origin: str, weights: object, *, n_boot: int, seed: int, min_share: float, level: float,
               options: CurveOptions | None, trend_metric: str,
               estimator: str = DEFAULT_ESTIMATOR):  # noqa: ANN202 - LimitsResult
    """``fit_limits`` from per-step sufficient statistics (``limits.stepstats``): the steady windows, the counts,
    the latency histograms and the per-block counts of the bootstrap, each a streaming query over the dataset
    (the statistics' two queries run on the engine, one task per file on Dask, partial tables summed). No
    request is held: the judged steps, the pooled estimate, its bootstrap and the model fits read the statistics;
    what needs requests in time order is left out and said in the notes."""
    from functools import partial

    from bearing_lib.limits import stepstats

    cols = [c for c in dict.fromkeys([*stepstats.STATS_COLUMNS, "model"])]
    trace = stepstats.scan_trace(ds.scan(cols), ds.path, origin)
    with pl.Config(engine_affinity="streaming"):
        check_sla_against(sla_obj, [trace])  # one error for every clause the data cannot evaluate
    win = stepstats.windows_of(trace, options, trend_metric=trend_metric)
    groups = stepstats.step_groups(win, spec.names())
    parts = eng.map_partitions(ds, cols, partial(stepstats.stat_queries, windows=win, spec=spec, sla=sla_obj,
                                                 groups=groups))
    st = stepstats.combine(parts, sla_obj, groups, win)
    extra_q = _extra_quantiles(sla_obj)
    curve, _ = stepstats.stats_curve(trace, spec, sla_obj, extra_quantiles=extra_q, windows=win, stats=st)
    rng = np.random.default_rng(seed)
    # each run's bootstrap has its own generator seeded `seed`, as when each run is fitted in a task
    reps = stepstats.replicates_from_stats(st, sla_obj, n_boot, seed) if n_boot > 0 else None
    prep = _TraceInputs(curve, None, StepWarmups(), StepSettlings(), reps)
    pcs = sla_obj.percentile_clauses()
    curve, limits, skipped = _fit_input(trace, [trace], spec, sla_obj, extra_q, options, n_boot, rng, seed, level,
                                        estimator, min_share, pcs[0].metric if pcs else "latency_ms",
                                        {m.name: m for m in spec.mixes}, {}, notes, None, prep=prep)
    where = eng.description()
    notes.append(
        f"fitted from per-step statistics (limits.stepstats; {stepstats.N_BLOCKS} time blocks a step, latency bins "
        f"{stepstats.REL_BIN:.1%} wide): counts exact, quantiles and their CIs within "
        f"{stepstats.TOLERANCE:.2%} of the exact ones; no request held, so the MSER warm-ups, the settling tests, "
        "T_recover, the cost anomaly index and the failure descriptions are not computed, and P_critical's "
        f"interval is the parametric one; each run's bootstrap has its own generator seeded {seed}; on the "
        f"{where.engine} engine")
    # a frame's unique() streams (a hash group-by); the expression's unique() held 100 M strings
    models = [ds.scan([c]).drop_nulls().unique().collect(engine="streaming")[c].to_list()
              for c in ("model", "offered_load_unit")]
    cond = Conditions(
        sources=[Source(path=ds.path, sha256=None, format="parquet-dataset", tool="bearing engine", kind="requests")],
        model=sorted(models[0]), offered_load_unit=sorted(models[1]), mixes=mode,
        steady_window=_window_rule(options or CurveOptions()),
        bootstrap=BootstrapInfo(n_boot=n_boot, seed=seed, method=(
            f"non-overlapping block bootstrap within steps ({stepstats.N_BLOCKS} time blocks; order statistics "
            f"from per-block latency histograms, within {stepstats.TOLERANCE:.2%})")))
    cond.extra = {**cond.extra, "engine": where, "stats": StatsSettings(n_blocks=stepstats.N_BLOCKS,
                                                                        rel_bin=stepstats.REL_BIN,
                                                                        tolerance=stepstats.TOLERANCE)}
    cond.estimator = estimator
    limits.sort(key=lambda m: (m.run_id, m.mix.name))
    blended = blended_limit(limits, weights, level) if weights is not None else None
    from bearing_lib.common.version import __version__

    out = LimitsResult(sla=list(sla_obj.clauses), conditions=cond,
                       mix_spec=[MixRef.of(m) for m in spec.mixes], mixes=limits, blended=blended, skipped=skipped,
                       notes=notes, bearing_version=__version__)
    out.attach_curve(curve.select([k for k in curve.columns if not k.startswith("_")]).sort("run_id", "step", "mix"))
    out.__dict__["sla_spec"] = sla_obj
    return out


__all__ = ["LimitsResult", "MixLimit", "blended_capacity", "check_shape_from", "fit_limits", "fit_limits_dataset",
           "sla_curve"]
