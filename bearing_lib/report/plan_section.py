"""The report's plan section beyond instances, elasticity and memory: what an operator acts on.

Typed parts, each said when the inputs cannot give it (never a made-up number):

* **peaks per mix** (the plan's :class:`~bearing_lib.plan.fos.MixPeakFos`): each mix's own peak at the target
  quantile and the FOS against it, beside the share-of-overall figure, flagged where that understates the peak;
* **failure domains** (:class:`~bearing_lib.plan.domains.FailureDomains`) and **top tenants**
  (:class:`~bearing_lib.plan.tenants.Tenants`, when the plan was given the trace's tenant column);
* **scaling triggers** (:class:`~bearing_lib.ops.triggers.ScalingTriggers`, built with the exports);
* **where production came from** (:class:`ProductionSource`): Prometheus counters (time resolution = the query
  step, per-request facts unknowable) or request logs (per-request times, binned per minute);
* **the passive limit** (:class:`~bearing_lib.traffic.document.PassiveLimit`) when the production trace carries the
  SLA's latency metric (:func:`passive_part`).

:func:`plan_groups` turns them into the curated :class:`~bearing_lib.report.views.Group` tables the template shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bearing_lib.common.errors import BearingError
from bearing_lib.common.schema import NotAvailable
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.source import ProfileSource

TOP_TENANTS = 10
"""Tenants listed in the report (the busiest first); the plan JSON holds them all."""


@dataclass
class ProductionSource:
    """Where the production numbers come from: ``kind`` ``metrics`` (Prometheus counters), ``request log`` or
    ``rate windows``; ``resolution_s`` the finest time the rates resolve (the query step for metrics)."""

    kind: str
    resolution_s: float | None
    statement: str
    request_metric: str | None = None
    unknowable: list[str] = field(default_factory=list)


def production_source(doc: TrafficProfile | None) -> ProductionSource | None:
    """The profile's source in words (None without a profile)."""
    if doc is None:
        return None
    resolution_s = doc.source.time_resolution_s if isinstance(doc.source, ProfileSource) else None
    fmt = doc.source_format or "unknown format"
    m = doc.metrics
    if m is not None and m.available:
        step = m.step_s if m.step_s is not None else resolution_s
        return ProductionSource(
            "metrics", step, f"Prometheus counters ({m.request_metric or 'request counter'}, {fmt}): rates per query "
            f"step of {step:g} s, no per-request records" if step is not None else
            f"Prometheus counters ({m.request_metric or 'request counter'}, {fmt}), no per-request records",
            m.request_metric, list(m.unknowable))
    # a rate-window profile writes per_minute as {"available": false} (no per-request arrivals to bin by minute)
    if doc.per_window is not None and doc.per_window.available and (doc.per_minute is None
                                                                    or not doc.per_minute.available):
        b = doc.per_window.bin_s
        return ProductionSource("rate windows", b, f"aggregated rate windows ({fmt}) of {b:g} s: no per-request "
                                "arrival times" if b else f"aggregated rate windows ({fmt})")
    minute = ("minute of the trace's relative clock (no calendar dates)" if doc.relative
              else "UTC minute")
    return ProductionSource("request log", 60.0, f"per-request log ({fmt}): each request's arrival time, "
                            f"binned per {minute}")


def passive_part(production: Any, limits: Any) -> Any:
    """The passive limit of the production trace under the limits' SLA (:func:`bearing_lib.twin.passive.
    passive_limit`), or :class:`NotAvailable` saying why (no trace, no SLA, no latency in the trace)."""
    from bearing_lib.data.trace import RequestTrace

    if not isinstance(production, RequestTrace):
        return NotAvailable("the production input holds no per-request records")
    sla = _sla_text(limits)
    if not sla:
        return NotAvailable("no SLA to judge production's latency against (the limits state none)")
    from bearing_lib.twin.passive import passive_limit

    try:
        return passive_limit(production, sla)
    except BearingError as exc:  # said without the trace's path (the report names its inputs once, portably)
        src = str(getattr(production.provenance, "source", ""))
        return NotAvailable(str(exc).replace(f"{src}: ", "the production trace: ") if src else str(exc))


def _sla_text(limits: Any) -> str:
    """The limits' percentile clauses in the SLA grammar (``p99(latency) <= 2000ms``), from their typed parts
    (metric, statistic, threshold, unit), whatever words the clause's text used."""
    from bearing_lib.limits.result import LimitsResult

    if isinstance(limits, dict):
        limits = LimitsResult.from_dict(limits, source="limits JSON")
    if not isinstance(limits, LimitsResult):
        return ""
    out = []
    for c in limits.sla:
        stat, metric = str(c.stat or "").lower(), str(c.metric or "")
        if stat.startswith("p") and stat[1:].replace(".", "").isdigit() and metric and c.threshold is not None:
            out.append(f"{stat}({metric.removesuffix('_ms')}) <= {float(c.threshold):g}{c.unit or 'ms'}")
    return " and ".join(out)


__all__ = ["TOP_TENANTS", "ProductionSource", "passive_part", "production_source"]
