"""The block-bootstrap replicates of a request trace's steps, per (run, mix) group, step and SLA clause.

``limits.resample`` resamples each step's steady requests in blocks of time (``limits.bootstrap``; from per-block
statistics on an engine, ``limits.stepstats.replicates_from_stats``) and keeps, per SLA clause ``i`` (the SLA's
order), two arrays of one value per resample:

* the clause's **margin** (``Clause.observed_to_margin`` of the step's statistic): the close-call test of
  ``limits.judging`` and the step-wise estimator of ``limits.estimators`` read it;
* the clause's **pooled margin** (``limits.pooled.share_to_margin`` of the step's bad share): the pooled
  estimator's interval and the design effect of ``limits.evidence`` read it.

A step missing from a table was not resampled: the group has no steady request in it (or the step is not the
group's). The accessors say so with None; no caller reads a default in its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from bearing_lib.common.errors import ParameterError


@dataclass(frozen=True, eq=False)
class StepReplicates:
    """One step's resamples of one (run, mix) group: per SLA clause (the SLA's order) its margin and its pooled
    margin, one value per resample (NaN where a resample leaves the statistic undefined)."""

    margins: tuple[np.ndarray, ...]
    pooled: tuple[np.ndarray, ...]
    tail_deffs: tuple[float | None, ...] = ()
    """Per clause, the design effect of the step's own latency tail (``limits.evidence.tail_design_effect``): a
    percentile clause's share above the step's own :data:`limits.evidence.TAIL_Q` quantile, which has events in
    every step; None for other clauses (an engine's per-block histograms give it within their resolution,
    ``limits.stepstats``). Empty where no one computed it (a hand-built table)."""

    def __post_init__(self) -> None:
        if len(self.margins) != len(self.pooled):
            raise ParameterError(f"StepReplicates: {len(self.margins)} clause margin(s) but {len(self.pooled)} pooled "
                             "margin(s); expected one of each per SLA clause")
        if self.tail_deffs and len(self.tail_deffs) != len(self.margins):
            raise ParameterError(f"StepReplicates: {len(self.tail_deffs)} tail design effect(s) for "
                                 f"{len(self.margins)} clause(s); expected one per SLA clause, or none")


@dataclass(frozen=True, eq=False)
class ReplicateTable:
    """The block-bootstrap replicates of one (run, mix) group, per step (the curve's step number)."""

    steps: Mapping[int, StepReplicates]

    def margin(self, step: int, clause: int) -> np.ndarray | None:
        """Clause ``clause``'s margin in each resample of ``step``; None when the step was not resampled."""
        st = self.steps.get(int(step))
        return None if st is None else st.margins[clause]

    def pooled(self, step: int, clause: int) -> np.ndarray | None:
        """Clause ``clause``'s pooled margin (``1 − bad share / allowed``) in each resample of ``step``; None when
        the step was not resampled."""
        st = self.steps.get(int(step))
        return None if st is None else st.pooled[clause]

    def tail_deff(self, step: int, clause: int) -> float | None:
        """The design effect of clause ``clause``'s own latency tail in ``step`` (:attr:`StepReplicates.tail_deffs`);
        None when the step was not resampled or has none."""
        st = self.steps.get(int(step))
        return None if st is None or not st.tail_deffs else st.tail_deffs[clause]

    def share(self, step: int, clause: int, allowed: float) -> np.ndarray | None:
        """Clause ``clause``'s bad share in each resample of ``step`` (its pooled margin turned back with the
        clause's ``allowed`` share, ``limits.pooled.allowed_share``); None when the step was not resampled."""
        m = self.pooled(step, clause)
        return None if m is None else (1.0 - np.asarray(m, float)) * allowed


@dataclass(frozen=True, eq=False)
class TraceReplicates:
    """Every (run, mix) group's :class:`ReplicateTable` of one input (run and mix as strings)."""

    groups: Mapping[tuple[str, str], ReplicateTable]

    @classmethod
    def collect(cls, steps: Iterable[tuple[object, object, int, StepReplicates]]) -> TraceReplicates:
        """The groups' tables from ``(run, mix, step, replicates)`` in any order (a step given twice: the last)."""
        by_group: dict[tuple[str, str], dict[int, StepReplicates]] = {}
        for run, mix, step, reps in steps:
            by_group.setdefault((str(run), str(mix)), {})[int(step)] = reps
        return cls({k: ReplicateTable(v) for k, v in by_group.items()})

    @property
    def empty(self) -> bool:
        """No group was resampled (the input has no steady request)."""
        return not self.groups

    def table(self, run: object, mix: object) -> ReplicateTable | None:
        """The group's table; None when the group was not resampled (no steady request of it)."""
        return self.groups.get((str(run), str(mix)))


__all__ = ["ReplicateTable", "StepReplicates", "TraceReplicates"]
