"""Failure domains: how many instances still carry the target with the largest domain(s) lost (N+1, N+2).

``instances.base = ceil(target / per-instance allowable)`` carries the target at the tier's design
FOS with every instance up. SREs size so that it still does with a zone (or a node) down. The rule,
with instances spread evenly:

* **zones** (``zones`` Z ≥ 2, ``domains_lost`` L < Z): the lost domain is a zone. Each zone holds
  ``per_zone = ceil(n / (Z − L))`` instances, the fleet is ``Z × per_zone`` (that is
  ``ceil(n × Z / (Z − L))`` rounded up to a multiple of Z) and ``(Z − L) × per_zone ≥ n`` remain.
  With ``replicas_per_node`` K the zone's instances sit on ``ceil(per_zone / K)`` nodes; losing L
  nodes loses at most L × min(K, per_zone) ≤ L × per_zone instances, so the zone rule covers it.
* **nodes** (one zone, ``replicas_per_node`` K): the lost domain is a node of K replicas. The fleet
  is ``M = ceil(n / K) + L`` nodes, ``M × K`` instances, and ``(M − L) × K ≥ n`` remain.

One zone without a node size cannot lose a domain and keep serving: that is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from bearing_lib.common.errors import ParameterError
from bearing_lib.plan.jsonform import STRICT

WORDS = {1: "one", 2: "two"}


def check_domains(zones: int | None, domains_lost: int, replicas_per_node: int | None) -> None:
    """Refuse settings with no failure-domain meaning (raises :class:`ParameterError`)."""
    if replicas_per_node is not None and replicas_per_node < 1:
        raise ParameterError(f"replicas per node must be >= 1 (got {replicas_per_node})")
    if domains_lost not in (1, 2):
        raise ParameterError(f"domains lost must be 1 or 2 (got {domains_lost})")
    if zones is None:
        if replicas_per_node is not None:
            raise ParameterError("--replicas-per-node needs --zones (1 for a single zone whose nodes are the domains)")
        return
    if zones < 1:
        raise ParameterError(f"zones must be >= 1 (got {zones})")
    if zones == 1 and replicas_per_node is None:
        raise ParameterError("with one zone, losing the zone loses every instance: give --zones >= 2, or "
                             "--replicas-per-node K to size for lost nodes")
    if zones > 1 and domains_lost >= zones:
        raise ParameterError(f"losing {domains_lost} of {zones} zones leaves no zone: give more zones or fewer "
                             "domains lost")


def domain_layout(needed: int, zones: int, domains_lost: int = 1,
                  replicas_per_node: int | None = None) -> tuple[int, int, int, int | None]:
    """``(instances, per_zone, surviving, nodes)`` carrying ``needed`` instances' load with the loss
    (module docstring). ``nodes`` is None without ``replicas_per_node``.

    Examples
    --------
    >>> domain_layout(8, 3)            # 4 per zone; one zone down leaves 8
    (12, 4, 8, None)
    >>> domain_layout(5, 1, 1, 2)      # nodes of 2: ceil(5 / 2) + 1 = 4 nodes, 6 remain
    (8, 8, 6, 4)
    """
    check_domains(zones, domains_lost, replicas_per_node)
    if needed < 0:
        raise ParameterError(f"needed instances must be >= 0 (got {needed})")
    if zones == 1:
        k = int(replicas_per_node)  # type: ignore[arg-type]
        nodes = math.ceil(needed / k) + domains_lost
        return nodes * k, nodes * k, (nodes - domains_lost) * k, nodes
    per_zone = math.ceil(needed / (zones - domains_lost))
    nodes = zones * math.ceil(per_zone / replicas_per_node) if replicas_per_node else None
    return zones * per_zone, per_zone, (zones - domains_lost) * per_zone, nodes


def round_up_to_domains(n: int, zones: int, replicas_per_node: int | None = None) -> int:
    """``n`` rounded up to an even spread: a multiple of ``zones`` (of ``replicas_per_node`` in one zone)."""
    step = zones if zones > 1 else (replicas_per_node or 1)
    return step * math.ceil(n / step)


@dataclass
class FailureDomains:
    """The plan's ``failure_domains``: the fleet that carries the target at the design FOS with the
    largest ``domains_lost`` domain(s) (``lost_domain``) down, and the burst buffer on top of it."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("replicas_per_node", "nodes")
    zones: int
    domains_lost: int
    lost_domain: Literal["zone", "node"]
    needed: int
    instances: int
    per_zone: int
    surviving: int
    per_instance_allowable_rps: float
    surviving_capacity_rps: float
    target_rps: float
    target_fos: float
    buffer: int
    total: int
    rule: str
    statement: str
    replicas_per_node: int | None = None
    nodes: int | None = None

    def instances_for(self, needed: int) -> int:
        """Instances that still carry ``needed`` instances' load with this loss (the staged plan's unit)."""
        return domain_layout(needed, self.zones, self.domains_lost, self.replicas_per_node)[0]


def failure_domains(needed: int, per_instance_allowable_rps: float, target_rps: float, target_fos: float, *,
                    zones: int, domains_lost: int = 1, replicas_per_node: int | None = None,
                    buffer: int = 0) -> FailureDomains:
    """:class:`FailureDomains` for ``needed`` instances (``instances.base``) of ``per_instance_allowable_rps``
    each; ``buffer`` (the burst buffer) is added on top and the sum rounded up to an even spread."""
    n, per_zone, left, nodes = domain_layout(needed, zones, domains_lost, replicas_per_node)
    a = per_instance_allowable_rps
    lost = WORDS.get(domains_lost, str(domains_lost))
    if zones == 1:
        k = int(replicas_per_node)  # type: ignore[arg-type]
        kind: Literal["zone", "node"] = "node"
        layout = f"{n} instances = {nodes} nodes of {k} replicas in one zone"
        rule = (f"nodes = ceil({needed} / {k}) + {domains_lost} = {nodes}; instances = nodes × {k}; "
                f"the fleet loses at most {domains_lost} node(s) of {k}")
        loss = f"with {lost} node{'s' if domains_lost > 1 else ''} lost"
    else:
        kind = "zone"
        layout = f"{n} instances = {per_zone} per zone over {zones} zones"
        if nodes is not None:
            layout += f" ({nodes // zones} node(s) of up to {replicas_per_node} replicas per zone)"
        rule = (f"per zone = ceil({needed} / ({zones} − {domains_lost})) = {per_zone}; instances = {zones} × "
                f"{per_zone}, i.e. ceil(n × Z / (Z − L)) rounded up to a multiple of Z")
        loss = f"with {lost} zone{'s' if domains_lost > 1 else ''} lost"
    cap = left * a
    statement = (f"{layout}; {loss} {left} remain and carry {cap:,.4g} req/s at FOS {target_fos:g} "
                 f"(target {target_rps:,.4g} req/s, which needs {needed})")
    total = round_up_to_domains(n + buffer, zones, replicas_per_node)
    if buffer:
        statement += f"; with the burst buffer of {buffer} on top: {total} instances"
    return FailureDomains(zones=zones, domains_lost=domains_lost, lost_domain=kind, needed=needed, instances=n,
                          per_zone=per_zone, surviving=left, per_instance_allowable_rps=a,
                          surviving_capacity_rps=cap, target_rps=target_rps, target_fos=target_fos, buffer=buffer,
                          total=total, rule=rule, statement=statement, replicas_per_node=replicas_per_node,
                          nodes=nodes)


__all__ = ["FailureDomains", "check_domains", "domain_layout", "failure_domains", "round_up_to_domains"]
