"""Judging a step against the SLA: a typed judged step per step of the load curve (docs/limits.md, "Judging a step").

Each step of a run × mix is judged clause by clause (pass, fail, too close to call, undetermined) and as a
whole (``status``), with the window its verdict rests on and the reasons; then three passes over the judged
steps of the group: the block-bootstrap close calls, the recovery steps run after a failing step, and the
transient not-steady steps below a clean pass. ``limits.fit`` reads the judged steps to bracket and
estimate the limit; ``limits.evidence`` turns them into the model's counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from bearing_lib.common.format import fmt_sig
from bearing_lib.common.quantiles import quantile
from bearing_lib.limits import pooled
from bearing_lib.limits.curve_row import CurveRow
from bearing_lib.limits.curves import QUANTILES, min_n_supported, qname, wilson_interval
from bearing_lib.limits.evidence import POOL_STEP_OFFSET
from bearing_lib.limits.replicates import ReplicateTable
from bearing_lib.limits.settling import StepSettling
from bearing_lib.limits.sla import SLA, Clause

BLOCKING_FLAGS = frozenset({"generator_behind", "too_short", "throughput_below_offered"})
"""Flags that forbid a pass (a step that fails anyway keeps its failure)."""


@dataclass
class JudgedStep:
    """One step of a run × mix judged against the SLA.

    ``row`` is the load curve's row, typed (``limits.curve_row``; with the pooled counts ``_pk_i`` / ``_pn_i``);
    ``x`` the load the server saw (the achieved send rate when the generator fell behind).
    """

    row: CurveRow
    x: float | None
    status: str
    """``pass``, ``fail``, ``undetermined`` or ``excluded``."""
    margins: dict[str, float | None]
    reasons: list[str]
    verdicts: dict[str, str]
    """Per judged clause: ``pass``, ``fail``, ``close`` (too close to call) or ``undetermined``."""
    sla_margin: float | None
    not_steady: bool
    """Not steady (the curve's trend test) or not settled (``limits.settling``): the steady-state pseudo-clause."""
    flags: list[str]
    settling: StepSettling | None
    by_bound: set[str]
    """Clauses failed by a lower bound of an unsupported percentile (a failure in every bootstrap replicate)."""
    close: bool
    """Too close to call: undetermined for the bracket, its margins still inform the interpolation."""
    pool_ok: bool
    """Its counts may enter the estimators (load known, no blocking flag unless it fails anyway)."""
    clause_ok: list[bool]
    window: str
    """What the verdict rests on: the steady window, the last quarter (not settled), the whole step, a summary."""
    recovery: bool = False

    @property
    def step(self) -> int:
        return int(self.row.step)


def judge_clause(c: Clause, i: int, row: CurveRow, tables: bool) -> tuple[float | None, str, str | None]:
    """(margin, verdict pass|fail|undetermined, reason) of clause ``c`` on one curve row."""
    flags = row.flags
    if c.kind == "percentile":
        qc = row.q(c.metric, qname(c.q))
        v = qc.value
        supported = v is not None and f"too_few_for_{qname(c.q)}" not in flags
        if supported:
            m = c.observed_to_margin(v)
            if not c.passes(m):
                return m, "fail", f"{c.text}: {c.stat} = {fmt_sig(v)} ms"
            hi = qc.hi
            if hi is not None and not c.passes(c.observed_to_margin(hi)):
                return m, "close", (f"{c.text}: {c.stat} = {fmt_sig(v)} ms passes, but its 95% upper bound "
                                    f"{fmt_sig(hi)} ms does not: too close to call")
            return m, "pass", None
        # unsupported: a failure can still be proven by a lower bound
        evidence: list[tuple[float, str]] = []
        lo = qc.lo
        if lo is not None:
            evidence.append((lo, f"its 95% lower bound {fmt_sig(lo)} ms"))
        if tables:
            for name, q in QUANTILES.items():
                lv = row.q(c.metric, name).value
                if q < c.q and lv is not None and f"too_few_for_{name}" not in flags:
                    evidence.append((lv, f"the reported {name} {fmt_sig(lv)} ms"))
        for val, what in evidence:
            m = c.observed_to_margin(val)
            if not c.passes(m):
                return m, "fail", f"{c.text}: {c.stat} unsupported by {row.n_ok} requests, but {what} already fails"

        n = row.n_ok
        if tables and v is None:
            mx = row.maxima.get(c.metric)
            bounds = row.share_above(c.metric, c.threshold)
            if bounds is not None:
                # the reported mean and maximum bound the share above T from below (CurveRow.share_above); above
                # the clause's 1 − q the step fails (AIPerf's 320-concurrency point read "not judged: the source
                # reports no p99"; round 21)
                share_lo, mean = bounds[0], row.means[c.metric]
                if share_lo > 1.0 - c.q:
                    # a failing margin without a value to measure it by: just below zero, as estimators' own
                    return -1e-9, "fail", (f"{c.text}: {c.stat} unsupported by the source, but the reported mean "
                                          f"{fmt_sig(mean)} ms and maximum {fmt_sig(mx)} ms put at least "
                                          f"{share_lo:.1%} of requests above {fmt_sig(c.threshold)} ms")
            n_any = n if n is not None else row.n_requests
            if mx is not None and n_any and n_any >= min_n_supported(c.q) and c.passes(c.observed_to_margin(mx)):
                # with n >= min_n_supported the maximum x(n) is at or above the upper order-statistic
                # bound of the percentile's 95% CI, so it proves a pass; with fewer requests it does not
                return c.observed_to_margin(mx), "pass", None
            return None, "undetermined", f"{c.text}: the source reports no {c.stat} of {c.metric}"
        if v is None and f"too_few_for_{qname(c.q)}" not in flags:
            return None, "undetermined", f"{c.text}: no successful request carries {c.metric}"
        return None, "undetermined", f"{c.text}: too few requests for a {c.stat} ({n} successful)"
    # requests of unknown outcome (cancelled, or the tool stopped waiting) are neither ok nor failed
    n = (row.n_requests or 0) - (row.n_unknown or 0) if row.n_requests is not None else None
    if c.kind == "error_rate":
        v = row.error_rate
    else:
        v = row.goodput_share(i)
        if v is None:
            return None, "undetermined", f"{c.text}: goodput needs per-request data"
    if v is None or not n:
        return None, "undetermined", f"{c.text}: the source reports no request and error counts"
    m = c.observed_to_margin(v)
    # the same close-call test as a percentile's, on both sides: a count of failures is judged by its Wilson
    # 95 % interval, so 4 failures of 252 (1.6 %, interval 0.6–4.0 %) do not fail a 1 % allowance outright
    bad = float(v) if c.kind == "error_rate" else 1.0 - float(v)
    allowed = pooled.allowed_share(c)
    lo, hi = (float(b) for b in wilson_interval(round(bad * n), n))
    if not c.passes(m):
        if lo > allowed or (c.strict and lo >= allowed):
            return m, "fail", f"{c.text}: {c.stat} = {v:.4g}"
        return m, "close", (f"{c.text}: {c.stat} = {v:.4g} fails, but its 95% interval ({lo:.2%}–{hi:.2%} bad of "
                            f"{n}) reaches the allowance: too close to call")
    need = math.ceil(1.0 / c.allowed)
    if n < need:
        return m, "undetermined", f"{c.text}: {n} requests cannot show a rate within {c.allowed:.3g} (need ≥ {need})"
    return m, "pass", None


def judge_steps(rows: list[CurveRow], sla: SLA, tables: bool, ignore: frozenset[str] = frozenset(),
                 settle: Mapping[int, StepSettling] | None = None) -> list[JudgedStep]:
    """Judge every step against the SLA's clauses (``ignore``: clauses broken at every load by a failure floor,
    left out of each step's verdict and said in its reasons; ``settle``: the whole-step trend test per step,
    ``limits.settling``: a step rising through its send window whose late part breaks a clause is not steady)."""
    out = []
    for row in rows:
        st = (settle or {}).get(row.step)
        unsettled = st is not None and st.unsettled(ignore)
        x = row.offered_load
        load_note = None
        if ("generator_behind" in row.flags and row.send_rate_rps is not None
                and x is not None and math.isfinite(x)):
            # the server saw the achieved send rate, not the nominal one: place the step there
            load_note = (f"load axis: achieved send rate {row.send_rate_rps:.4g} rps (offered {x:g}; "
                         "generator behind)")
            x = float(row.send_rate_rps)
        flags = list(row.flags)
        margins: dict[str, float | None] = {}
        verdicts, reasons, by_bound = [], [], set()
        judged_names: list[str] = []
        for i, c in enumerate(sla.clauses):
            if c.text in ignore:
                margins[c.text] = None
                reasons.append(f"{c.text}: fails at every load through its failure floor (see the failure floors); "
                               "not judged per step")
                continue
            m, v, why = judge_clause(c, i, row, tables)
            margins[c.text] = m
            judged_names.append(c.text)
            if why and "unsupported by" in why:
                by_bound.add(c.text)
            verdicts.append(v)
            if why:
                reasons.append(why)
        if load_note:
            reasons.append(load_note)
        settle_why = st.reason(ignore) if st is not None else None
        if settle_why and not unsettled and "not_steady" not in flags:
            reasons.append(settle_why)
        if unsettled and "not_steady" not in flags:
            flags.append("unsettled")
        if x is None or not math.isfinite(x):
            status = "excluded"
            reasons.insert(0, "offered load is not a finite number (an unbounded rate)" if x is not None
                           else "offered load unknown: the file does not say it (see the source's findings)")
        elif "not_steady" in flags or unsettled:
            # a queue still rising through the step is no measurement of a sustained load: it can neither pass
            # nor count as a measured failure (the bracket's upper end is the first judged failure). A clause
            # that already fails on the step's window stays a failure: the growing queue only makes it worse
            why = (settle_why if unsettled and "not_steady" not in flags
                   else "not steady: latency or in-flight requests still rising at the end of the step")
            if "fail" in verdicts:
                status = "fail"
                reasons.insert(0, why)
            else:
                status = "undetermined"
                reasons.insert(0, f"{why}: cannot pass, and no clause fails on its steady window, so it is no "
                                  "measured failure either: undetermined")
        elif "fail" in verdicts:
            status = "fail"
        elif "undetermined" in verdicts or "close" in verdicts or BLOCKING_FLAGS & set(flags):
            status = "undetermined"
            reasons += [f"flag {f}" for f in flags if f in BLOCKING_FLAGS]
        else:
            status = "pass"
        known = [m for m in margins.values() if m is not None]
        # a step too close to call still informs the interpolation (its margins are the best estimate)
        # (a not-steady step is no close call: its clauses hold, but its window does not show a sustained load)
        close = (status == "undetermined" and "undetermined" not in verdicts and not BLOCKING_FLAGS & set(flags)
                 and "not_steady" not in flags and not unsettled)
        window = ("tool summary" if tables else "whole step (no per-request times)" if "no_times" in flags
                  else "steady window; its last quarter breaks the SLA (not settled)" if unsettled
                  else "steady window")
        out.append(JudgedStep(
            row=row, x=x, status=status, margins=margins, reasons=reasons, verdicts=dict(zip(judged_names, verdicts,
                                                                                               strict=True)),
            sla_margin=min(known) if known else None, not_steady="not_steady" in flags or unsettled, flags=flags,
            settling=st, by_bound=by_bound, close=close,
            # the pooled estimator uses every step whose load is known and not blocked by a flag, whatever its
            # verdict: a step too small for a percentile still contributes its counts (a blocking flag only
            # forbids claiming a pass: a step that fails anyway keeps its counts)
            pool_ok=x is not None and math.isfinite(x) and (not BLOCKING_FLAGS & set(flags) or "fail" in verdicts
                                                          or "not_steady" in flags or unsettled),
            clause_ok=[v != "fail" for v in verdicts], window=window))
    transient_not_steady(out)
    return out


def transient_not_steady(judged: list[JudgedStep]) -> None:
    """A not-steady step below a load that passes steadily is a transient, not a failure.

    E.g. the first step of a run filling an empty server, or a queue settling to a higher
    but steady level after a load rise: only a not-steady step above every clean pass may bind.
    """
    passes = [j.x for j in judged if j.status == "pass" and j.x is not None]
    top = max(passes, default=None)
    for j in judged:
        if j.not_steady and top is not None and j.x < top:
            j.not_steady = False
            j.reasons[0] = (f"not steady, but a higher load ({top:g}) passes steadily: treated as a transient, "
                               "not a failure")
            j.status = "fail" if not all(j.clause_ok) else "undetermined"


def close_calls_by_bootstrap(judged: list[JudgedStep], sla: SLA, reps: ReplicateTable,
                              level: float, ignore: frozenset[str] = frozenset()) -> None:
    """A passing step whose block-bootstrap margin (lower 2.5 %) breaks a clause is too close to call.

    The order-statistic bound assumes independent requests; near capacity latencies are
    strongly autocorrelated, and the time-block bootstrap of the step sees more of that spread.
    """
    a = (1 - level) / 2
    for j in judged:
        if j.status != "pass":
            continue
        for i, c in enumerate(sla.clauses):
            if c.text in ignore:
                continue
            rv = reps.margin(j.row.step, i)
            if rv is None or np.isnan(rv).all():  # the step not resampled, or no resample defines the statistic
                continue
            lo = float(quantile(rv[~np.isnan(rv)], a))
            if not c.passes(lo):
                j.status = "undetermined"
                j.close = True
                j.verdicts[c.text] = "close"
                j.reasons.append(f"{c.text}: passes, but fails in more than {a:.1%} of the step's block-bootstrap "
                                    "resamples (time blocks of the step drawn again): too close to call")
                break


def mark_recovery_steps(judged: list[JudgedStep]) -> None:
    """Exclude steps run at a lower load after a failing step: they measure recovery, not capacity.

    "After" is the time order of the steps (their first request start, ``t_first_s``; the
    tool's step order when a step has no times), whatever the loader's numbering; "lower"
    compares the offered (requested) load, not the achieved send rate, so a step whose
    achieved rate dipped while the requested load rose is not a recovery step. A step that starts after a rest
    longer than the failing step and :data:`RECOVERY_REST_S` is not one either (:func:`_rested`).
    """
    timed = all(j.row.t_first_s is not None for j in judged)

    def order(j: JudgedStep) -> float:
        return float(j.row.t_first_s) if timed else float(j.row.step)

    def requested(j: JudgedStep) -> float | None:
        x = j.row.offered_load
        x = j.x if x is None or not math.isfinite(x) else x
        return None if x is None or not math.isfinite(x) else float(x)

    # a step whose queue was still rising (not steady: undetermined for the limit) overloaded the server as much as
    # a failing one: the lower steps run after it measure recovery too
    failed = [(order(j), j.row.step, requested(j), j if timed else None) for j in judged
              if (j.status == "fail" or j.not_steady) and requested(j) is not None]
    for j in judged:
        x = requested(j)
        if x is None or j.status == "excluded":
            continue
        me = j.row.step
        before = sorted(((t, st, xf) for t, st, xf, f in failed if t < order(j) and xf > x
                         and st // POOL_STEP_OFFSET == me // POOL_STEP_OFFSET  # the same run (pooled runs)
                         and not _rested(j, f)), key=lambda r: r[0])
        if before:
            _, st, xf = before[0]
            j.status = "excluded"
            j.recovery = True
            j.reasons.insert(0, f"run after step {st}, which failed at a higher requested load ({xf:g} > {x:g}):"
                                   " a recovery step, used for T_recover, not for the limit")


RECOVERY_REST_S = 60.0
"""A step that starts at least this long, and at least the failing step's own length, after a failing step ended is
not its recovery: the server rested in between (a Vegeta series whose 2 rps attack ran 52 minutes after its 5 rps
one was left out as a recovery step, and the limit fell below a load that passed 120 of 120)."""


def _rested(j: JudgedStep, failed: JudgedStep | None) -> bool:
    """``j`` starts after a rest that outlasts the ``failed`` step: at least :data:`RECOVERY_REST_S` and the failing
    step's own length (its first request's start to its last request's end, ``t_first_s`` … ``t_done_s``) after
    its last request ended. False where the times are not known: a tool's step order alone cannot show a rest."""
    if failed is None or j.row.t_first_s is None or failed.row.t_first_s is None or failed.row.t_done_s is None:
        return False
    span = float(failed.row.t_done_s) - float(failed.row.t_first_s)
    if not math.isfinite(span) or span < 0:
        return False
    gap = float(j.row.t_first_s) - float(failed.row.t_done_s)
    return gap >= max(RECOVERY_REST_S, span)


def judge(rows: list[CurveRow], sla: SLA, tables: bool, reps: ReplicateTable | None, level: float,
          ignore: frozenset[str] = frozenset(), settle: Mapping[int, StepSettling] | None = None) -> list[JudgedStep]:
    """Every step judged, sorted by load (then step), with the close-call and recovery passes applied."""
    out = judge_steps(rows, sla, tables, ignore, settle)
    out.sort(key=lambda j: (j.x if j.x is not None and math.isfinite(j.x) else math.inf, j.step))
    if reps is not None:
        close_calls_by_bootstrap(out, sla, reps, level, ignore)
    mark_recovery_steps(out)
    return out


def usable_steps(judged: list[JudgedStep], tables: bool) -> list[JudgedStep]:
    """The steps whose evidence the estimators use: load known, not excluded, no blocking flag (unless they
    fail anyway); a step too small for a percentile on its own still contributes its counts."""
    return [j for j in judged if j.pool_ok and j.status != "excluded"
            and (tables or j.row.has_counts)]


__all__ = ["BLOCKING_FLAGS", "JudgedStep", "close_calls_by_bootstrap", "judge", "judge_clause",
           "judge_steps", "mark_recovery_steps", "transient_not_steady", "usable_steps"]
