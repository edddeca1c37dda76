"""``bearing report`` and ``bearing weekly`` take one shared option declaration (``cli/report.py``
``RUN_OPTIONS`` through the ``run_options`` decorator): read back through click's introspection of the
two built commands, and through what one command line hands each command."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.app import runner
from bearing_lib.cli import report as report_cli
from bearing_lib.cli.main import app, load_module_commands

# the options each command has of its own; everything else is the shared declaration
OWN = {"report": {"name", "demo", "force", "compare"}, "weekly": {"week", "force", "demo", "window"}}
SHARED = {"params_file", "reports_dir", "notebooks", "timeout", "kernel", "format", "mapping", "option",
          "production_format", "production_mapping", "production_option", "run", "model", "hardware",
          "tested_instances", "estimator", "shape_from"}


def _options(command) -> dict[str, object]:
    return {p.name: p for p in command.params if p.param_type_name == "option"}


def test_both_commands_accept_the_same_shared_options_with_the_same_flags_help_and_defaults():
    cmds = load_module_commands("bearing_lib.cli.report")
    report, weekly = _options(cmds["report"]), _options(cmds["weekly"])
    assert set(report) - OWN["report"] == SHARED == set(weekly) - OWN["weekly"]
    assert set(report_cli.RUN_OPTIONS) == SHARED
    for name in SHARED:
        a, b = report[name], weekly[name]
        assert (a.opts, a.help, a.default, a.multiple, a.nargs, a.bare_type()) == \
               (b.opts, b.help, b.default, b.multiple, b.nargs, b.bare_type()), name
        assert a.help, name  # every shared option is documented
    # the flag spelling follows the name (the notebook parameter the flag sets is named alike)
    assert {n: report[n].opts for n in SHARED} == {n: [f"--{n.replace('_', '-')}"] for n in SHARED}
    assert report["timeout"].min == weekly["timeout"].min == 0
    assert report["timeout"].default == runner.DEFAULT_CELL_TIMEOUT_S == 3600.0


ARGS = ["--params-file", "P.yaml", "--reports-dir", "out", "--notebooks", "nb", "--timeout", "5", "--kernel", "k2",
        "--format", "vllm", "--mapping", "m.yaml", "--option", "ttfb_as_ttft=true", "--option", "n=[1, 2]",
        "--production-format", "generic", "--production-mapping", "pm.yaml", "--production-option",
        "time_unit=ms", "--run", "a/b", "--model", "Llama-3-70B", "--hardware", "2 x H100",
        "--tested-instances", "3", "--estimator", "model", "--shape-from", "w47/limits.json", "-p", "sla",
        "p99(ttft) <= 1s"]


@pytest.mark.parametrize("command", ["report", "weekly"])
def test_one_command_line_gives_both_commands_the_same_options_and_parameters(command, tmp_path, monkeypatch):
    (tmp_path / "P.yaml").write_text("tier: critical\n")
    monkeypatch.chdir(tmp_path)
    seen = {}

    def fake_run(*, name, given, options, force, weekly):
        seen.update(name=name, given=given, options=options, weekly=weekly)
        return 0

    monkeypatch.setattr(report_cli, "_run", fake_run)
    r = CliRunner().invoke(app, [command, *ARGS])
    assert r.exit_code == 0, r.output
    assert seen["options"] == report_cli.RunOptions(
        params_file=Path("P.yaml"), reports_dir=Path("out"), notebooks=Path("nb"), timeout=5.0, kernel="k2",
        format="vllm", mapping=Path("m.yaml"), option=("ttfb_as_ttft=true", "n=[1, 2]"),
        production_format="generic", production_mapping=Path("pm.yaml"), production_option=("time_unit=ms",),
        run="a/b", model="Llama-3-70B", hardware="2 x H100", tested_instances=3, estimator="model",
        shape_from="w47/limits.json")
    given = dict(seen["given"])
    assert given.pop("week", None) == (runner.iso_week(None) if command == "weekly" else None)
    assert given == {"tier": "critical", "sla": "p99(ttft) <= 1s", "format": "vllm", "mapping": "m.yaml",
                     "options": {"ttfb_as_ttft": True, "n": [1, 2]}, "production_format": "generic",
                     "production_mapping": "pm.yaml", "production_options": {"time_unit": "ms"}, "run": "a/b",
                     "model": "Llama-3-70B", "hardware": "2 x H100", "tested_instances": 3, "estimator": "model",
                     "shape_from": "w47/limits.json"}
    assert seen["weekly"] is (command == "weekly")


@pytest.mark.parametrize("command", ["report", "weekly"])
def test_a_bad_shared_option_is_refused_alike_by_both(command):
    r = CliRunner().invoke(app, [command, "--tested-instances", "0"])
    assert r.exit_code == 1
    assert "--tested-instances: expected an integer >= 1, got 0" in r.output
    r = CliRunner().invoke(app, [command, "--timeout", "-1"])
    assert r.exit_code == 2  # click's range check: a usage error


def test_loader_options_of_the_wrong_shape_in_a_params_file_are_named_before_any_notebook(tmp_path, monkeypatch):
    import papermill

    from tests.conftest import ROOT

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("executed"))
    params = tmp_path / "p.yaml"
    azure = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
    limits = ROOT / "tests/fixtures/report/limits.json"
    params.write_text(f"production_trace: {azure}\nproduction_options: [time_unit=ms]\nlimits_json: {limits}\n")
    r = CliRunner().invoke(app, ["weekly", "--week", "2026-W48", "--params-file", str(params), "--reports-dir",
                                 str(tmp_path / "reports")])
    assert r.exit_code == 1
    assert "error: parameter 'production_options': expected a mapping of option: value" in r.output
    assert "got a list: ['time_unit=ms']" in r.output
    assert not (tmp_path / "reports" / "2026-W48").exists()
