"""One load-test step as the plan reads it: :class:`PlanStep`.

The limits hand the plan judged steps (:class:`bearing_lib.limits.result.Step`); the plan reads a few of their
fields (load, throughput, errors, mean concurrency, what each SLA clause observed) and the latency statistics
keyed ``{metric}_{stat}`` (``ttft_ms_p95``, ``latency_ms_p99``, ``latency_ms_mean``) that the step, its observed
percentile clauses and the load curve give (:func:`bearing_lib.plan.inputs.limits_input`,
:func:`bearing_lib.plan.inputs.enrich_steps`). It stays inside the plan (safe concurrency, concurrency at the
limit, the checklist); the stage boundary is the typed :class:`~bearing_lib.limits.result.LimitsResult`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from bearing_lib.limits.result import Step


@dataclass
class PlanStep:
    """A step's fields the plan reads, and its statistics by ``{metric}_{stat}`` key (``stats``).

    ``offered_load_unit`` is the limits' offered-load unit (``rps``, ``concurrency``) when one is known;
    ``observed`` the value each SLA clause saw, keyed by the clause's text."""

    step: int | None = None
    offered_load: float | None = None
    load_axis: float | None = None
    offered_load_unit: str | None = None
    throughput_rps: float | None = None
    error_rate: float | None = None
    concurrency_mean: float | None = None
    recovery_step: bool = False
    backlog: str | None = None
    """Why the step's in-flight count is a backlog rather than the working set at its load, in words (None where
    nothing says so): the first of its flags (``limits.curves``) ``saturated``, ``throughput_below_offered`` and
    ``not_steady`` (the queue still rising through the step), as :data:`BACKLOG_FLAGS` words them."""
    observed: dict[str, float | None] = field(default_factory=dict)
    stats: dict[str, float | None] = field(default_factory=dict)
    too_few: tuple[str, ...] = ()
    """The percentiles (``p95``, ``p99``) the step holds too few requests to support (its ``too_few_for_pNN``
    flags): a figure read at such a step is said to be one."""
    n_ok: int | None = None

    def stat(self, key: str) -> float | None:
        """The statistic ``key`` (``ttft_ms_p95``, ``latency_ms_mean``), or None when the step has none."""
        return self.stats.get(key)

    @classmethod
    def from_step(cls, st: Step, sla: list[Any], unit: str | None) -> PlanStep:
        """From a judged :class:`~bearing_lib.limits.result.Step`: its ``stats``, then (where it has none) the
        observed value of each percentile clause of the SLA (``sla``: its clauses) under ``{metric}_{stat}``."""
        stats: dict[str, float | None] = dict(st.stats or {})
        by_text = {c.text: c for c in sla}
        for text, v in (st.observed or {}).items():
            c = by_text.get(text)
            if c is not None and c.kind == "percentile" and c.metric and v is not None:
                stats.setdefault(f"{c.metric}_{c.stat}", v)
        return cls(step=st.step, offered_load=st.offered_load, load_axis=st.load_axis, offered_load_unit=unit,
                   throughput_rps=st.throughput_rps, error_rate=st.error_rate, concurrency_mean=st.concurrency_mean,
                   recovery_step=st.recovery_step, backlog=_backlog(st.flags),
                   observed=dict(st.observed or {}), stats=stats,
                   too_few=tuple(f.removeprefix("too_few_for_") for f in st.flags or ()
                                 if f.startswith("too_few_for_")), n_ok=st.n_ok)

    def add_curve_columns(self, row: dict[str, object]) -> None:
        """The load curve's columns at this step (``row``: a curve row) where the step has no value: a field left
        empty (a unit) is filled only when the step gave it no key at all, as the judged step's fields win; a
        numeric column joins ``stats`` unless the step already has that key."""
        own = {f.name for f in (*dataclasses.fields(self), *dataclasses.fields(Step))} - {"stats"}
        for k, v in row.items():
            if v is None:
                continue
            if k == "offered_load_unit":
                if self.offered_load_unit is None:
                    self.offered_load_unit = str(v)
            elif k not in own and k not in self.stats and isinstance(v, int | float) and not isinstance(v, bool):
                self.stats[k] = float(v)


BACKLOG_FLAGS: dict[str, str] = {
    "saturated": "saturated",
    "throughput_below_offered": "completed less than was offered",
    "not_steady": "was still filling up (its queue rose through the step)",
}
"""The step flags whose in-flight count is a growing backlog, in order of precedence, and how the plan says so.
Not ``generator_behind``: requests that waited at the client were not in flight at the server, and the step is
read at the rate it sent (its in-flight count is the working set there)."""


def _backlog(flags: list[str] | None) -> str | None:
    return next((words for flag, words in BACKLOG_FLAGS.items() if flag in (flags or [])), None)


__all__ = ["BACKLOG_FLAGS", "PlanStep"]
