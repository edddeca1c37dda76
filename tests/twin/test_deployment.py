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
    from bearing_lib.cli.report import DEMO_RUN
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load_trace

    tr = load_trace(LLMD)
    return RequestTrace(frame=tr.frame.filter(tr.frame["run_id"] == DEMO_RUN), provenance=tr.provenance)


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
    unknown) writes the twin the report shows: the report's own calls (``pipeline.read_limits`` then
    ``pipeline.twin``, as notebooks/weekly_report.ipynb makes them on the demo's inputs) give the section whose
    parameter rows and notes the HTML and ``summary.json`` print (``report.model._predicted`` copies them)."""
    from bearing_lib.app import pipeline
    from bearing_lib.cli.main import app
    from bearing_lib.cli.report import DEMO_PRODUCTION, DEMO_RUN, DEMO_SLA, DEMO_TESTED_INSTANCES
    from bearing_lib.loaders import load_trace
    from bearing_lib.twin import calibrate, validate

    tr = _llmd_sharegpt()
    rr = calibrate(tr, n_boot=0, replicas=2)
    rr.validation = validate(rr, tr, SLA)
    assert not rr.trusted and any("throughput" in r for r in rr.validation.reasons)
    # the limits as the demo report states them: the folder's two runs, 2 instances stated by the analyst
    limits = tmp_path / "limits.json"
    res = CliRunner().invoke(app, ["limits", str(LLMD), "--sla", SLA, "--n-boot", "0", "--tested-instances",
                                   str(DEMO_TESTED_INSTANCES),
                                   "--json", str(limits)])
    assert res.exit_code == 0, res.output
    assert json.loads(limits.read_text())["conditions"]["instances"] == 2
    # what the report shows: its twin section, calibrated on the plan's run, for the demo's production trace
    assert SLA == DEMO_SLA
    sec = pipeline.twin(pipeline.read_limits(limits), load_trace(ROOT / DEMO_PRODUCTION), run=DEMO_RUN)
    assert hasattr(sec, "param_rows"), sec  # not Unavailable
    shown = {r["parameter"]: (r["value"], list(r["ci95"])) for r in sec.param_rows}
    shown_note = [n for n in sec.notes if n.startswith("the test ran against")]
    # the CLI on that one run (it takes files, not a run name: the run's own files in a folder of the same
    # name, which loads to the very rows of the run; checked here), with the same limits document
    one = tmp_path / LLMD.name
    one.mkdir()
    for f in LLMD.glob("*sharegpt*.csv"):
        (one / f.name).write_bytes(f.read_bytes())
    cols = [c for c in tr.frame.columns if c != "request_id"]
    assert load_trace(one).frame.select(cols).sort("start_s", "source_row").equals(
        tr.frame.select(cols).sort("start_s", "source_row"))
    out = tmp_path / "twin.json"
    res = CliRunner().invoke(app, ["twin", "fit", str(one), "--sla", SLA, "--limits", str(limits), "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["replicas"] == 1 and doc["validation"]["trusted"]  # the deployment as one server, and it validates
    note = [n for n in doc["notes"] if n.startswith("the test ran against 2 replicas")]
    assert len(note) == 1 and rr.validation.reasons[0] in note[0]
    # the same twin: every parameter with its value and CI (same seed, same 200 resamples), the same note
    assert {p["name"]: (p["value"], list(p["ci95"])) for p in doc["params"]} == shown
    assert note == shown_note


def test_tested_replicas_reads_a_whole_count_and_nothing_else():
    from bearing_lib.twin.replay import tested_replicas

    assert [tested_replicas(v) for v in (2, 2.0, 3, None, 0, 1.5, True, "2", -1)] == [2, 2, 3, 1, 1, 1, 1, 1, 1]
