"""The Pareto front under the SLA: throughput per GPU against throughput per user.

A load step is a point (output tokens/s per request, output tokens/s per GPU). Only steps that
met the SLA (status ``pass``) are candidates; a candidate is on the front when no other
candidate of the same comparability group (same SLA and model) is at least as good on both axes
and better on one (non-dominated set, maximising both). Steps without a GPU count have no
per-GPU value and are left out of the front (said in the deployment's notes).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from bearing_lib.compare.result import Deployment, StepPoint


def pareto(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (x, y), whether no other point dominates it (both maximised).

    >>> pareto([(1, 5), (2, 4), (1, 4), (3, 1)])
    [True, True, False, True]
    """
    out = []
    for i, (x, y) in enumerate(points):
        dominated = any(
            (x2 >= x and y2 >= y and (x2 > x or y2 > y)) for j, (x2, y2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def mark_front(deps: Sequence[Deployment], *, groups: Mapping[str, Hashable]) -> None:
    """Set :attr:`StepPoint.on_front` on the feasible steps of each group's non-dominated set."""
    by_group: dict[Hashable, list[StepPoint]] = {}
    for d in deps:
        for s in d.steps:
            s.on_front = False
            if s.feasible and s.per_gpu_tps is not None and s.per_user_tps is not None:
                by_group.setdefault(groups.get(d.name), []).append(s)
    for pts in by_group.values():
        for s, on in zip(pts, pareto([(s.per_user_tps, s.per_gpu_tps) for s in pts]), strict=True):
            s.on_front = on


__all__ = ["mark_front", "pareto"]
