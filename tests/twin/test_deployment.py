"""How a test's replicas are modelled when only their count is stated (the limits' conditions.instances):
round-robin servers if that twin replays the test, else the deployment as one server, the same through
``bearing twin fit --limits`` and the report's twin (bearing_lib.twin.deployment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
LLMD = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2" / "llm-d-70b-2replicas"
SLA = "p95(ttft) <= 1s and error_rate <= 1%"  # the demo's SLA


def _llmd_sharegpt():
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load_trace

    tr = load_trace(LLMD)
    return RequestTrace(frame=tr.frame.filter(tr.frame["run_id"].str.ends_with("sharegpt")), provenance=tr.provenance)


@pytest.mark.slow
def test_round_robin_servers_are_kept_where_they_replay_the_test():
    """Known truth: two oracle servers behind a round-robin router. With the count only stated, the
    round-robin twin validates and is kept (the router need not be told)."""
    from bearing_lib.twin.deployment import fit_deployment
    from tests.twin.test_reach import _rr_test

    tr, _ = _rr_test()
    tw = fit_deployment(tr, "p99(ttft) <= 1s", replicas=2, router_known=False, n_boot=0)
    assert tw.replicas == 2 and tw.trusted
    assert tw.param("max_num_seqs").value == 64  # one oracle `small` server's slots, not the pair's
    assert not any(n.startswith("the test ran against") for n in tw.notes)


@pytest.mark.slow
def test_llmd_replicas_behind_an_unknown_router_are_one_deployment_and_cli_and_report_agree(tmp_path):
    """The bundled llm-d sharegpt run (2 replicas behind llm-d's scheduler, which is load- and prefix-aware):
    two round-robin servers fail their own validation (a step's replayed throughput off by more than 10 %),
    the deployment as one server passes; the twin says so. ``bearing twin fit --limits`` (instances 2, router
    unknown) writes that same twin; ``--replicas 2`` (round-robin stated) keeps the round-robin one."""
    from bearing_lib.cli.main import app
    from bearing_lib.twin import calibrate, validate
    from bearing_lib.twin.deployment import fit_deployment

    tr = _llmd_sharegpt()
    rr = calibrate(tr, n_boot=0, replicas=2)
    rr.validation = validate(rr, tr, SLA)
    assert not rr.trusted and any("throughput" in r for r in rr.validation.reasons)
    tw = fit_deployment(tr, SLA, replicas=2, router_known=False, n_boot=0)
    assert tw.replicas == 1 and tw.trusted
    note = next(n for n in tw.notes if n.startswith("the test ran against 2 replicas"))
    assert rr.validation.reasons[0] in note
    # the CLI with a limits document stating 2 instances: the same twin (same seed, same parameters)
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"conditions": {"instances": 2}}))
    out = tmp_path / "twin.json"
    res = CliRunner().invoke(app, ["twin", "fit", str(LLMD), "--sla", SLA, "--n-boot", "0", "--limits", str(limits),
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    # the CLI reads the whole folder (both runs): compare on the one run through the library's own call
    doc = json.loads(out.read_text())
    assert doc["replicas"] in (1, 2)
    from bearing_lib.twin import fit_twin

    lib = fit_twin([LLMD], SLA, n_boot=0, replicas=2, router_known=False)
    assert doc["replicas"] == lib.replicas
    assert {p["name"]: p["value"] for p in doc["params"]} == {p.name: p.value for p in lib.params}


def test_tested_replicas_reads_a_whole_count_and_nothing_else():
    from bearing_lib.twin.replay import tested_replicas

    assert [tested_replicas(v) for v in (2, 2.0, 3, None, 0, 1.5, True, "2", -1)] == [2, 2, 3, 1, 1, 1, 1, 1, 1]
