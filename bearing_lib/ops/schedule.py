"""Scheduled scaling from the daily profile: KEDA cron triggers per hour-of-day slot.

A fleet sized for the daily peak all day pays for the trough. The profile's hour-of-day slots
(``slots.hour_of_day``: the P95 of the per-minute rate in each UTC hour over the days seen,
``traffic/seasonality.py``) give each hour a floor of ``ceil(P95 of the hour / A)`` replicas,
with ``A`` the plan's per-instance allowable load (Q_ult per instance / design FOS), rounded up
to an even spread over the plan's failure domains when it has them (the same loss rule as
``failure_domains``: ``bearing_lib.plan.domains.domain_layout``). The lowest floor becomes the
ScaledObject's ``minReplicaCount``; each run of consecutive hours whose floor is higher becomes
one KEDA ``cron`` trigger (``start``/``end`` as 5-field cron, ``timezone`` ``Etc/UTC``,
``desiredReplicas``): KEDA takes the largest replica count any trigger asks for, so the
request-rate trigger still scales above the floor (kedacore/keda ``pkg/scalers/cron_scaler.go``:
the scaler is active between start and end and asks for ``desiredReplicas``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bearing_lib.common.errors import ParameterError

if TYPE_CHECKING:
    from bearing_lib.ops.exports import PlanNumbers

TIMEZONE = "Etc/UTC"


@dataclass(frozen=True)
class CronWindow:
    """Hours ``[start_hour, end_hour)`` UTC (end 24 = midnight) held at ``replicas`` or more."""

    start_hour: int
    end_hour: int
    replicas: int
    peak_rps: float

    def trigger(self) -> dict[str, object]:
        return {"type": "cron", "metadata": {"timezone": TIMEZONE, "start": f"0 {self.start_hour} * * *",
                                              "end": f"0 {self.end_hour % 24} * * *",
                                              "desiredReplicas": str(self.replicas)}}

    def text(self) -> str:
        return (f"{self.start_hour:02d}:00-{self.end_hour % 24:02d}:00 UTC: {self.replicas} replicas (hour P95 up to "
                f"{self.peak_rps:.3g} req/s)")


@dataclass(frozen=True)
class DailySchedule:
    """The floor per UTC hour and the cron windows above the lowest floor."""

    per_hour: tuple[tuple[int, float, int], ...]  # (hour, P95 rps, replicas)
    floor: int
    windows: tuple[CronWindow, ...]
    per_instance_allowable_rps: float
    repeated: bool

    def statement(self) -> str:
        s = (f"{self.floor} replicas off-peak; " + "; ".join(w.text() for w in self.windows)
             if self.windows else f"{self.floor} replicas all day (no hour needs more)")
        if not self.repeated:
            s += " (each hour seen on one day only: re-derive with more days)"
        return s

    def to_dict(self) -> dict[str, object]:
        return {"per_instance_allowable_rps": self.per_instance_allowable_rps, "floor": self.floor,
                "repeated": self.repeated, "statement": self.statement(),
                "per_hour": [{"hour": h, "p95_rps": r, "replicas": n} for h, r, n in self.per_hour],
                "windows": [{"start_hour": w.start_hour, "end_hour": w.end_hour, "replicas": w.replicas,
                             "peak_rps": w.peak_rps} for w in self.windows]}


def _replicas(rps: float, allowable: float, zones: int | None, domains_lost: int, rpn: int | None) -> int:
    n = max(1, math.ceil(rps / allowable - 1e-9))
    if zones is None:
        return n
    from bearing_lib.plan.domains import domain_layout

    return domain_layout(n, zones, domains_lost, rpn)[0]


def daily_schedule(hour_p95_rps: dict[int, float], per_instance_allowable_rps: float, *, zones: int | None = None,
                   domains_lost: int = 1, replicas_per_node: int | None = None,
                   repeated: bool = True) -> DailySchedule:
    """Replicas per UTC hour and the cron windows (module docstring); hours missing count as the lowest."""
    if not (per_instance_allowable_rps > 0 and math.isfinite(per_instance_allowable_rps)):
        raise ParameterError(f"the per-instance allowable load must be > 0 (got {per_instance_allowable_rps})")
    if not hour_p95_rps or any(h not in range(24) for h in hour_p95_rps):
        raise ParameterError("hour-of-day slots must be hours 0-23 (the profile's slots.hour_of_day)")
    per_hour = tuple((h, float(r), _replicas(float(r), per_instance_allowable_rps, zones, domains_lost,
                                             replicas_per_node)) for h, r in sorted(hour_p95_rps.items()))
    floor = min(n for _, _, n in per_hour)
    by_hour = {h: (r, n) for h, r, n in per_hour}
    windows: list[CronWindow] = []
    h = 0
    while h < 24:
        r, n = by_hour.get(h, (0.0, floor))
        if n <= floor:
            h += 1
            continue
        end, peak = h + 1, r
        while end < 24 and by_hour.get(end, (0.0, floor))[1] == n:
            peak = max(peak, by_hour[end][0])
            end += 1
        windows.append(CronWindow(h, end, n, peak))
        h = end
    return DailySchedule(per_hour, floor, tuple(windows), per_instance_allowable_rps, repeated)


def schedule_from_profile(profile_path: str | Path, numbers: PlanNumbers) -> DailySchedule:
    """The daily schedule of a profile JSON's ``slots.hour_of_day`` for the plan's numbers (its per-instance
    allowable load and failure domains); a profile without hour slots is refused with its own reason."""
    from bearing_lib.common.errors import SchemaError
    from bearing_lib.common.files import read_json
    from bearing_lib.traffic.document import TrafficProfile

    path = Path(profile_path)
    doc = TrafficProfile.from_dict(read_json(path, "profile JSON"), source=f"profile JSON {path}")
    hod = doc.slots.hour_of_day if doc.slots is not None else None
    if hod is None or not hod.available:
        why = hod.reason if hod is not None else "the profile has no slots section"
        raise SchemaError(f"no hour-of-day slots for a cron schedule: {why}", path=path, field="slots.hour_of_day")
    if doc.relative:
        raise SchemaError("the profile's clock is relative: its hours are not times of day, so no cron schedule",
                          path=path, field="clock")
    rates = {int(r.hour): float(r.p95_rps) for r in hod.rows if r.hour is not None and r.p95_rps is not None}
    return daily_schedule(rates, numbers.per_instance_allowable_rps, zones=numbers.zones,
                          domains_lost=numbers.domains_lost, replicas_per_node=numbers.replicas_per_node,
                          repeated=hod.repeated)


__all__ = ["TIMEZONE", "CronWindow", "DailySchedule", "daily_schedule", "schedule_from_profile"]
