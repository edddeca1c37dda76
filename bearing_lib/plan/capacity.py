"""The seeds' ``CapacityCalculator`` as tested functions.

* **Max safe concurrency** from a measured latency–concurrency curve: the highest
  measured concurrency whose SLA latency statistic (P99, P95 ... as the SLA names it) ≤ the SLA
  and whose other clauses (the error rate) hold too. "Capacity comes from the latency
  constraint, not from max concurrency." Unlike the seed (``unwrap_or(1)``), when no
  measured concurrency meets the SLA nothing is invented: the result says so.
* **Per-instance safe throughput**: the throughput measured at that concurrency; only
  when the curve has no throughput, Little's law ``concurrency / (P50 latency)`` (the
  seed's ``safe_concurrency × single_concurrency_qps`` assumes linear scaling, which the
  seed itself says LLM serving does not have).
* **Memory requirement**: :func:`bearing_lib.plan.memory.memory_requirement`.
* **Instance count** = ``ceil(target / per-instance allowable)`` + a buffer sized from the
  burst model: during a burst of ``multiplier × target`` the fleet may run up to its
  ultimate (SLA-holding) capacity, so ``buffer = max(min_buffer, ceil(multiplier × target /
  per-instance Q_ult) − base)``. Without a burst model the seed's fixed "+2" is used and
  labelled as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.plan.interval import OPEN_ABOVE, Interval, count_range_text, mapped, open_end, scaled
from bearing_lib.plan.jsonform import STRICT, to_json
from bearing_lib.plan.memory import MemoryRequirement, ModelPreset, memory_requirement

if TYPE_CHECKING:
    from bearing_lib.plan.elasticity import ReplayResult
    from bearing_lib.plan.plan_step import PlanStep

SEED_BUFFER = 2
DEFAULT_MIN_BUFFER = 1


@dataclass(frozen=True)
class LatencyPoint:
    """One measured point of a latency–concurrency curve (latencies in ms, throughput in req/s).

    ``sla_ms`` is the SLA's latency statistic at the point (a P99, a P95 ...: whatever the SLA's
    latency clause names); ``broken`` the SLA's *other* clauses the point breaks (e.g.
    ``error_rate <= 1%`` at 2.5 %), each as ``"clause text (observed value)"``."""

    concurrency: float
    p50_ms: float | None
    sla_ms: float | None
    throughput_rps: float | None = None
    broken: tuple[str, ...] = ()


@dataclass
class SafeConcurrency:
    """Highest measured concurrency meeting **every** SLA clause, with what backs it.

    ``sla_threshold_ms`` is the latency clause's threshold and ``sla_stat`` its statistic (``P95`` for
    ``p95(ttft) <= 1s``): a field holds what its name says. Plan files written before these names
    (``sla_p99_ms``, which held whatever statistic the SLA named) are read into them
    (:meth:`CapacityPlan.from_dict <bearing_lib.plan.capacity_plan.CapacityPlan.from_dict>`)."""

    __pydantic_config__ = STRICT
    value: float | None
    throughput_rps: float | None
    throughput_basis: str
    sla_threshold_ms: float
    contiguous_value: float | None
    statement: str
    sla_stat: str = "P99"
    latency_only_value: float | None = None
    """The highest concurrency meeting the latency clause alone, when another clause fails there (else None)."""

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def _other_clauses(broken: tuple[str, ...]) -> str:
    return "; ".join(broken)


def max_safe_concurrency(points: Sequence[LatencyPoint], sla_threshold_ms: float, *,
                         stat: str = "P99") -> SafeConcurrency:
    """Highest measured concurrency whose ``stat`` ≤ ``sla_threshold_ms`` and that breaks no other clause.

    The seed's rule ("the highest measured concurrency whose P99 ≤ SLA") with the SLA read whole: a point
    whose latency holds while the error clause fails (``LatencyPoint.broken``) is not safe. ``stat``
    names the SLA statistic (``P95``: the points' ``sla_ms`` hold that statistic).

    Points without the statistic are ignored. When a lower concurrency breaks the SLA but a
    higher one meets it (a non-monotone curve), ``contiguous_value`` is the highest
    concurrency below the first breach and the statement says so.

    Examples
    --------
    >>> pts = [LatencyPoint(1, 100, 200, 4.0), LatencyPoint(8, 150, 450, 20.0), LatencyPoint(16, 300, 900, 28.0)]
    >>> max_safe_concurrency(pts, 500).value
    8
    >>> max_safe_concurrency([LatencyPoint(8, 150, 450, 20.0, ("error_rate <= 1% (2.5%)",))], 500).value is None
    True
    """
    if sla_threshold_ms <= 0:
        raise ParameterError(f"SLA {stat} must be > 0 ms (got {sla_threshold_ms})")
    pts = sorted((p for p in points if p.sla_ms is not None), key=lambda p: p.concurrency)
    if not pts:
        raise InsufficientDataError(f"the latency–concurrency curve has no point with a {stat}")

    def latency_ok(p: LatencyPoint) -> bool:
        return p.sla_ms <= sla_threshold_ms  # type: ignore[operator]

    lat_ok = [p for p in pts if latency_ok(p)]
    ok = [p for p in lat_ok if not p.broken]
    if not ok:
        if lat_ok:
            top = max(lat_ok, key=lambda p: p.concurrency)
            text = (f"no measured concurrency meets every SLA clause: {stat} ≤ {sla_threshold_ms:g} ms holds up to "
                    f"concurrency {top.concurrency:.4g} ({stat} {top.sla_ms:,.0f} ms), but "
                    f"{_other_clauses(top.broken)} fails there")
            return SafeConcurrency(None, None, "none", sla_threshold_ms, None, text, stat, top.concurrency)
        return SafeConcurrency(None, None, "none", sla_threshold_ms, None,
                               f"no measured concurrency meets {stat} ≤ {sla_threshold_ms:g} ms (lowest tested: "
                               f"{pts[0].concurrency:.4g} at {stat} {pts[0].sla_ms:,.0f} ms): the safe concurrency "
                               f"is below {pts[0].concurrency:.4g}", stat)
    best = max(ok, key=lambda p: p.concurrency)
    contiguous = None
    for p in pts:
        if not latency_ok(p) or p.broken:
            break
        contiguous = p.concurrency
    if best.throughput_rps is not None:
        thr, basis = best.throughput_rps, "measured throughput at that concurrency"
    elif best.p50_ms:
        thr, basis = best.concurrency / (best.p50_ms / 1000.0), "Little's law: concurrency / P50 latency (estimate)"
    else:
        thr, basis = None, "none"
    every = "; the other clauses hold there" if any(p.broken for p in pts) else ""
    text = (f"max safe concurrency {best.concurrency:.4g} ({stat} {best.sla_ms:,.0f} ms ≤ SLA "
            f"{sla_threshold_ms:,g} ms{every})")
    if contiguous != best.concurrency:
        text += (f"; curve not monotone: the SLA breaks at a lower concurrency, the highest before the first breach "
                 f"is {f'{contiguous:.4g}' if contiguous is not None else 'none'}")
    top = pts[-1]
    if top.concurrency > best.concurrency:
        text += f"; the highest tested concurrency {top.concurrency:.4g} reaches {stat} {top.sla_ms:,.0f} ms"
        if top.broken:
            text += f" and breaks {_other_clauses(top.broken)}"
    latency_only = max(p.concurrency for p in lat_ok)
    return SafeConcurrency(best.concurrency, thr, basis, sla_threshold_ms, contiguous, text, stat,
                           latency_only if latency_only != best.concurrency else None)


_OPS = {"<": lambda v, t: v < t, "<=": lambda v, t: v <= t, ">": lambda v, t: v > t, ">=": lambda v, t: v >= t}


def _broken(step: PlanStep, clauses: Sequence[Any], latency_text: str | None) -> tuple[str, ...]:
    """The clauses other than the latency one that ``step``'s observed values break."""
    observed = step.observed or {}
    out = []
    for c in clauses:
        if c.text == latency_text or c.threshold is None or c.op not in _OPS:
            continue
        v = observed.get(c.text) if isinstance(observed, dict) else None
        if v is None and c.kind == "error_rate":
            v = step.error_rate
        if v is None:
            continue
        if not _OPS[c.op](float(v), float(c.threshold)):  # type: ignore[arg-type]
            shown = f"{float(v):.2%}" if c.unit == "fraction" else f"{float(v):,.4g} {c.unit or ''}".rstrip()  # type: ignore[arg-type]
            out.append(f"{c.text} (observed {shown})")
    return tuple(out)


def curve_from_limits_steps(
    steps: Sequence[PlanStep], *, metric: str = "latency_ms", stat: str = "p99",
    clauses: Sequence[Any] = (), latency_text: str | None = None,
) -> list[LatencyPoint]:
    """Latency–concurrency points from a limits mix's ``steps``.

    Concurrency is the offered load when it is a concurrency, else ``concurrency_mean``
    (Little's law on the step); the SLA statistic ``{metric}_{stat}`` is the point's ``sla_ms``.
    ``clauses`` (the SLA's clauses, :class:`~bearing_lib.limits.sla.Clause`) other than the
    latency one (``latency_text``) are checked against each step's observed values: the ones a step
    breaks are the point's ``broken``.
    """
    out = []
    for s in steps:
        conc = s.offered_load if s.offered_load_unit == "concurrency" else None
        if conc is None:
            conc = s.concurrency_mean
        if conc is None:
            continue
        out.append(LatencyPoint(float(conc), _f(s.stat(f"{metric}_p50")), _f(s.stat(f"{metric}_{stat}")),
                                _f(s.throughput_rps), _broken(s, clauses, latency_text)))
    return out


def _f(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]


@dataclass(frozen=True)
class BurstModel:
    """Bursts as probabilistic events: ``multiplier`` × the target load, ``per_month`` episodes of ``duration_min``."""

    __pydantic_config__ = STRICT
    multiplier: float
    per_month: float | None = None
    duration_min: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if not self.multiplier >= 1.0:
            raise ParameterError(f"burst multiplier must be >= 1 (got {self.multiplier})")


@dataclass
class BufferPlan:
    """How the burst buffer is held: ``elastic`` (started when a burst comes) or ``fixed`` (always on)."""

    __pydantic_config__ = STRICT
    mode: Literal["elastic", "fixed"]
    instances: int
    reason: str


@dataclass
class InstancePlan:
    """``total = base + buffer`` instances at ``per_instance_allowable_rps`` each, with the reasoning (the
    plan's ``instances``); the plan adds how many instances the load test drove, how the buffer is held
    (:func:`buffer_plan`) and the max safe concurrency.

    ``buffer`` and ``total`` are the fleet's final numbers, the one owner every section reads: when the
    buffer is held fixed with more instances than the burst model asks for (:func:`hold_buffer`),
    ``buffer`` is that fixed buffer and ``burst_buffer`` keeps what the burst model alone asked for."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("burst_buffer", "per_instance_q_ult_ci95", "per_instance_allowable_ci95", "base_ci95", "total_ci95",
                  "open_reason")
    target_rps: float
    per_instance_q_ult_rps: float
    target_fos: float
    per_instance_allowable_rps: float
    base: int
    buffer: int
    total: int
    buffer_basis: str
    burst: BurstModel | None
    reason: str
    tested_instances: int = 1
    tested_instances_basis: str = ""
    buffer_plan: BufferPlan | None = None
    safe_concurrency: SafeConcurrency | None = None
    burst_buffer: int | None = None
    per_instance_q_ult_ci95: Interval | None = None
    """The per-instance limit's 95 % CI (the blended limit's over the tested instances; an end open where its is)."""
    per_instance_allowable_ci95: Interval | None = None
    base_ci95: tuple[int | None, int | None] | None = None
    """``base`` over the limit's 95 % CI: ``ceil(target / (q_hi / FOS))`` to ``ceil(target / (q_lo / FOS))``. A
    limit open above leaves the **low** end open (``None``): the data cannot say how few instances would do."""
    total_ci95: tuple[int | None, int | None] | None = None
    """``total`` over the limit's 95 % CI (each end with its own burst buffer, or the held buffer), low end open
    where ``base_ci95``'s is."""
    open_reason: str | None = None
    """Why an end of these intervals is open (the limit's CI is open on the other side)."""

    def to_dict(self) -> dict[str, object]:
        return to_json(self)

    def range_text(self) -> str:
        """The instance count's 95 % range in words (``""`` without one): "95% CI 9–26 instances", or
        "95% CI ≤ 26 instances (low end open: ...)"."""
        return count_range_text(self.total_ci95, self.open_reason)


def hold_buffer(inst: InstancePlan, bp: BufferPlan) -> None:
    """Make ``bp`` (how the buffer is held) the instance plan's buffer: one buffer, one total.

    A fixed buffer larger than the burst model's (the replay saw minutes over capacity) becomes
    ``inst.buffer`` and ``inst.total``; the burst model's own number stays in ``burst_buffer``."""
    inst.buffer_plan = bp
    if bp.instances != inst.buffer:
        inst.burst_buffer = inst.buffer
        inst.buffer = bp.instances
        inst.total = inst.base + inst.buffer
        if inst.base_ci95 is not None:
            inst.total_ci95 = mapped(inst.base_ci95, lambda n: n + bp.instances)  # type: ignore[assignment]
        inst.reason += (f"; the buffer is held {bp.mode} at {bp.instances} instance(s) (the burst model alone "
                        f"asked for {inst.burst_buffer}), so the fleet is {inst.total}")


def buffer_plan(inst: InstancePlan, rep: ReplayResult | None, why_no_replay: str) -> BufferPlan:
    """Hold the burst buffer elastic or fixed: fixed when the replay saw minutes over capacity
    during cold starts (and then at least the replay's buffer), elastic otherwise."""
    freq = ""
    if inst.burst is not None and inst.burst.per_month:
        freq = f"; bursts about {inst.burst.per_month:.2g} a month"
    if rep is None:
        return BufferPlan("fixed", inst.buffer,
                          f"no elasticity replay ({why_no_replay}): hold the buffer as fixed capacity{freq}")
    if rep.recommendation == "elastic":
        return BufferPlan("elastic", inst.buffer,
                          f"the replay of the production series kept up with a {rep.cold_start_s:g} s cold start, "
                          f"so the buffer can be elastic{freq}")
    n = max(inst.buffer, rep.buffer)
    return BufferPlan("fixed", n, f"{rep.reason}; fixed buffer = max(burst buffer {inst.buffer}, replay buffer "
                                  f"{rep.buffer}){freq}")


def _counts(target_rps: float, q: float, target_fos: float, burst: BurstModel | None,
            min_buffer: int) -> tuple[int, int, int, str]:
    """(base, buffer, burst need, basis) at a per-instance limit ``q``."""
    base = math.ceil(target_rps / (q / target_fos) - 1e-9)
    if burst is None:
        return base, SEED_BUFFER, 0, "seed default (+2 elastic instances): no burst model in the profile"
    burst_need = math.ceil(burst.multiplier * target_rps / q - 1e-9)
    return base, max(min_buffer, burst_need - base), burst_need, ""


def instance_count(
    target_rps: float,
    per_instance_q_ult_rps: float,
    target_fos: float,
    *,
    burst: BurstModel | None = None,
    min_buffer: int = DEFAULT_MIN_BUFFER,
    ci95: Interval | None = None,
    open_reason: str | None = None,
) -> InstancePlan:
    """``ceil(target / (Q_ult_instance / FOS))`` + buffer (see module docstring); with ``ci95`` (the per-instance
    limit's 95 % CI) the counts at its ends too (``base_ci95``, ``total_ci95``): a higher limit needs fewer
    instances, so the limit's high end gives the count's low end, and a limit open above leaves the count's low
    end open (``None``, with ``open_reason``).

    Examples
    --------
    >>> p = instance_count(100.0, 20.0, 1.5, burst=BurstModel(3.0))
    >>> (p.base, p.buffer, p.total)   # ceil(100 / 13.33) = 8; burst 300 / 20 = 15 -> buffer 7
    (8, 7, 15)
    >>> p = instance_count(100.0, 20.0, 1.5, burst=BurstModel(3.0), ci95=(10.0, None))
    >>> p.base_ci95, p.total_ci95     # at q 10: ceil(100 / 6.67) = 15, burst 300 / 10 = 30 -> total 30
    ((None, 15), (None, 30))
    """
    if target_rps <= 0 or per_instance_q_ult_rps <= 0 or target_fos <= 0:
        raise ParameterError(f"instance count needs positive target, per-instance limit and FOS "
                             f"(got {target_rps}, {per_instance_q_ult_rps}, {target_fos})")
    if min_buffer < 0:
        raise ParameterError(f"min_buffer must be >= 0 (got {min_buffer})")
    allowable = per_instance_q_ult_rps / target_fos
    base = math.ceil(target_rps / allowable - 1e-9)
    if burst is None:
        buffer = SEED_BUFFER
        basis = "seed default (+2 elastic instances): no burst model in the profile"
    else:
        burst_need = math.ceil(burst.multiplier * target_rps / per_instance_q_ult_rps - 1e-9)
        buffer = max(min_buffer, burst_need - base)
        basis = (f"burst model: {burst.multiplier:g}× the target = {burst.multiplier * target_rps:,.2f} req/s needs "
                 f"{burst_need} instance{'' if burst_need == 1 else 's'} at {'its' if burst_need == 1 else 'their'} "
                 "ultimate capacity; "
                 # the formula's two cases in words ("buffer = max(1, 1 − 2)" read as a sum gone wrong; round 22)
                 + (f"buffer = {burst_need} − {base} base = {buffer}" if burst_need - base >= min_buffer else
                    f"the {base} base instance{'' if base == 1 else 's'} already carr{'ies' if base == 1 else 'y'} "
                    f"it: buffer = the minimum, {min_buffer}" if burst_need <= base else
                    f"{burst_need} − {base} base = {burst_need - base}, below the minimum: buffer = {min_buffer}")
                 + (f"; burst model from {burst.source}" if burst.source else ""))
    carry = "instance carries" if base == 1 else "instances carry"
    reason = (f"{base} {carry} {target_rps:,.2f} req/s at {allowable:,.2f} req/s each "
              f"(Q_ult {per_instance_q_ult_rps:,.2f} / FOS {target_fos:g}), plus {buffer} for bursts")
    plan = InstancePlan(target_rps, per_instance_q_ult_rps, target_fos, allowable, base, buffer, base + buffer,
                        basis, burst, reason)
    if ci95 is not None and ci95 != (None, None):
        ends = [None if q is None else _counts(target_rps, q, target_fos, burst, min_buffer) for q in ci95]
        # the limit's low end gives the count's high end and vice versa
        plan.base_ci95 = (None if ends[1] is None else ends[1][0], None if ends[0] is None else ends[0][0])
        plan.total_ci95 = (None if ends[1] is None else ends[1][0] + ends[1][1],
                           None if ends[0] is None else ends[0][0] + ends[0][1])
        plan.per_instance_q_ult_ci95 = ci95
        plan.per_instance_allowable_ci95 = scaled(ci95, 1 / target_fos)
        if open_end(ci95):
            plan.open_reason = open_reason or OPEN_ABOVE
        text = plan.range_text()
        # "2 instances at both ends of the limit's 95% CI" says the CI already (a new user read "over the limit's
        # 95% CI the fleet is 2 instances at both ends of the limit's 95% CI", round 22)
        plan.reason += (f"; over the limit's 95% CI the fleet is {text.removeprefix('95% CI ')}"
                        if text.startswith("95% CI ") else f"; the fleet is {text}")
    return plan


def memory_for(model: ModelPreset, concurrency: int, seq_len: float, *, margin: float = 0.15) -> MemoryRequirement:
    """The seed's ``compute_memory_requirement``: weights + KV cache + margin (see :mod:`bearing_lib.plan.memory`)."""
    return memory_requirement(model, concurrency, seq_len, margin=margin)


__all__ = [
    "BufferPlan",
    "BurstModel",
    "InstancePlan",
    "LatencyPoint",
    "SafeConcurrency",
    "buffer_plan",
    "curve_from_limits_steps",
    "hold_buffer",
    "instance_count",
    "max_safe_concurrency",
    "memory_for",
]
