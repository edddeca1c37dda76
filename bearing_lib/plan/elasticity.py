"""The seeds' ``ElasticityEngine`` as a pure function, and a minute-by-minute replay.

Decision rule (:func:`decide_scaling_action`), from the seed:

* ``load_ratio = qps / max_qps``;
* above ``scale_up_threshold`` (0.7): scale up, unless the cold start exceeds the
  latency budget, in which case take no action and recommend fixed capacity;
* below ``scale_down_threshold`` (0.3) for at least the cool-down (15–30 min; 20 by
  default): scale down by one;
* otherwise no action.

Two things the seed leaves open are fixed here and documented: the scale-up count
brings the load to ``target_ratio`` (0.6, the low end of the sources' 60–70 % of the
breakpoint) of the provisioned capacity; and the seed compares a 40–150 s cold start
with *half a request's latency budget* (milliseconds), which would always say "fixed".
Here the budget is how long the service may run short of capacity while a new
instance starts (``latency_budget_s``, ``None`` = no such limit).

Replay (:func:`replay`): the rule is applied at the end of each minute of a production
per-minute series. Conventions (all configurable; used by the hand-worked test):

* minute ``t`` carries ``counts[t] / 60`` req/s; each instance carries ``per_instance_rps``
  (its SLA-constrained limit);
* the engine sees ``max_qps = provisioned instances × per_instance_rps``, counting
  instances still starting (as a Kubernetes HPA counts desired replicas);
* an instance asked for at the end of minute ``t`` is ready ``cold_start_s`` later, at
  ``t + 1 + cold_start_s / 60`` minutes, and counts for capacity from the first whole
  minute that starts after that (conservative: a part-minute is not credited);
* minute ``t`` is **over capacity** when its rate exceeds ready instances × per-instance rps;
* the low-load run counts consecutive minutes with ``load_ratio < 0.3``; it restarts
  after every scale-down, so each further step down needs another full cool-down.

Recommendation: elastic when no minute was over capacity; otherwise fixed capacity plus a
buffer of ``max over those minutes of ceil(rate / per_instance_rps) − ready instances``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bearing_lib.common.errors import ParameterError
from bearing_lib.plan.jsonform import STRICT, to_json

ActionKind = Literal["scale_up", "scale_down", "none"]

SCALE_UP_THRESHOLD = 0.7
SCALE_DOWN_THRESHOLD = 0.3
TARGET_RATIO = 0.6
DEFAULT_COOL_DOWN_S = 20 * 60
DEFAULT_COLD_START_S = 90.0


@dataclass(frozen=True)
class ScalingAction:
    """What the engine decides: ``kind``, how many instances, the reason and a recommendation."""

    kind: ActionKind
    count: int
    load_ratio: float
    reason: str
    recommendation: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def decide_scaling_action(
    qps: float,
    max_qps: float,
    *,
    low_duration_s: float = 0.0,
    cold_start_s: float = DEFAULT_COLD_START_S,
    latency_budget_s: float | None = None,
    cool_down_s: float = DEFAULT_COOL_DOWN_S,
    scale_up_threshold: float = SCALE_UP_THRESHOLD,
    scale_down_threshold: float = SCALE_DOWN_THRESHOLD,
    current_instances: int | None = None,
    per_instance_qps: float | None = None,
    target_ratio: float = TARGET_RATIO,
) -> ScalingAction:
    """The seed's ``decide_scaling_action`` (see module docstring).

    ``low_duration_s`` is how long the load ratio has already been below the scale-down
    threshold (including now). With ``current_instances`` and ``per_instance_qps`` the
    scale-up count is ``ceil(qps / (per_instance_qps × target_ratio)) − current``
    (at least 1); without them it is 1.

    Examples
    --------
    >>> decide_scaling_action(80, 100).kind
    'scale_up'
    >>> decide_scaling_action(80, 100, cold_start_s=120, latency_budget_s=60).recommendation
    'increase fixed capacity instead of elastic scaling'
    >>> decide_scaling_action(20, 100, low_duration_s=600, cool_down_s=1200).reason
    'cool-down period not met'
    """
    if max_qps <= 0:
        raise ParameterError(f"max_qps must be > 0 (got {max_qps})")
    if not 0 < scale_down_threshold < scale_up_threshold:
        raise ParameterError(f"expected 0 < scale-down threshold < scale-up threshold "
                             f"(got {scale_down_threshold}, {scale_up_threshold})")
    if not 0 < target_ratio <= scale_up_threshold:
        raise ParameterError(f"target_ratio must be in (0, scale-up threshold] (got {target_ratio})")
    ratio = qps / max_qps
    if ratio > scale_up_threshold:
        if latency_budget_s is not None and cold_start_s > latency_budget_s:
            return ScalingAction("none", 0, ratio, "cold start time exceeds latency budget",
                                 "increase fixed capacity instead of elastic scaling")
        n = 1
        if current_instances is not None and per_instance_qps:
            n = max(1, math.ceil(qps / (per_instance_qps * target_ratio) - 1e-9) - current_instances)
        return ScalingAction("scale_up", n, ratio, f"load ratio {ratio:.2f} > {scale_up_threshold:g}",
                             f"add {n} instance(s)")
    if ratio < scale_down_threshold:
        if low_duration_s >= cool_down_s:
            return ScalingAction("scale_down", 1, ratio,
                                 f"load ratio < {scale_down_threshold:g} for {low_duration_s / 60:g} min "
                                 f"(cool-down {cool_down_s / 60:g} min)", "remove 1 instance")
        return ScalingAction("none", 0, ratio, "cool-down period not met", "wait for sustained low traffic")
    return ScalingAction("none", 0, ratio, "load within normal range", "maintain current capacity")


@dataclass
class ScalingEvent:
    """One decision of the replay: after which minute, what (``scale_up``, ``scale_down``, ``blocked``), how
    many instances, the fleet after it, from which minute new instances count, and why."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("ready_from_minute",)
    after_minute: int
    action: str
    count: int
    instances_after: int
    ready_from_minute: int | None = None
    reason: str = field(kw_only=True)


@dataclass
class ReplaySettings:
    """The rule's settings the replay used (all optional in a plan JSON written before they were)."""

    __pydantic_config__ = STRICT
    scale_up_threshold: float | None = None
    scale_down_threshold: float | None = None
    target_ratio: float | None = None
    min_instances: int | None = None
    latency_budget_s: float | None = None
    credit: str | None = None


@dataclass
class ReplayResult:
    """Minute-by-minute replay of the elasticity rule (see module docstring): the plan's ``elasticity``.

    The minutes themselves (:attr:`minutes`) exist in process only, on the result of :func:`replay`.
    """

    __pydantic_config__ = STRICT
    per_instance_rps: float
    cold_start_s: float
    cool_down_s: float
    initial_instances: int
    n_minutes: int
    events: list[ScalingEvent]
    n_scale_up: int
    n_scale_down: int
    over_capacity_minutes: list[int]
    n_over_capacity: int
    max_instances: int
    recommendation: Literal["elastic", "fixed+buffer"]
    buffer: int
    reason: str
    settings: ReplaySettings = field(default_factory=ReplaySettings)

    @property
    def minutes(self) -> list[dict[str, Any]]:
        """Each minute of the replay (rate, ready and provisioned instances, capacity, action): in process only."""
        m = self.__dict__.get("_minutes")
        if m is None:
            raise ParameterError("the replay's minutes are not part of a plan JSON; they exist only on the result "
                                 "of replay() in the same process")
        return m

    def to_dict(self) -> dict[str, object]:
        return to_json(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return (f"<p><b>Elasticity replay</b> {self.n_minutes} min · {len(self.events)} scale events · "
                f"{self.n_over_capacity} min over capacity · <b>{self.recommendation}</b>: "
                f"{html.escape(self.reason)}</p>")


def replay(
    counts_per_minute: Sequence[float],
    per_instance_rps: float,
    *,
    initial_instances: int | None = None,
    cold_start_s: float = DEFAULT_COLD_START_S,
    cool_down_s: float = DEFAULT_COOL_DOWN_S,
    latency_budget_s: float | None = None,
    scale_up_threshold: float = SCALE_UP_THRESHOLD,
    scale_down_threshold: float = SCALE_DOWN_THRESHOLD,
    target_ratio: float = TARGET_RATIO,
    min_instances: int = 1,
) -> ReplayResult:
    """Replay :func:`decide_scaling_action` over a per-minute request-count series.

    ``initial_instances`` defaults to ``ceil(first minute's rate / (per_instance_rps ×
    target_ratio))`` (at least ``min_instances``).
    """
    if per_instance_rps <= 0:
        raise ParameterError(f"per_instance_rps must be > 0 (got {per_instance_rps})")
    if not counts_per_minute:
        raise ParameterError("the per-minute series is empty")
    if cold_start_s < 0 or cool_down_s < 0:
        raise ParameterError("cold_start_s and cool_down_s must be >= 0")
    if any((c is None or c < 0 or not math.isfinite(c)) for c in counts_per_minute):
        raise ParameterError("per-minute counts must be finite and >= 0")
    rates = [c / 60.0 for c in counts_per_minute]
    if initial_instances is None:
        initial_instances = max(min_instances, math.ceil(rates[0] / (per_instance_rps * target_ratio) - 1e-9))
    if initial_instances < min_instances:
        raise ParameterError(f"initial_instances {initial_instances} < min_instances {min_instances}")
    ready_at: list[float] = [-math.inf] * initial_instances  # minute from which each instance counts
    low_run = 0
    minutes: list[dict[str, Any]] = []
    events: list[ScalingEvent] = []
    over: list[int] = []
    need_extra = 0
    for t, r in enumerate(rates):
        ready = sum(1 for x in ready_at if x <= t)
        cap = ready * per_instance_rps
        is_over = r > cap + 1e-12
        if is_over:
            over.append(t)
            need_extra = max(need_extra, math.ceil(r / per_instance_rps - 1e-9) - ready)
        provisioned = len(ready_at)
        ratio_for_low = r / (provisioned * per_instance_rps)
        low_run = low_run + 1 if ratio_for_low < scale_down_threshold else 0
        action = decide_scaling_action(
            r, provisioned * per_instance_rps, low_duration_s=low_run * 60.0, cold_start_s=cold_start_s,
            latency_budget_s=latency_budget_s, cool_down_s=cool_down_s, scale_up_threshold=scale_up_threshold,
            scale_down_threshold=scale_down_threshold, current_instances=provisioned,
            per_instance_qps=per_instance_rps, target_ratio=target_ratio,
        )
        minutes.append({"minute": t, "rate_rps": r, "ready": ready, "provisioned": provisioned, "capacity_rps": cap,
                        "over_capacity": is_over, "load_ratio": action.load_ratio, "action": action.kind})
        if action.kind == "scale_up":
            first = math.ceil(t + 1 + cold_start_s / 60.0 - 1e-9)
            ready_at.extend([float(first)] * action.count)
            events.append(ScalingEvent(t, "scale_up", action.count, len(ready_at), first, reason=action.reason))
        elif action.kind == "scale_down" and len(ready_at) > min_instances:
            ready_at.sort()
            ready_at.pop()  # the most recently started instance goes first
            low_run = 0
            events.append(ScalingEvent(t, "scale_down", 1, len(ready_at), reason=action.reason))
        elif action.kind == "none" and action.recommendation.startswith("increase fixed"):
            events.append(ScalingEvent(t, "blocked", 0, len(ready_at), reason=action.reason))
    n_up = sum(1 for e in events if e.action == "scale_up")
    n_down = sum(1 for e in events if e.action == "scale_down")
    if not over:
        rec: Literal["elastic", "fixed+buffer"] = "elastic"
        buffer = 0
        reason = (f"elastic scaling kept up: {n_up} scale-up(s), {n_down} scale-down(s) and no minute above ready "
                  f"capacity with a {cold_start_s:g} s cold start")
    else:
        rec = "fixed+buffer"
        buffer = max(1, need_extra)
        blocked = any(e.action == "blocked" for e in events)
        why = ("the cold start exceeds the latency budget, so the rule did not scale" if blocked else
               f"instances needed {cold_start_s:g} s to start")
        reason = (f"{len(over)} minute(s) above ready capacity ({_ranges(over)}) because {why}; fixed capacity plus "
                  f"a buffer of {buffer} instance(s) would have covered them")
    settings = ReplaySettings(scale_up_threshold, scale_down_threshold, target_ratio, min_instances, latency_budget_s,
                              "an instance counts from the first whole minute after it is ready")
    result = ReplayResult(
        per_instance_rps=per_instance_rps, cold_start_s=cold_start_s, cool_down_s=cool_down_s,
        initial_instances=initial_instances, n_minutes=len(minutes), events=events, n_scale_up=n_up,
        n_scale_down=n_down, over_capacity_minutes=over, n_over_capacity=len(over),
        max_instances=max((int(m["provisioned"]) for m in minutes), default=initial_instances),
        recommendation=rec, buffer=buffer, reason=reason, settings=settings,
    )
    result.__dict__["_minutes"] = minutes
    return result


def _ranges(idx: Sequence[int]) -> str:
    """``[5, 6, 7, 12]`` -> ``"minutes 5–7, 12"``."""
    out, start, prev = [], None, None
    for i in idx:
        if start is None:
            start = prev = i
        elif i == prev + 1:  # type: ignore[operator]
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}–{prev}")
    return "minutes " + ", ".join(out)


__all__ = ["ReplayResult", "ReplaySettings", "ScalingAction", "ScalingEvent", "decide_scaling_action", "replay"]
