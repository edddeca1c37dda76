"""When no limit can be judged: why, what would support one, and the follow-up test.

A load test whose every step is left out (too few requests for the SLA's percentile or
error rate, a percentile the tool's file does not report, no steady window) yields limits
with ``censored == "no_data"`` for every mix. There is then no factor of safety and no
capacity plan, but there is an answer a reviewer needs: the production profile (the report
shows it), why nothing could be judged, and the test that would support a limit.
:func:`no_limit` builds that answer from the :class:`~bearing_lib.limits.result.LimitsResult`.

What would support a limit, per SLA clause (the same counts the judge uses,
``docs/limits.md``, "Judging a step"):

* a percentile clause ``pQ(metric)``: the percentile per step (a load-point file must report
  it; a per-request file always can) and at least :func:`~bearing_lib.limits.curves.min_n_supported`
  successful requests per step, the smallest count whose 95 % order-statistic interval exists
  (P50 6, P90 36, P95 72, P99 368);
* an error-rate clause ``error_rate <= a``: at least ``ceil(1 / a)`` requests per step (100
  for 1 %), the fewest that can show a rate of ``a``.

The follow-up test: the loads already tested and doublings above the highest up to 4× it
(a limit needs a step that passes and one that fails, so the range must reach past the first
test), in ascending order, each step held long enough for that many requests at the slowest
throughput measured (rounded up to 10 s, at least :data:`MIN_STEP_S`), so that no step is
short of requests at the new loads either. Once a limit is bracketed, ``bearing next``
designs the finer test (``bearing_lib.limits.followup``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bearing_lib.limits.result import LimitsResult, MixLimit

MIN_STEP_S = 60.0
REACH = 4.0  # the follow-up reaches 4x the highest tested load (doublings)
_PREFIX = "no step can be judged against the SLA: "  # limits.estimators' statement of a mix without a judged step


@dataclass(frozen=True)
class Requirement:
    """What one SLA clause needs per step, and whether the first test had it."""

    clause: str
    requests_per_step: int
    """Requests (successful ones for a percentile) a step needs for the clause to be judged."""
    had_requests: int | None
    """The most requests any step of the first test held (successful ones for a percentile)."""
    field_missing: str | None = None
    """A percentile the first test's file does not report (``"p95 of ttft_ms"``), else None."""

    @property
    def text(self) -> str:
        parts = []
        if self.field_missing:
            parts.append(f"the {self.field_missing} per step (the load-test file does not report it: a per-request "
                         "output, or the tool's report with that percentile)")
        had = f" (the test had at most {self.had_requests:,})" if self.had_requests is not None else ""
        what = "successful requests" if self.clause.startswith("p") and "(" in self.clause else "requests"
        parts.append(f"≥ {self.requests_per_step:,} {what} per step{had}")
        return f"{self.clause}: " + " and ".join(parts)


@dataclass(frozen=True)
class FollowUpLoad:
    load: float
    duration_s: float


@dataclass
class NoLimit:
    """No mix of the limits has a judgeable step: why, what would support a limit, the follow-up test."""

    runs: list[str]
    mixes: list[str]
    unit: str
    tested_loads: list[float]
    why: list[str]
    requirements: list[Requirement]
    followup: list[FollowUpLoad]
    throughput_rps: float | None
    """The slowest throughput measured at a step (req/s), which the follow-up's durations assume."""
    notes: list[str] = field(default_factory=list)

    @property
    def requests_per_step(self) -> int:
        return max((r.requests_per_step for r in self.requirements), default=0)

    @property
    def statement(self) -> str:
        """One paragraph: ``no limit can be judged: ...; what would support one: ...; follow-up test: ...``."""
        loads = ", ".join(f"{x:g}" for x in self.tested_loads) or "none"
        text = (f"no limit can be judged: none of the {len(self.tested_loads)} load(s) tested ({loads} {self.unit}) "
                f"can be judged against the SLA ({'; '.join(self.why) or 'no steps'})")
        if self.requirements:
            text += ". What would support a limit: " + "; ".join(r.text for r in self.requirements)
        if self.followup:
            steps = ", ".join(f"{f.load:g}" for f in self.followup)
            durs = sorted({f.duration_s for f in self.followup})
            each = f"{durs[0]:g} s" if len(durs) == 1 else f"{durs[0]:g}-{durs[-1]:g} s"
            basis = (f" ({self.requests_per_step:,} requests at the {self.throughput_rps:.3g} req/s the test "
                     "completed at its slowest step)" if self.throughput_rps else "")
            text += (f". Follow-up test: loads {steps} {self.unit} in ascending order, each step held {each}"
                     f"{basis}; once it brackets the limit, `bearing next LIMITS.json` designs the finer test")
        return text + "."


def _reported(steps: list, metric: str | None, stat: str) -> bool:
    """Whether any step carries the percentile ``{metric}_{stat}`` (a per-request curve always does)."""
    key = f"{metric}_{stat}"
    return any(key in (st.stats or {}) for st in steps) or any(
        st.observed.get(key) is not None for st in steps)


def _requirement(clause, steps: list) -> Requirement | None:  # noqa: ANN001 - a sla.Clause
    from bearing_lib.limits.curves import min_n_supported

    if clause.kind == "percentile" and clause.stat.startswith("p"):
        try:
            q = float(clause.stat[1:]) / 100.0
        except ValueError:
            return None
        need = min_n_supported(q)
        had = max((st.n_ok if st.n_ok is not None else st.n_requests or 0 for st in steps), default=None)
        judged = [st for st in steps if st.observed.get(clause.text) is not None]
        missing = None
        if not judged and not _reported(steps, clause.metric, clause.stat) and any(
                "reports no" in r and clause.text in r for st in steps for r in st.reasons):
            missing = f"{clause.stat} of {clause.metric}"
        return Requirement(clause.text, need, had, missing)
    if clause.kind == "error_rate" and clause.threshold is not None and clause.threshold > 0:
        had = max((st.n_requests or 0 for st in steps), default=None)
        return Requirement(clause.text, math.ceil(1.0 / float(clause.threshold) - 1e-9), had)
    return None


def _ceil10(x: float) -> float:
    return float(math.ceil(x / 10.0) * 10.0)


def no_limit(limits: LimitsResult, *, run: str | None = None) -> NoLimit | None:
    """The answer when no mix (of ``run``, or of any run) has a judgeable step; None when one has a limit."""
    mixes: list[MixLimit] = [m for m in limits.mixes if run is None or m.run_id == run]
    if not mixes or any(m.q_ult is not None and m.q_ult.censored != "no_data" for m in mixes):
        return None
    steps = [st for m in mixes for st in m.steps if not st.recovery_step]
    unit = next((m.q_ult.unit for m in mixes if m.q_ult is not None and m.q_ult.unit), None) or "load"
    loads = sorted({float(st.offered_load) for st in steps if st.offered_load is not None
                    and math.isfinite(float(st.offered_load))})
    why = [f"{m.run_id} · {m.mix.name}: {m.q_ult.statement.removeprefix(_PREFIX)}" for m in mixes
           if m.q_ult is not None and m.q_ult.statement]
    reqs = [r for c in limits.sla if (r := _requirement(c, steps)) is not None]
    thr = [float(st.throughput_rps) for st in steps if st.throughput_rps]
    slowest = min(thr) if thr else None
    follow: list[FollowUpLoad] = []
    need = max((r.requests_per_step for r in reqs), default=0)
    if loads:
        grid = list(loads)
        x = loads[-1]
        while x * 2 <= loads[-1] * REACH + 1e-9:
            x *= 2
            grid.append(x)
        for load in grid:
            dur = MIN_STEP_S
            if slowest and need:
                dur = max(MIN_STEP_S, _ceil10(need / slowest))
            elif unit == "rps" and need:
                dur = max(MIN_STEP_S, _ceil10(need / load))
            follow.append(FollowUpLoad(load, dur))
    notes = []
    if not slowest and unit != "rps":
        notes.append("the test measured no throughput: the durations are the minimum step; count the requests")
    return NoLimit(runs=sorted({m.run_id for m in mixes}), mixes=[m.mix.name for m in mixes], unit=unit,
                   tested_loads=loads, why=why, requirements=reqs, followup=follow, throughput_rps=slowest,
                   notes=notes)


__all__ = ["MIN_STEP_S", "REACH", "FollowUpLoad", "NoLimit", "Requirement", "no_limit"]
