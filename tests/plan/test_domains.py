"""Failure domains (plan/domains.py): the fleet that carries the target with the largest domain(s) lost,
worked out by hand; the plan section, the CLI, the staged plan in those units, and the autoscaler
exports that use it (validated by their tools)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.ops import validate
from bearing_lib.ops.exports import ExportTarget, export, read_plan
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.domains import FailureDomains, domain_layout, failure_domains

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "plan"
LIMITS = json.loads((FIX / "limits_handmade.json").read_text())
PROFILE = json.loads((FIX / "profile_handmade.json").read_text())
runner = CliRunner()


@pytest.mark.parametrize(("needed", "zones", "lost", "k", "expected"), [
    # 8 needed over 3 zones, one lost: 4 per zone (8 / 2), 12 in all, 8 survive
    (8, 3, 1, None, (12, 4, 8, None)),
    # 8 over 3 zones, two lost: 8 per zone, 24 in all, 8 survive
    (8, 3, 2, None, (24, 8, 8, None)),
    # 7 over 4 zones, one lost: ceil(7 / 3) = 3 per zone, 12, 9 survive
    (7, 4, 1, None, (12, 3, 9, None)),
    # 10 over 2 zones, one lost: 10 per zone (N+N), 20
    (10, 2, 1, None, (20, 10, 10, None)),
    # with nodes of 3 replicas: 4 per zone sit on 2 nodes per zone, 6 nodes
    (8, 3, 1, 3, (12, 4, 8, 6)),
    # one zone, nodes of 4: ceil(9 / 4) + 1 = 4 nodes, 16 instances, 12 survive one node down
    (9, 1, 1, 4, (16, 16, 12, 4)),
    # one zone, nodes of 4, two nodes lost: 3 + 2 = 5 nodes, 20 instances, 12 survive
    (9, 1, 2, 4, (20, 20, 12, 5)),
])
def test_layout_by_hand(needed, zones, lost, k, expected):
    got = domain_layout(needed, zones, lost, k)
    assert got == expected
    assert got[2] >= needed  # the survivors still carry the load


def test_the_closed_form_is_the_rounding_rule():
    # ceil(n Z / (Z - L)) rounded up to a multiple of Z equals Z ceil(n / (Z - L)) for every small case
    for n in range(0, 40):
        for z in range(2, 7):
            for lost in (1, 2):
                if lost >= z:
                    continue
                first = math.ceil(n * z / (z - lost))
                assert domain_layout(n, z, lost)[0] == z * math.ceil(first / z)


@pytest.mark.parametrize(("zones", "lost", "k"), [(1, 1, None), (2, 2, None), (3, 3, None), (0, 1, None),
                                                    (3, 1, 0), (3, 4, None)])
def test_meaningless_domains_are_refused(zones, lost, k):
    with pytest.raises(ParameterError):
        domain_layout(5, zones, lost, k)


def test_statement_says_the_layout_and_what_survives():
    # 8 needed at 1.025 req/s each (Q_ult 1.5375 / FOS 1.5): 12 = 4 per zone over 3 zones, 8 remain, 8.2 req/s
    fd = failure_domains(8, 1.025, 7.9, 1.5, zones=3, domains_lost=1)
    assert fd.statement.startswith("12 instances = 4 per zone over 3 zones; with one zone lost 8 remain and carry "
                                   "8.2 req/s at FOS 1.5")
    assert fd.surviving_capacity_rps == pytest.approx(8 * 1.025)
    assert fd.total == 12 and fd.lost_domain == "zone"


def _plan(**kw) -> CapacityPlan:
    return CapacityPlan.build(json.loads(json.dumps(LIMITS)), json.loads(json.dumps(PROFILE)), **kw)


def test_plan_section_by_hand_and_round_trip():
    # hand-made plan: per-instance allowable 8 / 1.5 = 5.333 req/s. ExportTarget 40 req/s -> base ceil(7.5) = 8.
    # bursts of 1.5x: 60 req/s at Q_ult 8 -> 8 instances, buffer max(1, 8 - 8) = 1.
    p = _plan(target_rps=40.0, burst_multiplier=1.5, zones=3)
    assert p.instances.base == 8 and p.instances.buffer == 1
    fd = p.failure_domains
    assert isinstance(fd, FailureDomains)
    assert (fd.needed, fd.instances, fd.per_zone, fd.surviving) == (8, 12, 4, 8)
    assert fd.surviving_capacity_rps == pytest.approx(8 * 8 / 1.5)  # 42.67 >= 40
    assert fd.total == 15  # 12 + buffer 1 = 13, rounded up to a multiple of 3
    d = p.to_dict()
    assert d["failure_domains"]["instances"] == 12
    back = CapacityPlan.from_dict(json.loads(json.dumps(d)))
    assert back.failure_domains == fd
    # staged plan in those units: near term 40 x 1.5 / 5.333 = 11.25 -> 12 -> over 2 surviving zones 6 per zone -> 18
    nt = p.economics.staged.near_term
    assert nt.instances == 12 and nt.instances_with_domains == 18
    assert any(line.startswith("domains:     12 instances = 4 per zone over 3 zones") for line in p.summary_lines())


def test_without_zones_the_section_says_why_and_a_bad_setting_is_refused():
    p = _plan()
    assert p.failure_domains.available is False and "--zones" in p.failure_domains.reason
    assert "instances_with_domains" not in p.to_dict()["economics"]["staged"]["near_term"]
    with pytest.raises(ParameterError):
        _plan(zones=1)
    with pytest.raises(ParameterError):
        _plan(replicas_per_node=2)


def test_cli_and_the_autoscalers_use_the_domains(tmp_path):
    plan = tmp_path / "plan.json"
    r = runner.invoke(app, ["plan", "--limits", str(FIX / "limits_handmade.json"), "--profile",
                            str(FIX / "profile_handmade.json"), "--target-rps", "40", "--burst-multiplier", "1.5",
                            "--zones", "3", "--replicas-per-node", "2", "--json", str(plan)])
    assert r.exit_code == 0, r.output
    assert "12 instances = 4 per zone over 3 zones (2 node(s) of up to 2 replicas per zone); with one zone lost " \
           "8 remain and carry 42.67 req/s at FOS 1.5" in r.output
    r2 = runner.invoke(app, ["plan", "--limits", str(FIX / "limits_handmade.json"), "--profile",
                             str(FIX / "profile_handmade.json"), "--zones", "2", "--domains-lost", "2"])
    assert r2.exit_code != 0 and "leaves no zone" in r2.output
    numbers = read_plan(plan, limits_path=FIX / "limits_handmade.json")
    w = export(numbers, ["hpa", "keda"], tmp_path / "out", ExportTarget(), check=True)
    hpa = yaml.safe_load((tmp_path / "out" / "hpa.yaml").read_text())
    keda = yaml.safe_load((tmp_path / "out" / "keda-scaledobject.yaml").read_text())
    mode = json.loads(plan.read_text())["instances"]["buffer_plan"]["mode"]
    lo = 15 if mode == "fixed" else 12  # the domains' total (with the buffer) when fixed, else the N+1 fleet
    assert hpa["spec"]["minReplicas"] == lo and keda["spec"]["minReplicaCount"] == lo
    assert hpa["spec"]["maxReplicas"] % 3 == 0 and hpa["spec"]["maxReplicas"] >= 15
    assert keda["spec"]["maxReplicaCount"] == hpa["spec"]["maxReplicas"]
    assert any("topology.kubernetes.io/zone" in n for n in w.notes["hpa"])
    for c in w.checks:
        if c.ok is None:
            continue  # validator not installed
        assert c.ok, c
    assert validate  # the validators are the ones tests/ops uses


def test_over_provisioned_at_one_instance_says_only_a_smaller_instance_helps():
    """ip-v0 (a new user's case, round 21): "over-provisioned" beside a plan of 1 instance + 1 buffer. The hand-made
    limit is Q_ult 8 req/s; a target of 2 req/s gives FOS 8 / 2 = 4, above the standard band's 3, and one instance
    (ceil(2 / (8 / 1.5)) = 1): the reason says no instance can be taken away. At 7 req/s (FOS 1.14, inside no
    over-provisioning) nothing is added."""
    p = _plan(target_rps=2.0)
    assert p.instances.base == 1 and p.fos.blended.fos.value == pytest.approx(4.0)
    assert "over-provisioned" in p.verdict_reason and "fewer cannot be deployed" in p.verdict_reason
    assert "the plan's base is one instance (its buffer aside)" in p.verdict_reason
    assert "fewer cannot be deployed" not in _plan(target_rps=7.0).verdict_reason
