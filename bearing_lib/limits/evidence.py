"""What each step of a load test says about each SLA clause, as the model's evidence (``limits.model``).

* **A request trace**: per clause, ``k`` requests that count against it of ``n`` that can
  (``limits.pooled.count_columns``): an exact count; with ``u`` requests of unknown outcome (cancelled, or
  the tool stopped waiting for them) between ``k`` and ``k + u`` of ``n + u`` (a survivor-only error rate of a
  step where most requests were never collected is not its failure share).
* **A load-point table** (a tool's per-load summary): a percentile clause ``pQ(m) <= T`` is
  bracketed by the reported percentiles of ``m``: a reported ``P_q`` above ``T`` means more
  than ``1 − q`` of the requests exceed ``T``; one at or below ``T`` means at most ``1 − q`` do; a
  reported maximum at or below ``T`` means none does. With the request count ``n`` the share
  bounds become ranks (``k`` between ``⌊n·lo⌋`` and ``⌈n·hi⌉``); without it they are taken as the
  step's exact shares (an assumption, said in the result). An error-rate clause reads the
  reported error rate and request count (an exact count).
* **Continuous stepped runs**: a step's queue starts from the state the step before it left, so
  a short step just above the limit may still read a low share. When the steps ran one after
  the other in ascending load (``t_first_s`` increasing with load, each starting within about two
  steady windows of the one before), a step's evidence is placed anywhere between the previous
  step's load and its own (``Evidence.x_from``); separate runs per load (a vLLM sweep, a
  load-point table) are not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from bearing_lib.limits.bootstrap import block_rate, block_sums
from bearing_lib.limits.curve_row import CurveRow
from bearing_lib.limits.curves import QUANTILES
from bearing_lib.limits.model import Evidence
from bearing_lib.limits.pooled import allowed_share
from bearing_lib.limits.replicates import ReplicateTable
from bearing_lib.limits.sla import Clause

SETTLE_TIMES = 3.0
"""A queue is taken as settled after three relaxation times (e^-3 ≈ 5 % of the initial gap left)."""

RISING_AS_BOUND = False
"""A step whose queue was still rising through its window (``JudgedStep.not_steady``) read as a **lower bound** of its
own load's bad share (``k`` or more of ``n``: a queue still filling reads fewer slow requests than its steady state)
instead of as a count read anywhere back to the previous load (the lag). Measured in docs/oracle.md, round 14."""

POOLED_RISING_AS_BOUND = True
""":data:`RISING_AS_BOUND` for the steps of **pooled runs** only (a test and its follow-up, ``fit_limits(...,
pool_runs=True)``), with :data:`limits.model.POOLED_JITTER`: adopted in round 16 (docs/oracle.md; a single run's
fit keeps the lag reading, which round 14 measured more accurate at 120 s)."""

POOL_STEP_OFFSET = 100_000
"""Pooled runs number their steps ``run index × POOL_STEP_OFFSET + step`` (``limits.fit``)."""


class _Judged(Protocol):
    """What the evidence reads of a judged step (``limits.judging.JudgedStep``): its curve row and load."""

    row: CurveRow
    x: float | None


def _continuity(steps: Sequence[_Judged]) -> dict[int, float]:
    """``{step: load of the step run just before it}`` for steps of a continuous ascending run."""
    timed = [s for s in steps if s.row.t_first_s is not None and s.x is not None
             and math.isfinite(s.x)]
    # pooled runs number their steps in blocks of POOL_STEP_OFFSET: a step follows the one before it in ITS run
    timed.sort(key=lambda s: (int(s.row.step) // POOL_STEP_OFFSET, float(s.row.t_first_s)))
    out: dict[int, float] = {}
    for prev, cur in zip(timed, timed[1:], strict=False):
        if int(prev.row.step) // POOL_STEP_OFFSET != int(cur.row.step) // POOL_STEP_OFFSET:
            continue
        gap = float(cur.row.t_first_s) - float(prev.row.t_first_s)
        d = prev.row.duration_s
        if d is None or not d > 0 or cur.x <= prev.x:
            continue
        if gap <= 2.0 * float(d) + 10.0:
            out[int(cur.row.step)] = float(prev.x)
    return out


def settle_share(x: float, capacity: float | None, duration_s: float | None) -> float:
    """The share of the way back to the previous load a step's evidence may lie: three relaxation times of a
    queue at load ``x`` over the step's steady window, at most 1.

    The relaxation time of a single-server queue at utilisation ρ is about ``1 / (μ (1 − √ρ)²)`` (M/M/1,
    heavy-traffic; Abate & Whitt 1987), with μ the run's capacity: the highest completed throughput of any
    step. Near capacity it is minutes (a 120 s step just above an LLM server's limit often passes: docs/oracle.md),
    at half load a second. Without a capacity or a duration the step may lag all the way.
    """
    if not capacity or not duration_s or duration_s <= 0 or x <= 0:
        return 1.0
    rho = x / capacity
    if rho >= 1.0:
        return 1.0
    tau = 1.0 / (capacity * (1.0 - math.sqrt(rho)) ** 2)
    return float(min(1.0, SETTLE_TIMES * tau / duration_s))


def closed_settle_share(users: float, throughput_rps: float | None, duration_s: float | None) -> float:
    """:func:`settle_share` of a closed loop's step (load axis ``concurrency``): three of the loop's **cycle times**
    over the step's steady window, at most 1.

    A closed loop holds at most its ``N`` users' requests: a step that adds users fills the server's queue within a
    few rounds of the loop, whatever the utilisation, and never runs away as an open queue near capacity does. The
    cycle time is ``N / X`` (Little's law over the whole loop: one user's latency plus its think time, from the
    step's own completed rate ``X``). On the closed M/M/4//N queue of ``tests/limits/closed_loop.py`` (4 slots, 1 s
    service, 3 s think) the relaxation time (the inverse spectral gap of its birth–death chain) is 0.75–3.0 s at 4–32
    users against cycle times of 4.0–8.0 s, so three cycles overstate it. :func:`settle_share`'s open-queue formula
    compared users with requests per second here (issue 23, round 24: every step above a few users then lagged all
    the way back to the previous load and the crossing leaned low, −12.6 % on that loop). Without a completed rate or
    a duration the step may lag all the way."""
    if not throughput_rps or throughput_rps <= 0 or not duration_s or duration_s <= 0 or users <= 0:
        return 1.0
    return float(min(1.0, SETTLE_TIMES * (users / throughput_rps) / duration_s))


DESIGN_EFFECT = True
"""Whether a trace's counts are deflated by their block-bootstrap design effect (:func:`design_effect`)."""


def design_effect(share_reps: np.ndarray | None, k: float, n: float) -> float:
    """How many times more a step's bad share varies under its block bootstrap than a binomial share would.

    The block bootstrap (``limits.bootstrap``: blocks of time, ``B`` of them per step, their length from the
    Politis–White rule) sees what the binomial cannot: bad requests come in bursts (one queue episode makes
    many requests slow at once), so ``k`` bad of ``n`` carries the information of fewer independent requests.
    The design effect ``deff = Var_boot(share) / (p (1 − p) / n)`` (Kish) turns the count into an effective one,
    ``k / deff`` of ``n / deff`` (Rao & Scott 1981), which the model then reads as any other count. At least 1
    (a step whose blocks agree better than a binomial is not given more weight than its requests), at most
    ``n`` (one effective request); 1 without replicates or without a bad request.
    """
    if share_reps is None or n <= 1 or k <= 0:
        return 1.0
    r = np.asarray(share_reps, float)
    r = r[np.isfinite(r)]
    if r.size < 20:
        return 1.0
    p = min(k / n, 1.0 - 0.5 / n)
    var_bin = p * (1.0 - p) / n
    return float(min(max(float(np.var(r, ddof=1)) / var_bin, 1.0), n))


OWN_TAIL = True
"""Whether a step with no bad request takes the design effect of its own latency tail (:func:`tail_design_effect`)
instead of borrowing the nearest failing step's (:func:`_borrowed_deff`); percentile clauses of request traces."""
TAIL_Q = 0.9
"""The step's own quantile whose exceedances measure how its tail clusters in time (10 % of its requests)."""


def tail_design_effect(w: np.ndarray, blocks: np.ndarray, values: np.ndarray, n_blocks: int) -> float | None:
    """The block-bootstrap design effect (:func:`design_effect`) of the share of a step's values above the step's
    own :data:`TAIL_Q` quantile (linear interpolation).

    A step with no request past the SLA's threshold cannot show how its slow requests cluster, but its own tail
    can: requests above the step's P90 come in the same queue episodes, only smaller ones. ``w`` and ``blocks`` are
    the step's resampling (``limits.bootstrap``). None with too few values for a tail (fewer than 20 above it).
    """
    v = np.asarray(values, float)
    if v.size < 2:
        return None
    hit = (v > float(np.quantile(v, TAIL_Q, method="linear"))).astype(float)
    return tail_design_effect_of_blocks(w, block_sums(blocks, hit, n_blocks),
                                        np.bincount(blocks, minlength=n_blocks).astype(float))


def tail_design_effect_of_blocks(w: np.ndarray, hits: np.ndarray, n: np.ndarray) -> float | None:
    """:func:`tail_design_effect` from per-block counts: ``hits`` of the tail among ``n`` values per block (an
    engine's per-block histograms give them, ``limits.stepstats``). None below 20 tail values or without a rest."""
    k, total = float(np.sum(hits)), float(np.sum(n))
    if k < 20 or k >= total:
        return None
    return design_effect(block_rate(w, hits, n), k, total)


BORROW = "above"
EPISODE_TAUS = 0.0
"""Off (measured, not adopted; docs/limits.md): a cap of a step's effective count at ``duration / (EPISODE_TAUS ·
relaxation time)`` independent queue episodes, for steps of at most ``EPISODE_MAX_LAG`` lag."""
EPISODE_REQS = 1.0
EPISODE_MAX_LAG = 1.0 / 3.0


def _borrowed_deff(x: float, none_bad: bool, known: list[tuple[float, float]]) -> float:
    """The design effect of a step whose count cannot show one: with no bad request, that of the nearest step
    above it whose count can; with every request bad, that of the nearest step below. Bad requests near capacity
    come in queue episodes: a step a little below the limit reads none in one window and many in the next, so
    its zero weighs no more than the episodes it could have held (and a saturated step's all-bad count no more
    than the episodes that filled it). 1 when no such step shows one."""
    if BORROW == "none":
        return 1.0
    side = sorted(((abs(kx - x), d) for kx, d in known if (kx > x if none_bad else kx < x)))
    return side[0][1] if side else 1.0


def trace_evidence(pool: Sequence[_Judged], clauses: Sequence[Clause],
                   reps: ReplicateTable | None = None, pooled_runs: bool = False,
                   step_rates: Mapping[int, float] | None = None) -> dict[str, list[Evidence]]:
    """Per clause text, the counts of every usable step of a request trace (``pool``): exact, or with the step's
    block-bootstrap replicates (``reps``: the (run, mix) group's table, ``limits.replicates``; its bad shares)
    deflated by their design effect (:func:`design_effect`). A step whose queue still rose is a lower bound with
    :data:`RISING_AS_BOUND`, or with :data:`POOLED_RISING_AS_BOUND` where the steps are those of several runs pooled
    (``pooled_runs``)."""
    rising_as_bound = RISING_AS_BOUND or (POOLED_RISING_AS_BOUND if pooled_runs else False)
    before = _continuity(pool)
    thr = [float(j.row.throughput_rps) for j in pool if j.row.throughput_rps]
    capacity = max(thr) if thr else None
    out: dict[str, list[Evidence]] = {c.text: [] for c in clauses}
    for i, c in enumerate(clauses):
        raw = []
        for j in pool:
            row = j.row
            n, k = row.count(i).n, row.count(i).bad
            if not n:
                continue
            n, k = float(n), float(k or 0)
            deff = None  # not identified: no bad request, or all bad (the share does not vary under resampling)
            if DESIGN_EFFECT and reps is not None and 0 < k < n:
                share = reps.share(int(row.step), i, allowed_share(c))
                if share is not None:  # None: the step was not resampled; it borrows a design effect below
                    deff = design_effect(share, k, n)
            raw.append((j, n, k, deff))
        for j, n, k, deff in raw:
            if deff is None and OWN_TAIL and k <= 0 and reps is not None:
                deff = reps.tail_deff(int(j.row.step), i)
            if deff is None:
                deff = _borrowed_deff(float(j.x), k <= 0, [(float(o.x), d) for o, _, _, d in raw if d is not None])
            row = j.row
            d = row.duration_s
            # a closed loop's cycle: all its users over the step's completed rate over every mix (``step_rates``;
            # a mix's own rate would stretch the cycle by one over its share)
            total = (step_rates or {}).get(int(row.step)) or row.throughput_rps
            lag = (closed_settle_share(float(j.x), total, float(d) if d else None)
                   if row.offered_load_unit == "concurrency"
                   else settle_share(float(j.x), capacity, float(d) if d else None))
            # requests of unknown outcome (the tool stopped waiting, or cancelled them) may have been bad or not:
            # the count is known to lie between the bad ones seen and those plus the unknown ones
            u = float(row.n_unknown or 0)
            if (EPISODE_TAUS and row.offered_load_unit != "concurrency" and capacity and d and float(d) > 0
                    and j.x < capacity and lag <= EPISODE_MAX_LAG):
                rho = float(j.x) / capacity
                tau = 1.0 / (capacity * (1.0 - math.sqrt(rho)) ** 2)
                episodes = max(1.0, float(d) / (EPISODE_TAUS * tau))
                deff = max(deff, (n + u) / max(episodes, 1.0) / EPISODE_REQS)
            deff = min(max(deff, 1.0), n + u)
            if rising_as_bound and j.not_steady and (rising_as_bound != "over" or k > allowed_share(c) * n):
                lagged = rising_as_bound == "lagged"
                out[c.text].append(Evidence(x=float(j.x), n=(n + u) / deff, k_lo=k / deff, k_hi=(n + u) / deff,
                                            x_from=before.get(int(row.step)) if lagged else None,
                                            lag=lag if lagged else 0.0, deff=deff, rising=True))
                continue
            out[c.text].append(Evidence(x=float(j.x), n=(n + u) / deff, k_lo=k / deff, k_hi=(k + u) / deff,
                                        x_from=before.get(int(row.step)), lag=lag, deff=deff))
    return out


def _percentile_evidence(c: Clause, row: CurveRow, x: float) -> Evidence | None:
    lo, hi = 0.0, 1.0
    known = False
    for name, q in QUANTILES.items():
        v = row.q(c.metric, name).value
        # a percentile the tool reported over few requests is still a statement about ranks of those requests
        if v is None or not math.isfinite(v):
            continue
        known = True
        over = v >= c.threshold if c.strict else v > c.threshold
        if over:
            lo = max(lo, 1.0 - q)
        else:
            hi = min(hi, 1.0 - q)
    mx = row.maxima.get(c.metric)
    if mx is not None and math.isfinite(mx):
        known = True
        if not (mx >= c.threshold if c.strict else mx > c.threshold):
            hi = 0.0
        bounds = row.share_above(c.metric, c.threshold)
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    if not known or lo > hi:
        return None
    n = row.n_ok or row.n_requests
    if n:
        n = float(n)
        return Evidence(x=x, n=n, k_lo=math.floor(n * lo), k_hi=min(math.ceil(n * hi), n))
    return Evidence(x=x, s_lo=lo, s_hi=hi)


TABLE_LAG = True
"""Whether a load-point table's percentile evidence lags as a trace's does (:func:`table_lags`). Measured in round 25
on the oracle's open-loop tables (covered 101 → 174 of 180, within ±10 % 134 → 168) and the default since round 26,
with a crossing's interval held at the saturated throughput's upper end (``curves.hold_ci_at_cap``) and a run without
completed rates given its highest offered load as capacity (docs/limits.md,
"Open-loop tables: the lag"). ``False`` reads every step's percentiles at its own load (the reading before round 26,
kept for comparison: ``tests/limits/test_table_coverage_open.py``)."""


def table_lags(steps: Sequence[_Judged]) -> dict[int, tuple[float, float]]:
    """``{step: (x_from, lag)}`` of a load-point table's steps: the next lower load tested in the same run, and the
    share of the way back to it the step's evidence may lie
    (:func:`settle_share`: three relaxation times of the queue over the step's duration, with the run's highest
    completed rate as the capacity; on a concurrency axis :func:`closed_settle_share`). A table cannot show whether a
    step's queue settled (no per-request times), and a step just above the limit often ends before its queue breaks
    out: on the simulator oracle's open-loop tests written as tables (10 × 120 s steps per seed, 9 servers × mixes,
    20 seeds each), 64 of 180 raw brackets lie wholly above the true limit (a passing step up to 11 % above it); the
    interval without the lag covered 101 of 180 (its value within ±10 % in 134), with it **174 of 180** (168), median
    half-width 8-12 % (23 % on large/prefix; docs/limits.md, "Open-loop tables: the lag";
    ``tests/limits/test_table_coverage_open.py``). Percentile clauses only: a table's failed requests are counted,
    not ranked, and no simulation of them was measured.

    A table holds no run order (no times; the readers number a run's steps by offered load, ``loaders._loadtest``):
    each step lags toward the next lower load tested, as in the ascending sweeps the tools run (vLLM's and SGLang's
    rate sweeps, inference-perf's stages, GuideLLM's sweep); the lowest step has none. A sweep run in another order
    is read as if ascending (a step run just after a higher one starts from a fuller queue, so its evidence leans
    the other way: its interval is then wider than it need be below). Repeats at one load (separate invocations,
    each from an empty queue) each lag. The steps are the usable ones: an excluded step between two loads is passed
    over (a review, round 26). A run without completed rates takes its highest offered load as the capacity: a
    server saturated there completed less, so the lag is understated, not overstated (on the oracle, the lag with
    each step's sent rate as its completed rate covered 126 of 180: round 25); without it every step would lag all
    the way back."""
    by_run: dict[object, list[_Judged]] = {}
    for j in steps:
        if j.x is not None and math.isfinite(j.x) and j.x > 0:
            by_run.setdefault(j.row.run_id, []).append(j)
    out: dict[int, tuple[float, float]] = {}
    for run in by_run.values():
        thr = [float(j.row.throughput_rps) for j in run if j.row.throughput_rps]
        capacity = max(thr) if thr else max(float(j.x) for j in run)
        loads = sorted({float(j.x) for j in run})
        for j in run:
            below = [x for x in loads if x < float(j.x)]
            if not below:
                continue
            d = j.row.duration_s
            d = float(d) if d else None
            lag = (closed_settle_share(float(j.x), j.row.throughput_rps, d) if j.row.offered_load_unit == "concurrency"
                   else settle_share(float(j.x), capacity, d))
            out[int(j.row.step)] = (below[-1], lag)
    return out


def table_evidence(steps: Sequence[_Judged], clauses: Sequence[Clause]) -> tuple[dict[str, list[Evidence]], bool]:
    """Per clause text, what each step of a load-point table implies; and whether any step lacked ``n``. A
    percentile clause's evidence lags toward the next lower load (:func:`table_lags`) with :data:`TABLE_LAG`."""
    out: dict[str, list[Evidence]] = {c.text: [] for c in clauses}
    assumed = False
    lags = table_lags(steps) if TABLE_LAG else {}
    for j in steps:
        row, x = j.row, j.x
        for c in clauses:
            ev: Evidence | None = None
            if c.kind == "percentile":
                ev = _percentile_evidence(c, row, float(x))
                assumed |= ev is not None and ev.n is None
                if ev is not None and int(row.step) in lags:
                    ev = dataclasses.replace(ev, x_from=lags[int(row.step)][0], lag=lags[int(row.step)][1])
            elif c.kind == "error_rate":
                err, n = row.error_rate, row.n_requests
                if err is not None and n:
                    k = round(float(err) * float(n))
                    ev = Evidence(x=float(x), n=float(n), k_lo=k, k_hi=k)
            if ev is not None:
                out[c.text].append(ev)
    return out, assumed


__all__ = ["DESIGN_EFFECT", "SETTLE_TIMES", "TABLE_LAG", "closed_settle_share", "design_effect", "settle_share",
           "table_evidence", "table_lags", "tail_design_effect", "tail_design_effect_of_blocks", "trace_evidence"]
