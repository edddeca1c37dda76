"""The follow-up test design (bearing_lib.limits.followup) and ``bearing next``.

Each tool file is checked by the tool's own reader where the tool installs here: Locust (a
dependency of the test extra) loads the generated locustfile with its own
``locust.util.load_locustfile`` in a subprocess (Locust monkey-patches the process with
gevent) and its ``LoadTestShape`` is stepped through. vLLM (too heavy: torch/CUDA) and
GuideLLM (pulls torch and CUDA wheels) are not installed: their command lines and scenarios
are checked against the argument and field names PINNED below from their sources. k6 is not
packaged for Debian or PyPI here: its ``options`` block is checked against k6's documented
``constant-arrival-rate`` schema, not by k6 itself.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import shlex
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.limits import followup as fu

# vLLM: `vllm bench serve` arguments, vllm/benchmarks/serve.py (add_cli_args) and
# vllm/benchmarks/datasets.py (add_dataset_parser), vLLM 0.10-0.11 (pinned by hand; vLLM is not installable here)
VLLM_BENCH_SERVE_FLAGS = {
    "--backend": str, "--base-url": str, "--host": str, "--port": int, "--endpoint": str, "--model": str,
    "--dataset-name": str, "--dataset-path": str, "--random-input-len": int, "--random-output-len": int,
    "--request-rate": float, "--burstiness": float, "--num-prompts": int, "--seed": int,
    "--max-concurrency": int, "--result-filename": str, "--result-dir": str, "--percentile-metrics": str,
    "--metric-percentiles": str, "--tokenizer": str,
}
VLLM_STORE_TRUE = {"--save-result", "--ignore-eos", "--disable-tqdm"}
# GuideLLM: GenerativeTextScenario fields, src/guidellm/benchmark/scenario.py (0.3-0.4); rate types from
# guidellm.benchmark.profile ProfileType (pinned by hand: guidellm pulls torch and CUDA wheels)
GUIDELLM_SCENARIO_FIELDS = {"target", "backend_type", "backend_args", "model", "processor", "processor_args",
                            "data", "data_args", "data_sampler", "rate_type", "rate", "max_seconds",
                            "max_requests", "warmup_percent", "cooldown_percent", "output_sampling",
                            "random_seed"}
GUIDELLM_RATE_TYPES = {"synchronous", "concurrent", "throughput", "constant", "poisson", "sweep"}
# k6 constant-arrival-rate executor options (grafana.com/docs/k6/latest/using-k6/scenarios/executors/
# constant-arrival-rate/ and the common scenario options)
K6_REQUIRED = {"executor", "rate", "duration", "preAllocatedVUs"}
K6_OPTIONAL = {"timeUnit", "maxVUs", "startTime", "exec", "gracefulStop", "env", "tags"}


def _doc(ci=(8.0, 12.0), bracket=(9.0, 11.0), coarse=True):
    # a first test: 6 steps of 120 s (steady windows 96 s), mean time in system W = 1 s up to 6 rps, 3 s at 12
    steps = []
    for x, w in [(2.0, 1.0), (4.0, 1.0), (6.0, 1.0), (8.0, 1.5), (10.0, 2.5), (12.0, 3.0)]:
        steps.append({"step": len(steps), "load_axis": x, "offered_load": x, "throughput_rps": x,
                      "concurrency_mean": x * w, "n_requests": int(96 * x), "duration_s": 96.0, "flags": [],
                      "recovery_step": False})
    half = (ci[1] - ci[0]) / 2 / 10.0
    resolution = {"ci_relative": [-half, half], "tolerance": 0.1, "coarse": coarse, "steady_window_s": 96.0,
                  "suggested_loads": [], "statement": "as measured"}
    return {"conditions": {"sources": [{"path": "sweep.json", "format": "vllm", "tool": "vLLM bench serve"}]},
            "mixes": [{"run_id": "r", "mix": {"name": "all"}, "steps": steps,
                       "q_ult": {"value": 10.0, "unit": "rps", "ci95": list(ci), "bracket": list(bracket),
                                 "censored": "none", "resolution": resolution}}]}


def test_capacity_from_the_doubling_of_the_time_in_system():
    # W0 = median of the lowest third (2, 4 rps) = 1 s; W reaches 2 s between 8 (1.5) and 10 (2.5): at 9
    w0, mu = fu.fit_capacity(_doc()["mixes"][0]["steps"])
    assert w0 == 1.0 and mu == pytest.approx(9.0)


def test_design_loads_durations_and_budget():
    plan = fu.design_followup(_doc()["mixes"][0])
    assert [s.load for s in plan.steps] == pytest.approx([8.0, 8 + 4 / 3, 8 + 8 / 3, 12.0])
    assert plan.first_test_s == pytest.approx(6 * 96 / 0.8) and plan.budget_s == pytest.approx(2 * 720)
    # tau = W0 / (1 - rho)^2, rho = min(x / 9, 0.97): 8 rps -> 81 s; want 3 tau + max(10 tau, 1000 / 8)
    assert plan.steps[0].rho == pytest.approx(8 / 9) and plan.steps[0].relaxation_s == pytest.approx(81.0)
    assert plan.steps[1].rho == pytest.approx(0.97)
    # every want exceeds the equal share 1440 / 4 = 360 s: all get 360 s (rounded down to 10 s)
    assert [s.duration_s for s in plan.steps] == [360.0] * 4 and plan.total_s <= plan.budget_s
    assert plan.expected_resolution == pytest.approx((4 / 3) / 10.0)
    assert any("budget" in n for n in plan.notes)


def test_water_fill_keeps_short_needs():
    assert fu._water_fill([100.0, 500.0, 900.0], 900.0) == pytest.approx([100.0, 400.0, 400.0])
    assert fu._water_fill([100.0, 200.0], 900.0) == [100.0, 200.0]


def test_design_refuses_a_document_without_a_range():
    doc = _doc()["mixes"][0]
    doc["q_ult"] = {"value": None, "ci95": [None, None], "bracket": [None, None], "censored": "no_data"}
    with pytest.raises(ParameterError, match="no range"):
        fu.design_followup(doc)


def _plan():
    return fu.design_followup(_doc()["mixes"][0])


def test_vllm_command_lines_use_only_vllm_flags():
    plan = _plan()
    text = fu.write_vllm(plan, fu.Target(model="m"))
    p = argparse.ArgumentParser(prog="vllm bench serve", exit_on_error=False)
    for flag, typ in VLLM_BENCH_SERVE_FLAGS.items():
        p.add_argument(flag, type=typ)
    for flag in VLLM_STORE_TRUE:
        p.add_argument(flag, action="store_true")
    lines = [ln for ln in text.splitlines() if ln.startswith("vllm bench serve")]
    assert len(lines) == len(plan.steps)
    for ln, s in zip(lines, plan.steps, strict=True):
        ns = p.parse_args(shlex.split(ln)[3:])  # unknown flags raise
        assert ns.request_rate == pytest.approx(s.load, abs=1e-4) and ns.burstiness == 1.0
        assert ns.num_prompts == round(s.load * s.duration_s) and ns.model == "m" and ns.save_result


def test_guidellm_scenarios_use_guidellm_fields():
    plan = _plan()
    doc = json.loads(fu.write_guidellm(plan, fu.Target()))
    assert len(doc["scenarios"]) == len(plan.steps) == len(doc["commands"])
    for sc, s in zip(doc["scenarios"], plan.steps, strict=True):
        assert set(sc) <= GUIDELLM_SCENARIO_FIELDS and sc["rate_type"] in GUIDELLM_RATE_TYPES
        assert sc["rate_type"] == "constant" and sc["rate"] == [round(s.load, 4)]
        assert sc["max_seconds"] == s.duration_s
    for cmd in doc["commands"]:
        assert shlex.split(cmd)[:2] == ["guidellm", "benchmark"] and "--rate-type constant" in cmd


def test_k6_options_follow_the_constant_arrival_rate_schema():
    plan = _plan()
    text = fu.write_k6(plan, fu.Target())
    body = text[text.index("export const options = ") + len("export const options = "):text.rindex(";\n\nexport")]
    opts = json.loads(body)
    start = 0.0
    for (_name, sc), s in zip(opts["scenarios"].items(), plan.steps, strict=True):
        assert K6_REQUIRED <= set(sc) <= K6_REQUIRED | K6_OPTIONAL
        assert sc["executor"] == "constant-arrival-rate" and isinstance(sc["rate"], int) and sc["rate"] > 0
        assert sc["rate"] / 100 == pytest.approx(s.load, abs=0.005) and sc["timeUnit"] == "100s"
        assert sc["duration"] == f"{s.duration_s:g}s" and sc["startTime"] == f"{start:g}s"
        assert sc["maxVUs"] >= sc["preAllocatedVUs"] >= 1
        start += s.duration_s


def test_locust_reads_the_locustfile_and_its_shape_steps_the_loads(tmp_path):
    # never import locust here: it monkey-patches this process with gevent (the probe runs in a subprocess)
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust is not installed (it is in the test extra)")
    plan = _plan()
    path = tmp_path / "followup_locust.py"
    path.write_text(fu.write_locust(plan, fu.Target()))
    probe = f"""
import json
from locust.util.load_locustfile import load_locustfile
users, shapes = load_locustfile({str(path)!r})
shape = shapes[0]
times = {json.dumps([float(t) for t in np.cumsum([0.0] + [s.duration_s for s in plan.steps])[:-1] + 1.0] + [1e9])}
out = []
for t in times:
    shape.get_run_time = lambda t=t: t
    out.append(shape.tick())
print(json.dumps({{"users": sorted(users), "ticks": out}}))
"""
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["users"] == ["Completion"]
    # users = rate x pacing (20 s) per step, then the shape ends the test
    assert [t[0] for t in res["ticks"][:-1]] == [max(1, round(s.load * 20)) for s in plan.steps]
    assert res["ticks"][-1] is None


def test_csv_and_aiperf_carry_the_plan():
    plan = _plan()
    rows = list(csv.DictReader(fu.write_csv(plan, fu.Target()).splitlines()))
    assert [float(r["load_rps"]) for r in rows] == pytest.approx([s.load for s in plan.steps], rel=1e-5)
    assert [float(r["duration_s"]) for r in rows] == [s.duration_s for s in plan.steps]
    lines = [ln for ln in fu.write_aiperf(plan, fu.Target()).splitlines() if ln.startswith("aiperf profile")]
    counts = [int(shlex.split(ln)[shlex.split(ln).index("--request-count") + 1]) for ln in lines]
    assert counts == [round(s.load * s.duration_s) for s in plan.steps]


def test_cli_next_writes_the_tool_file_and_the_plan(tmp_path):
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(_doc()))
    out = tmp_path / "next.sh"
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and str(out) in r.output
    assert out.read_text().count("vllm bench serve") == 4  # the tool of the first test (vllm)
    plan = json.loads((tmp_path / "next.sh.plan.json").read_text())
    assert plan["plans"][0]["tool"] == "vllm" and len(plan["plans"][0]["steps"]) == 4
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "x"), "--tool", "jmeterx"])
    assert r.exit_code == 1 and "--tool" in r.output
    lim.write_text(json.dumps(_doc(coarse=False)))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out)])
    assert r.exit_code == 1 and "--all" in r.output
    (tmp_path / "bad.json").write_text("{")
    r = CliRunner().invoke(app, ["next", str(tmp_path / "bad.json"), "--out", str(out)])
    assert r.exit_code == 1 and "not valid JSON" in r.output
    broken = _doc()
    broken["mixes"][0]["q_ult"]["value"] = "ten"  # validated once at the edge: the field's path is named
    del broken["mixes"][0]["q_ult"]["resolution"]["tolerance"]
    lim.write_text(json.dumps(broken))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out)])
    assert r.exit_code == 1 and "2 problem(s)" in r.output and str(lim) in r.output
    assert "mixes.0.q_ult.value" in r.output and "mixes.0.q_ult.resolution.tolerance" in r.output



    assert np.cumsum([1, 2]).tolist() == [1, 3]


def test_a_coarse_limit_carries_its_follow_up_in_the_json_and_the_notes():
    from bearing_lib.limits.fit import fit_limits
    from tests.limits.synth import make_trace, mm1_frame

    rates = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    m = fit_limits(make_trace(mm1_frame(rates, mu_rps=10.0, step_s=120.0, seed=2)), "p99(latency) <= 1s",
                   mixes="none", n_boot=100).limits[0]
    q = m.q_ult
    assert q.resolution.coarse
    fup = q.resolution.followup
    lo, hi = q.ci95
    assert [s["load"] for s in fup["steps"]] == pytest.approx(list(np.linspace(lo, hi, 4)))
    assert fup["total_s"] <= fup["budget_s"] and fup["order"].startswith("ascending")
    assert any(n.startswith("follow-up test: loads") and "bearing next" in n for n in m.notes)
