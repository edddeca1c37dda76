"""``bearing report`` / ``bearing weekly`` through Typer's CliRunner, and the reports index.

Runs use the test stand-in notebook folder tests/fixtures/report/notebooks/ (its
weekly_report.ipynb builds the report from the HAND-MADE contract documents), so the exit
codes follow from known verdicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.app import runner
from bearing_lib.app.index import collect, write_index
from bearing_lib.cli.main import app
from tests.factories import summary_doc
from tests.report.conftest import HAND_MADE, hand_made

NOTEBOOKS = HAND_MADE / "notebooks"
cli = CliRunner()


def _args(tmp_path, plan, *extra):
    return ["--reports-dir", str(tmp_path / "reports"), "--notebooks", str(NOTEBOOKS),
            "-p", "limits_json", str(HAND_MADE / "limits.json"), "-p", "plan_json", str(plan), *extra]


def test_weekly_twice_refuses_then_force_replaces(tmp_path):
    red = hand_made("plan")
    red["verdict"] = "red"
    red_path = tmp_path / "red-plan.json"
    red_path.write_text(json.dumps(red))

    first = cli.invoke(app, ["weekly", "--week", "2026-W48", *_args(tmp_path, red_path)])
    assert first.exit_code == runner.EXIT_RED == 3, first.output
    week = tmp_path / "reports" / "2026-W48"
    assert first.stdout.strip().endswith(str(week / "report.html"))
    s1 = json.loads((week / "summary.json").read_text())
    assert s1["verdict"] == "red" and s1["name"] == "2026-W48"
    inj = (week / "weekly_report.ipynb").read_text()
    assert 'week = \\"2026-W48\\"' in inj  # the week reached the notebook

    again = cli.invoke(app, ["weekly", "--week", "2026-W48", *_args(tmp_path, HAND_MADE / "plan.json")])
    assert again.exit_code == runner.EXIT_EXISTS == 5
    assert "already exists; pass --force" in again.output
    assert json.loads((week / "summary.json").read_text()) == s1  # untouched

    forced = cli.invoke(app, ["weekly", "--week", "2026-W48", "--force", *_args(tmp_path, HAND_MADE / "plan.json")])
    assert forced.exit_code == runner.EXIT_OK, forced.output
    s2 = json.loads((week / "summary.json").read_text())
    assert s2["verdict"] == "yellow"
    assert sorted(p.name for p in (tmp_path / "reports").iterdir() if not p.name.startswith(".")) == \
        ["2026-W48", "index.html", "index.json"]
    assert not [p for p in (tmp_path / "reports").iterdir() if p.name.startswith(".") and p.is_dir()]


def test_bad_parameters_exit_1_before_running(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("executed"))
    r = cli.invoke(app, ["report", "--name", "x", *_args(tmp_path, HAND_MADE / "plan.json"), "-p", "tire", "gold"])
    assert r.exit_code == runner.EXIT_ERROR and "unknown parameter(s) 'tire'" in r.output
    r = cli.invoke(app, ["report", "--name", "x", *_args(tmp_path, HAND_MADE / "plan.json"), "-p", "fail"])
    assert r.exit_code == runner.EXIT_ERROR and "needs a KEY and a VALUE" in r.output
    r = cli.invoke(app, ["weekly", "--week", "2026-W60", *_args(tmp_path, HAND_MADE / "plan.json")])
    assert r.exit_code == runner.EXIT_ERROR and "has no week 60" in r.output
    r = cli.invoke(app, ["report", "--name", "../up", *_args(tmp_path, HAND_MADE / "plan.json")])
    assert r.exit_code == runner.EXIT_ERROR
    assert not (tmp_path / "reports").exists()


def test_failed_run_exits_4_keeps_its_notebook_and_params_file_is_checked(tmp_path):
    r = cli.invoke(app, ["report", "--name", "broken", *_args(tmp_path, HAND_MADE / "plan.json"), "-p", "fail", "yes"])
    assert r.exit_code == runner.EXIT_FAILED == 4
    assert re.search(r"failed in cell 4 of the notebook .*Executed copy kept: .*broken\.failed-\d{8}T\d{6}Z", r.output)
    assert not (tmp_path / "reports" / "broken").exists()
    # a parameters file is read and checked like -p (here: refused before running)
    params = tmp_path / "params.yaml"
    params.write_text(f"limits_json: {HAND_MADE / 'limits.json'}\nplan_json: {HAND_MADE / 'plan.json'}\ncolour: red\n")
    r = cli.invoke(app, ["report", "--name", "ok", "--reports-dir", str(tmp_path / "reports"),
                         "--notebooks", str(NOTEBOOKS), "--params-file", str(params)])
    assert r.exit_code == runner.EXIT_ERROR and "unknown parameter(s) 'colour'" in r.output
    write_index(tmp_path / "reports")
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "broken.failed-" in index and "weekly_report.ipynb" in index  # failed runs listed apart


def test_index_lists_reports_newest_first_and_escapes_names(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    for name, t, verdict in (("2026-W47", "2026-11-23T06:00:00Z", "green"), ("2026-W48", "2026-11-30T06:00:00Z", "red"),
                             ("javascript:alert(1)", "2026-11-01T00:00:00Z", "yellow")):
        d = tmp_path / name
        d.mkdir()
        (d / "report.html").write_text("x")
        (d / "summary.json").write_text(json.dumps(summary_doc(name, verdict=verdict, headline=f"headline {evil}",
                                                               run_time_utc=t)))
    (tmp_path / "nosummary").mkdir()
    entries = collect(tmp_path).reports
    assert [e.name for e in entries] == ["2026-W48", "2026-W47", "javascript:alert(1)", "nosummary"]
    assert entries[-1].verdict == "unknown" and "summary.json unreadable" in entries[-1].problem
    html = write_index(tmp_path).read_text()
    assert evil not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="./javascript%3Aalert%281%29/report.html"' in html
    assert "http://" not in html and "https://" not in html


def test_a_report_run_prints_no_kernel_warning(tmp_path):
    """ipykernel's "running over TCP without encryption" warning, printed by the kernel process itself on
    every run, never reaches the terminal (the kernel's own log is set to errors only)."""
    import subprocess
    import sys

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(hand_made("plan")))
    r = subprocess.run([sys.executable, "-m", "bearing_lib.cli.main", "report", "--name", "quiet",
                        *_args(tmp_path, plan)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr and "without encryption" not in r.stderr, r.stderr


def test_a_renamed_plan_key_fails_before_running_naming_the_file_and_the_field(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("executed"))
    plan = hand_made("plan")
    plan["instances"]["totl"] = plan["instances"].pop("total")  # renamed: once shown as "—", now refused
    bad = tmp_path / "renamed-plan.json"
    bad.write_text(json.dumps(plan))
    r = cli.invoke(app, ["report", "--name", "x", *_args(tmp_path, bad)])
    assert r.exit_code == runner.EXIT_ERROR == 1, r.output
    assert str(bad) in r.output
    assert "instances.total: Field required" in r.output and "instances.totl: unknown key" in r.output
    assert not (tmp_path / "reports" / "x").exists()


# ---------------------------------------------------------------- issue 25, item 6: the report takes what the
# other commands take, and lists what the notebooks take


def test_the_help_lists_every_parameter_the_report_notebooks_take():
    import papermill

    for command in ("report", "weekly"):
        r = cli.invoke(app, [command, "--help"], terminal_width=200)
        assert r.exit_code == 0, r.output
        text = " ".join(r.output.split())
        for nb in runner.REPORT_NOTEBOOKS:
            declared = papermill.inspect_notebook(str(runner.NOTEBOOK_DIR / nb))  # papermill's own reading
            assert declared
            for name in declared:
                assert f"- {name} " in text, (command, nb, name)
        for flag in ("--format", "--mapping", "--option", "--production-format", "--production-mapping",
                     "--production-option", "--run", "--model", "--hardware", "--tested-instances"):
            assert flag in text, (command, flag)


def test_flags_set_the_notebook_parameters_and_a_key_given_twice_is_refused():
    from bearing_lib.cli.report import RunOptions, _merge_flags
    from bearing_lib.common.errors import ParameterError

    got = RunOptions(mapping=Path("m.yaml"), option=("ttfb_as_ttft=true", "n=5"), production_format="generic",
                     production_option=("time_unit=ms",), run="a/b", model="Llama-3-70B", hardware="2 x H100",
                     tested_instances=2).flag_parameters()
    assert got == {"mapping": "m.yaml", "options": {"ttfb_as_ttft": True, "n": 5}, "production_format": "generic",
                   "production_options": {"time_unit": "ms"}, "run": "a/b", "model": "Llama-3-70B",
                   "hardware": "2 x H100", "tested_instances": 2}
    with pytest.raises(ParameterError, match="given both as a flag"):
        _merge_flags({"run": "x"}, {"run": "y"})
    with pytest.raises(ParameterError, match="--tested-instances"):
        RunOptions(tested_instances=0).flag_parameters()


def test_a_two_run_limits_file_is_refused_before_any_notebook_naming_its_runs(tmp_path, monkeypatch):
    import papermill

    from tests.conftest import ROOT

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("executed"))
    doc = hand_made("limits")
    doc["mixes"][0]["run_id"], doc["mixes"][1]["run_id"] = "vllm-70b", "llm-d-70b"
    two = tmp_path / "two-runs.json"
    two.write_text(json.dumps(doc))
    azure = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
    base = ["report", "--name", "two", "--reports-dir", str(tmp_path / "reports"), "-p", "limits_json", str(two),
            "-p", "production_trace", str(azure)]
    r = cli.invoke(app, base)
    assert r.exit_code == runner.EXIT_ERROR
    assert "the limits JSON holds 2 runs (llm-d-70b, vllm-70b)" in r.output and "--run NAME" in r.output
    r = cli.invoke(app, [*base, "--run", "sglang"])
    assert r.exit_code == runner.EXIT_ERROR and "run 'sglang': the limits JSON holds no such run" in r.output
    assert not (tmp_path / "reports").exists()


def _bearing_cli(*args: str, cwd=None):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bearing_lib.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or ROOT, timeout=900)


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_load_test_with_no_judgeable_step_gives_a_grey_report(tmp_path, shared_data):
    """The vLLM bench run of opt-125m: one step of 8 requests at concurrency 2, with no P95 of TTFT in the file."""
    from tests.conftest import ROOT

    test = shared_data("loadtests/vllm-bench-serve/er0080-vllm-benchmarking/bench_serve_v0.25.1.json")
    raw = json.loads(test.read_text())  # the tool's own file, read without bearing
    assert raw["completed"] == 8 and raw["max_concurrency"] == 2 and "p95_ttft_ms" not in raw
    r = _bearing_cli("report", "--name", "nojudge", "--reports-dir", str(tmp_path / "reports"),
                     "-p", "loadtest", str(test), "-p", "sla", "p95(ttft) <= 1s and error_rate <= 1%",
                     "-p", "production_trace", str(ROOT / "data/traces/azure-llm-inference-2023/"
                                                        "AzureLLMInferenceTrace_conv.csv"), "-p", "n_boot", "50",
                     "-p", "twin", "false")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "verdict: unknown" in r.stderr
    summary = json.loads((tmp_path / "reports" / "nojudge" / "summary.json").read_text())
    assert summary["verdict"] == "unknown"
    head = summary["headline"]["text"]
    assert "no limit can be judged: none of the 1 load(s) tested (2 concurrency)" in head
    assert "p95(ttft) <= 1s: the p95 of ttft_ms per step (the load-test file does not report it" in head
    assert "error_rate <= 1%: ≥ 100 requests per step (the test had at most 8)" in head
    # 100 requests at the throughput the tool measured (its request_throughput) take under the 60 s minimum step
    assert f"at the {raw['request_throughput']:.3g} req/s the test completed" in head
    assert "Follow-up test: loads 2, 4, 8 concurrency in ascending order, each step held 60 s" in head
    # the production profile is there: the reviewer still sees production's peak
    html = (tmp_path / "reports" / "nojudge" / "report.html").read_text()
    assert "no limit can be judged" in html and "19,366" in html


@pytest.mark.slow
def test_report_with_a_production_mapping_run_and_model(tmp_path):
    """The bundled LMBenchmark sweep (two runs: --run picks one) against the Azure trace read through a column
    mapping (--production-mapping), with --model naming what was served: the memory plan is that model's."""
    from tests.conftest import ROOT

    mapping = tmp_path / "azure.yaml"
    mapping.write_text("columns: {start_s: TIMESTAMP, input_tokens: ContextTokens, output_tokens: GeneratedTokens}\n"
                       "units: {TIMESTAMP: iso8601}\n")
    azure = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
    lmb = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
    base = ["report", "--reports-dir", str(tmp_path / "reports"), "-p", "loadtest", str(lmb),
            "-p", "sla", "p95(ttft) <= 1s and error_rate <= 1%", "-p", "production_trace", str(azure),
            "--production-mapping", str(mapping), "-p", "n_boot", "50", "-p", "twin", "false", "-p", "exports", "false"]
    no_run = _bearing_cli(*base, "--name", "norun")
    assert no_run.returncode == 1 and "holds 2 runs (llm-d-70b-2replicas/sharegpt, llm-d-70b-2replicas/short_input)" \
        in no_run.stderr and "--run NAME" in no_run.stderr
    r = _bearing_cli(*base, "--name", "mapped", "--run", "llm-d-70b-2replicas/sharegpt", "--model",
                     "meta-llama/Meta-Llama-3-70B-Instruct", "--tested-instances", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    folder = tmp_path / "reports" / "mapped"
    summary = json.loads((folder / "summary.json").read_text())
    params = summary["provenance"]["parameters"]
    assert params["production_mapping"].endswith("azure.yaml") and params["run"] == "llm-d-70b-2replicas/sharegpt"
    limits = json.loads((folder / "limits.json").read_text())
    assert limits["conditions"]["model"].startswith("meta-llama/Meta-Llama-3-70B-Instruct")
    assert limits["conditions"]["instances"] == 2
    src = limits["conditions"]["sources"][0]["path"]  # given absolute: kept so; a relative one is from the folder
    assert (folder / src).resolve() == lmb.resolve()
    weekly = (folder / "weekly_report.ipynb").read_text()
    assert "llama-3.1-70b" in weekly
