"""The words of a limit: its value, interval and censoring said as a reviewer reads them.

``limits.estimators`` decides the numbers; this module only says them (``q_ult.statement``): a value with its
interval (an end the data cannot bound said in words), a limit below the lowest load judged, one the requests
cannot place (and what would place it), and the pooled estimator's censoring.
"""

from __future__ import annotations

import math

import numpy as np

from bearing_lib.limits.curves import QUANTILES, qname
from bearing_lib.limits.judging import BLOCKING_FLAGS, JudgedStep
from bearing_lib.limits.pooled import requests_needed
from bearing_lib.limits.sla import SLA, Clause


def fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def below_statement(x0: float, u: str, judged: list[JudgedStep], tables: bool = False) -> str:
    """``< x0 (failed at the lowest load judged)``, with how many lower steps could not be judged and why. Where no
    step at ``x0`` failed on its own (a table's step read through the bounds its figures put on the share, a thin
    or not-steady step of a trace), the words say the model places the crossing below it, and why the step alone
    does not."""
    at = [j for j in judged if j.x is not None and j.x == x0]
    if at and not any(j.status == "fail" for j in at):
        how = ", from what its figures bound" if tables else ""
        if any(j.status == "pass" for j in at):
            return (f"< {x0:g} {u} (the crossing lies below the lowest load read{how}, although a step there passed on "
                    "its own: the steps read together place it lower)")
        why = next((r for j in at for r in j.reasons), "see each step's reasons")
        return (f"< {x0:g} {u} (the crossing lies below the lowest load read{how}; that step was not judged on its "
                f"own: {why})")
    passed = sum(j.status == "pass" for j in at)
    judged_at = sum(j.status in ("pass", "fail") for j in at)
    if passed:
        # repeats at the lowest load that disagree: it failed there read together, not in every repeat (llm-d exp-7
        # 2p1d: one of two repeats at 2.5 rps passed; "failed at the lowest load judged" read as both failing: a new
        # user's case, round 23)
        statement = (f"< {x0:g} {u} (its repeats at the lowest load judged fail read together; {passed} of "
                     f"{judged_at} judged there passed on its own)")
    else:
        statement = f"< {x0:g} {u} (failed at the lowest load judged)"
    lower = [j for j in judged if j.status == "undetermined" and j.x is not None and j.x < x0]
    if lower:
        statement += (f"; the {len(lower)} lower step(s) could not be judged ("
                      f"{lower[0].reasons[0] if lower[0].reasons else 'see steps'})")
    return statement


def ci_text(lo: float | None, hi: float | None) -> str:
    """``95% CI a–b``; an end the data cannot bound (beyond the loads tested) said in words."""
    if lo is not None and hi is not None:
        return f"95% CI {lo:.4g}–{hi:.4g}"
    if lo is not None:
        return f"95% CI from {lo:.4g}, upper end above the loads tested"
    if hi is not None:
        return f"95% CI up to {hi:.4g}, lower end below the loads tested"
    return "95% CI beyond the loads tested on both sides"


def unplaced_statement(x_lo: float, x_hi: float, u: str, sla: SLA, unread: list[JudgedStep] | None = None) -> str:
    """Why a limit could not be placed, and what would place it (the requests its most demanding clause needs at
    a load, ``pooled.requests_needed``). ``unread``: tested steps outside ``[x_lo, x_hi]`` whose evidence was not
    read (too short, excluded): said, so that "the highest load" is not taken for the highest tested."""
    what_load = "load read" if unread else "load tested"
    where = (f"its 95% interval reaches from below the only {what_load} ({x_lo:.4g} {u}) to above it"
             if x_hi <= x_lo else
             f"its 95% interval reaches from below the lowest {what_load} ({x_lo:.4g} {u}) to above the highest "
             f"({x_hi:.4g} {u})")
    if unread:
        blocking = sorted(set(unread[0].row.flags or []) & BLOCKING_FLAGS)
        first = (f"flag {', '.join(blocking)}" if blocking else
                 unread[0].reasons[0] if unread[0].reasons else "see each step's reasons")
        where += (f" (the step(s) at {', '.join(f'{j.x:.4g}' for j in unread)} {u} were tested but not read: "
                  f"{first})")
    need = [(n, -i, c.text) for i, c in enumerate(sla.clauses) if (n := requests_needed(c)) is not None]
    if need:
        n, _, text = max(need)
        what = f"more requests per step would place it ({text} needs about {n:,} requests at a load for a 95% interval)"
    else:
        what = "more requests per step would place it"
    if x_hi <= x_lo:
        what += ", and a second load would bracket it"
    return f"{where}; {what}"


def unreported_clauses(steps: list[JudgedStep], sla: SLA, ignore: set[str]) -> list[tuple[Clause, list[str]]]:
    """A load-point table's percentile clauses (not in ``ignore``) whose own percentile no step reports (every step,
    judged or not: a percentile over too few requests is reported, and its step says why it is not judged), each with
    what is reported of its metric that bounds the share above its threshold (``evidence._percentile_evidence``:
    the table's percentiles, and a mean only with a maximum)."""
    def reported(metric: str, name: str) -> bool:
        return any(j.row.q(metric, name).value is not None for j in steps)

    out: list[tuple[Clause, list[str]]] = []
    if not steps:
        return out
    for c in sla.clauses:
        if c.kind != "percentile" or c.text in ignore or c.metric is None or reported(c.metric, qname(c.q)):
            continue
        have = [n for n in QUANTILES if reported(c.metric, n)]
        if any(j.row.maxima.get(c.metric) is not None for j in steps):
            have += ["mean", "max"] if any(j.row.means.get(c.metric) is not None for j in steps) else ["max"]
        out.append((c, have))
    return out


def unreported_statement(missing: list[tuple[Clause, list[str]]]) -> str | None:
    """Why a load-point table cannot place the limit when no load reports the percentile a clause reads: what is
    reported only bounds the share above the threshold (a P50 below it says at most half the requests are above),
    and what would place it is that percentile (or, for a level a table does not hold, the per-request results),
    not more requests. ``missing``: :func:`unreported_clauses`' answer; None when it is empty."""
    if not missing:
        return None
    parts, wanted = [], []
    for c, have in missing:
        told = (f"what is reported ({', '.join(have)}) bounds the share of requests above the clause's threshold too "
                "loosely to place it" if have else "nothing of that metric is reported")
        parts.append(f"no load reports the {c.stat} of {c.metric} that {c.text} reads, and {told}")
        if qname(c.q) in QUANTILES:
            wanted.append(f"a run that reports the {c.stat} of {c.metric}")
        else:  # a level a load-point table does not hold (p75, p99.9): only the requests themselves
            wanted.append(f"the per-request results (a load-point table holds {', '.join(QUANTILES)} only)")
    wanted = list(dict.fromkeys(wanted))
    if all(w.startswith("a run") for w in wanted):
        wanted.append("the per-request results")
    return (f"the reported percentiles cannot place the limit: {'; '.join(parts)}; {' or '.join(wanted)} would "
            "place it")


def trace_statement(judged: list[JudgedStep], use_pool: bool, est: float, grid: np.ndarray,
                    passes: list[float], fails: list[float], contradict: list[JudgedStep],
                    last_pass: float | None, first_fail: float | None, floor: float | None,
                    ci: list[float | None], u: str, binding: str | None,
                    ) -> tuple[str, float | None, str, str | None]:
    """Censoring, value (kept within [floor, first fail]), statement and binding clause of a trace's limit."""
    pool_below = use_pool and math.isfinite(est) and est > 0 and grid.size > 0 and est > grid[0]
    if use_pool and est == math.inf:
        censored, value = "above", float(grid[-1])
        statement = f"≥ {value:g} {u} (never failed)"
        binding = None
    elif not use_pool and not fails and not any(j.not_steady for j in judged):
        censored, value = "above", max(passes)
        statement = f"≥ {value:g} {u} (never failed)"
        binding = None
    elif (use_pool and not pool_below and not contradict) or (not use_pool and last_pass is None
                                                                and not contradict):
        # no judged failure but a not-steady step: the lowest such step bounds the step-wise estimate
        lowest_ns = min((j.x for j in judged if j.not_steady and j.x is not None), default=None)
        x0 = float(grid[0]) if use_pool and grid.size else first_fail if first_fail is not None else lowest_ns
        censored, value = "below", x0
        statement = below_statement(x0, u, judged)
    else:
        censored = "not_monotone" if contradict else "none"
        value = est
        if floor is not None and first_fail is not None and not contradict:
            value = min(max(est, floor), first_fail)
        elif floor is not None and not contradict and math.isfinite(est):
            value = max(est, floor)
        if not math.isfinite(value):
            value = last_pass if last_pass is not None else first_fail
        statement = f"{value:.4g} {u}"
        if ci[0] is not None and ci[1] is None and fails == [] and any(j.not_steady for j in judged):
            statement += (f" (95% CI from {ci[0]:.4g}, open above: no step above the limit failed a clause, the "
                          "steps there only kept rising)")
        elif ci[0] is not None or ci[1] is not None:
            statement += f" (95% CI {fmt(ci[0])}–{fmt(ci[1])})"
        if contradict:
            bad = ", ".join(f"step {j.row.step} ({j.x:g} {u})" for j in contradict)
            statement = (f"not monotone: {bad} pass(es) above the failing load {first_fail:g} {u}; "
                         f"isotonic estimate {value:.4g} {u}, treat with caution")
        elif use_pool and last_pass is None:
            statement += (" (pooled over all requests: no step on its own holds enough requests for the "
                          "SLA's percentile below the first failing load)")
    return censored, value, statement, binding


__all__ = ["below_statement", "ci_text", "fmt", "trace_statement", "unplaced_statement", "unreported_clauses",
           "unreported_statement"]
