"""The follow-up test design (bearing_lib.limits.followup) and ``bearing next``.

The tool files themselves (workload, writers, the tools' own parsers) are tested in
tests/limits/test_nexttools.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.limits import followup as fu


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


def test_expected_requests_on_a_concurrency_axis_are_the_completed_rate_times_the_duration():
    """AIPerf's sweep (a new user's case, round 22): a follow-up step at 213 concurrency was said to send 213 × 2,240
    = 477,680 requests; a closed loop sends what the server completes. Here the first test's steps complete
    2, 4, 6, 7, 7.5, 7.5 req/s at 2 … 12 users: at 8 + 4/3 users, 7 + (4/3)/2 × 0.5 = 7.333 req/s (by hand)."""
    doc = _doc()["mixes"][0]
    doc["q_ult"]["unit"] = "concurrency"
    for st, thr in zip(doc["steps"], [2.0, 4.0, 6.0, 7.0, 7.5, 7.5], strict=True):
        st["throughput_rps"] = thr
    plan = fu.design_followup(doc)
    st = plan.steps[1]
    assert st.load == pytest.approx(8 + 4 / 3)
    assert st.expected_requests == round((7.0 + (4 / 3) / 2 * 0.5) * st.duration_s)
    assert plan.steps[-1].expected_requests == round(7.5 * plan.steps[-1].duration_s)
    # an rps axis keeps load × duration
    rps = fu.design_followup(_doc()["mixes"][0])
    assert rps.steps[0].expected_requests == round(8.0 * rps.steps[0].duration_s)
    # repeats at one load: their mean; fewer users than tested: scaled down with them (review findings)
    steps = [{"load_axis": 100.0, "throughput_rps": 16.0}, {"load_axis": 100.0, "throughput_rps": 19.0},
             {"load_axis": 200.0, "throughput_rps": 20.0}]
    assert fu._rate_at(100.0, "concurrency", steps) == pytest.approx(17.5)
    assert fu._rate_at(50.0, "concurrency", steps) == pytest.approx(8.75)
    assert fu._rate_at(150.0, "concurrency", steps) == pytest.approx(18.75)


def test_a_budget_too_small_for_the_minimum_step_is_said_to_be_exceeded():
    # the default budget names its rule; a given one does not; 4 steps of at least 60 s exceed 150 s
    default = fu.design_followup(_doc()["mixes"][0])
    assert any("budget of 1440 s (2 × the first test)" in n for n in default.notes)
    assert not any("over the budget" in n for n in default.notes)
    small = fu.design_followup(_doc()["mixes"][0], budget_s=150.0)
    assert [s.duration_s for s in small.steps] == [60.0] * 4  # 150 / 4 = 37.5 s each, floored at 60 s
    assert any("budget of 150 s (given)" in n for n in small.notes)
    assert "the plan takes 240 s, over the budget of 150 s: no step is shorter than 60 s" in small.notes


def test_water_fill_keeps_short_needs():
    assert fu._water_fill([100.0, 500.0, 900.0], 900.0) == pytest.approx([100.0, 400.0, 400.0])
    assert fu._water_fill([100.0, 200.0], 900.0) == [100.0, 200.0]


def test_design_refuses_a_document_without_a_range():
    doc = _doc()["mixes"][0]
    doc["q_ult"] = {"value": None, "ci95": [None, None], "bracket": [None, None], "censored": "no_data"}
    with pytest.raises(ParameterError, match="no range"):
        fu.design_followup(doc)


def test_cli_next_writes_the_tool_file_and_the_plan(tmp_path):
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(_doc()))
    out = tmp_path / "next.sh"
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out)])
    assert r.exit_code == 0, r.output
    path = tmp_path / "next.r.all.sh"  # one file per run x mix
    assert f"wrote {path}" in r.output
    assert path.read_text().count("vllm bench serve") == 4  # the tool of the first test (vllm)
    # the first test's file (sweep.json) is not there: every unknown is a named placeholder, said on the terminal
    assert "FILL_IN_MODEL" in path.read_text() and "FILL_IN_MODEL" in r.output and "PLACEHOLDERS" in r.output
    assert "--model MODEL" not in path.read_text() and "512" not in path.read_text()
    plan = json.loads((tmp_path / "next.sh.plan.json").read_text())
    assert plan["plans"][0]["tool"] == "vllm" and len(plan["plans"][0]["steps"]) == 4
    assert any("FILL_IN_INPUT_TOKENS" in p for p in plan["plans"][0]["placeholders"])
    assert plan["plans"][0]["order"] == "ascending, one invocation of the tool per load, back to back"  # vLLM
    # never overwritten silently
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out)])
    assert r.exit_code == 1 and "refusing to overwrite" in r.output and "--force" in r.output
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(out), "--force", "--model", "m1"])
    assert r.exit_code == 0 and "--model m1" in path.read_text()
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "x"), "--tool", "jmeterx"])
    assert r.exit_code == 1 and "--tool" in r.output
    lim.write_text(json.dumps(_doc(coarse=False)))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n2")])
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


def test_cli_two_runs_with_the_same_mix_get_two_files(tmp_path):
    doc = _doc()
    second = json.loads(json.dumps(doc["mixes"][0]))
    second["run_id"] = "s"
    doc["mixes"].append(second)
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n.sh")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "n.r.all.sh").exists() and (tmp_path / "n.s.all.sh").exists()


def _loadpoint_mix(value, ci, resolution=None, censored="none"):
    return {"run_id": "lp", "mix": {"name": "all"}, "steps": [],
            "q_ult": {"value": value, "unit": "concurrency", "ci95": list(ci), "bracket": [None, None],
                      "censored": censored, "resolution": resolution}}


def test_a_load_point_limit_is_coarse_by_its_interval():
    # no resolution (a load-point table's model interval): coarse when the CI reaches beyond +-10 % of the value
    assert fu.is_coarse(_loadpoint_mix(2.665, (2.0, 3.77)))  # the LLMPerf Yi-34B sweep: -25 % / +41 %
    assert not fu.is_coarse(_loadpoint_mix(10.0, (9.5, 10.8)))  # -5 % / +8 %
    assert fu.is_coarse(_loadpoint_mix(10.0, (9.5, 11.2)))  # +12 %
    assert fu.is_coarse(_loadpoint_mix(10.0, (None, 11.0)))  # open at one end
    assert fu.is_coarse(_loadpoint_mix(4.0, (None, None), censored="below"))
    res = {"coarse": False}
    assert not fu.is_coarse(_loadpoint_mix(10.0, (5.0, 15.0), resolution=res))  # the resolution decides
    assert fu.is_coarse(_loadpoint_mix(10.0, (9.9, 10.1), resolution={"coarse": True}))


def test_cli_designs_a_follow_up_for_a_coarse_load_point_limit(tmp_path):
    doc = {"conditions": {"sources": [{"path": "s.json", "format": "llmperf-summary", "tool": "Anyscale LLMPerf"}]},
           "mixes": [_loadpoint_mix(2.665, (2.0, 3.77))]}
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n")])  # no --all
    assert r.exit_code == 0, r.output
    text = (tmp_path / "n.lp.all.sh").read_text()
    cs = [int(x) for x in __import__("re").findall(r"--num-concurrent-requests (\d+)", text)]
    assert cs == [int(np.ceil(x)) for x in np.linspace(2.0, 3.77, 4)]  # integer concurrencies, rounded up


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
    assert [s.load for s in fup.steps] == pytest.approx(list(np.linspace(lo, hi, 4)))
    assert fup.total_s <= fup.budget_s and fup.order.startswith("ascending")
    assert any(n.startswith("follow-up test: loads") and "bearing next" in n for n in m.notes)


def test_cli_writes_the_first_tests_own_lengths_from_its_file(tmp_path):
    # the bundled LMBenchmark sweep as the limits' source: the follow-up carries its ShareGPT lengths,
    # computed here from the raw CSVs with the csv module
    import csv
    from pathlib import Path

    lmb = Path(__file__).resolve().parents[2] / "data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"
    ins, outs = [], []
    for f in sorted(lmb.glob("LMBench_sharegpt*.csv")):
        with f.open(newline="") as fh:
            for row in csv.DictReader(fh):
                ins.append(float(row["prompt_tokens"]))
                outs.append(float(row["generation_tokens"]))
    doc = _doc()
    doc["conditions"]["sources"] = [{"path": str(lmb), "format": "lmbench-csv", "tool": "LMCache LMBenchmark"}]
    doc["mixes"][0]["run_id"] = "vllm-70b-2replicas/sharegpt"
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n"), "--tool", "aiperf"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "n.vllm-70b-2replicas_sharegpt.all.sh").read_text()
    assert f"--synthetic-input-tokens-mean {round(np.percentile(ins, 50))} " in text
    assert f"--output-tokens-mean {round(np.percentile(outs, 50))} " in text
    assert f"P90 {round(np.percentile(ins, 90))}" in text and "dataset sharegpt" in text
    assert "FILL_IN_MODEL" in text and "FILL_IN_MODEL" in r.output  # LMBenchmark names no model
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n"), "--tool", "lmbenchmark"])
    assert r.exit_code == 1 and "n.plan.json" in r.output  # the plan is there already
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n"), "--tool", "lmbenchmark", "--force"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "n.vllm-70b-2replicas_sharegpt.all.sh").exists()  # another suffix: the aiperf file stays
    rows = [ln for ln in (tmp_path / "n.vllm-70b-2replicas_sharegpt.all.csv").read_text().splitlines()
            if not ln.startswith("#")]
    assert rows[0].split(",")[2] == "qps" and "users" not in "".join(rows)


def test_cli_all_skips_a_mix_with_no_range_and_designs_the_others(tmp_path):
    """--all designs every mix it can: one whose limit gives no range (no value, CI or bracket) is said and
    skipped, not the end of the command; with no mix left, a clear error."""
    doc = _doc()
    empty = json.loads(json.dumps(doc["mixes"][0]))
    empty["run_id"] = "s"
    empty["q_ult"].update(value=None, ci95=[None, None], bracket=[None, None], censored="no_data")
    doc["mixes"].append(empty)
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "n.sh"), "--all"])
    assert r.exit_code == 0, r.output
    assert "skipped: s/all: the limits give no range to design a follow-up in" in r.output
    assert (tmp_path / "n.r.all.sh").exists() and not (tmp_path / "n.s.all.sh").exists()
    plan = json.loads((tmp_path / "n.sh.plan.json").read_text())
    assert [p["run_id"] for p in plan["plans"]] == ["r"]
    doc["mixes"] = [empty]
    lim.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["next", str(lim), "--out", str(tmp_path / "m.sh"), "--all"])
    assert r.exit_code != 0 and "no mix gives a range to design a follow-up in" in r.output


# --------------------------------------------------------------------------- measured saturation caps mu
def _saturated_doc(thr, **q_extra):
    # _doc's 6 steps (mu = 9 from the doubling) plus a step at 14 rps that completed `thr` req/s, flagged saturated
    doc = _doc()
    mix = doc["mixes"][0]
    mix["steps"].append({"step": 6, "load_axis": 14.0, "offered_load": 14.0, "throughput_rps": thr,
                         "concurrency_mean": thr * 6.0, "n_requests": 1000, "duration_s": 96.0,
                         "flags": ["saturated"], "recovery_step": False})
    mix["q_ult"].update(q_extra)
    return mix


def test_a_saturated_step_caps_the_doubling_capacity():
    # 7 steps: W0 = median of the lowest 7 // 3 = 2 (1 s); W = 2 s at 9 rps as before; the flagged step completed 8.4
    mix = _saturated_doc(8.4)
    assert fu.fit_capacity(mix["steps"]) == (1.0, pytest.approx(9.0))
    sat = fu.measured_saturation(mix)
    assert (sat.rps, sat.source, sat.steps) == (8.4, "flag", (6,))
    plan = fu.design_followup(mix)
    assert plan.model.mu == 8.4 and plan.model.mu_basis == "doubling capped by saturation"
    assert "9 rps, capped at the measured saturation: 8.4 rps" in plan.model.source
    # rho = min(8 / 8.4, 0.97) = 0.952..., tau = 1 / (1 - rho)^2 = 441 s
    assert plan.steps[0].rho == pytest.approx(8 / 8.4) and plan.steps[0].relaxation_s == pytest.approx(441.0)
    assert any("loads above 8.4 rps" in n for n in plan.notes)


def test_the_limits_saturated_rps_comes_first_and_a_saturation_above_mu_does_not_bind():
    mix = _saturated_doc(8.4, saturated_rps=8.2)
    sat = fu.measured_saturation(mix)
    assert (sat.rps, sat.source) == (8.2, "limit")
    plan = fu.design_followup(mix)
    assert plan.model.mu == 8.2 and "the limit's saturated_rps" in plan.model.source
    high = fu.design_followup(_saturated_doc(9.5))
    assert high.model.mu == pytest.approx(9.0) and high.model.mu_basis == "doubling"
    assert "9.5 rps" in high.model.source and "lies above it" in high.model.source
    assert high.model.saturated_rps == 9.5


def test_saturation_by_the_rule_is_mu_when_the_time_in_system_is_unknown():
    # untimed steps (no concurrency_mean): no doubling fit. Median latencies 1, 1, 2.5, 4 s; at 8 rps 5.0 req/s
    # completed: 5.0 < 0.7 x 8 = 5.6 and 4 s >= 3 x 1 s -> saturated; at 6 rps 5.9 >= 4.2 -> not
    steps = [{"step": i, "load_axis": x, "throughput_rps": t, "stats": {"latency_ms_p50": lat}, "flags": [],
              "recovery_step": False, "duration_s": 96.0}
             for i, (x, t, lat) in enumerate([(2.0, 2.0, 1000.0), (4.0, 4.0, 1000.0), (6.0, 5.9, 2500.0),
                                              (8.0, 5.0, 4000.0)])]
    mix = {"run_id": "r", "mix": {"name": "all"}, "steps": steps,
           "q_ult": {"value": 5.0, "unit": "rps", "ci95": [4.0, 6.0], "bracket": [4.0, 6.0], "censored": "none"}}
    assert fu.fit_capacity(steps) == (None, None)
    sat = fu.measured_saturation(mix)
    assert (sat.rps, sat.source, sat.steps) == (5.0, "rule", (3,))
    plan = fu.design_followup(mix)
    assert plan.model.mu == 5.0 and plan.model.mu_basis == "saturation" and plan.model.w0_s == 1.0
    assert plan.model.source.startswith("measured saturation: 5 rps")
    assert [s.rho for s in plan.steps] == pytest.approx([0.8, 14 / 15, 0.97, 0.97])
    # in another unit nothing is read as a service rate
    mix["q_ult"]["unit"] = "concurrency"
    assert fu.measured_saturation(mix) is None


def test_real_llama_server_runs_the_first_shows_no_saturation_the_follow_up_does(tmp_path):
    """The GuideLLM round trip against llama-server (tests/data/guidellm-llamacpp-roundtrip/, see
    tests/loaders/test_guidellm_roundtrip_real.py). The first run (0.9-1.7 req/s, 45 s) completed what it sent at
    every step (1.65 req/s at 1.7): no saturation, so its plan keeps the fallback mu = 1.1 x 1.5 x 1.7 = 2.805. The
    follow-up's steps at 2.125 and 2.55 req/s completed 1.305 and 1.700 req/s in their steady windows (below 70 % of
    offered: 1.4875, 1.785) with median latencies 21.4 s and 17.8 s, over 3 x the 1.7 step's 3.14 s: saturated,
    so the run's highest completed rate, the 1.7 step's 1.708, is mu (the doubling alone gave 1.736 on the
    follow-up, 1.7 pooled); checked here on bearing's step table
    (and against GuideLLM's raw per-request timings in
    tests/loaders/test_guidellm_roundtrip_real.py::test_followup_steps_completions_from_raw_timings)."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "data" / "guidellm-llamacpp-roundtrip"
    first, second = here / "first_benchmarks.json", here / "followup_first_benchmarks_all.json"
    mixes = {}
    for name, paths in (("first", [first]), ("second", [second]), ("pooled", [first, second])):
        out = tmp_path / f"{name}.json"
        r = CliRunner().invoke(app, ["limits", *map(str, paths), "--sla", "p90(ttft) <= 500ms", "--n-boot", "50",
                                     "--json", str(out), *(["--pool"] if name == "pooled" else [])])
        assert r.exit_code == 0, r.output
        mixes[name] = json.loads(out.read_text())["mixes"][0]
    assert fu.measured_saturation(mixes["first"]) is None
    plan = fu.design_followup(mixes["first"], n_loads=3, budget_s=150)
    assert plan.model.mu == pytest.approx(2.805) and plan.model.mu_basis == "fallback"
    for name in ("second", "pooled"):
        steps = {s["load_axis"]: s for s in mixes[name]["steps"] if s["load_axis"] > 2}
        thr = {x: s["throughput_rps"] for x, s in steps.items()}
        lat = [s["stats"]["latency_ms_p50"] / 1000 for s in mixes[name]["steps"]]
        for x in (2.125, 2.55):  # the rule by hand on the step table
            assert thr[x] < 0.7 * x and steps[x]["stats"]["latency_ms_p50"] / 1000 >= 3 * min(lat)
        # the load curve flags those timed steps saturated (curves.timed_saturation), so the limit carries the
        # measured rate (q_ult.saturated_rps) and the follow-up reads it there, not by its own step-table rule
        assert all("saturated" in steps[x]["flags"] for x in (2.125, 2.55))
        sat = fu.measured_saturation(mixes[name])
        # the cap is the highest rate any step of the run completed: the 1.7 req/s step's 1.708 (it kept up), just
        # above the saturated 2.55 step's 1.700
        best = max(s["throughput_rps"] for s in mixes[name]["steps"])
        assert sat.source == "limit" and sat.rps == best == pytest.approx(1.70832, abs=1e-4)
        assert mixes[name]["q_ult"]["saturated_rps"] == sat.rps and not mixes[name]["q_ult"]["capped"]
        plan = fu.design_followup(mixes[name], n_loads=3, budget_s=150)
        # mu: the lower of the doubling point and the measured saturation (the follow-up: doubling 1.736, capped
        # at 1.708; pooled: the doubling's 1.7 already lies below it)
        doubling = fu.fit_capacity(mixes[name]["steps"])[1]
        assert doubling == pytest.approx({"second": 1.736, "pooled": 1.7}[name], abs=1e-3)
        assert plan.model.mu == pytest.approx(min(doubling, sat.rps))
        assert plan.model.mu_basis == ("doubling capped by saturation" if sat.rps < doubling else "doubling")
        assert plan.steps[-1].rho == 0.97


def test_a_ci_open_below_is_coarse_and_reruns_down_to_the_value_over_1_2():
    """The model's interval may reach below the loads tested (its lower end None): as coarse as a CI open above,
    with the loads to re-run from value / 1.2 up to the upper end (by hand: 10 / 1.2 = 8.333 ... 10.5, four loads
    evenly spaced); before round 17 such a limit had no resolution and no follow-up."""
    from bearing_lib.limits.followup import resolution_of

    res = resolution_of(10.0, [None, 10.5], "none", [])
    assert res is not None and res.coarse and res.ci_relative[0] is None
    assert res.ci_relative[1] == pytest.approx(0.05)
    assert res.suggested_loads == pytest.approx([10 / 1.2, 10 / 1.2 + (10.5 - 10 / 1.2) / 3,
                                                 10 / 1.2 + 2 * (10.5 - 10 / 1.2) / 3, 10.5])
    assert "open below / +5% (95% CI up to 10.5" in res.statement
    assert resolution_of(10.0, [None, None], "none", []) is None  # open at both ends: nothing to resolve within
    fine = resolution_of(10.0, [9.5, 10.5], "none", [])
    assert fine is not None and not fine.coarse


def test_a_followup_of_a_ci_open_at_one_end_keeps_the_other_end():
    """The follow-up of a limit whose CI is open below (the model's posterior below the loads tested) or above
    runs from value / 1.2 to its upper end, or from its lower end to 1.2 x the value: the loads its resolution note
    suggests (by hand: value 10, CI [None, 10.5] -> 8.333 ... 10.5; CI [9.2, None] -> 9.2 ... 12)."""
    doc = _doc()["mixes"][0]
    for ci, want in (([None, 10.5], [10 / 1.2, 10.5]), ([9.2, None], [9.2, 12.0])):
        mix = {**doc, "q_ult": {**doc["q_ult"], "value": 10.0, "ci95": ci, "censored": "none"}}
        plan = fu.design_followup(mix)
        assert [plan.steps[0].load, plan.steps[-1].load] == pytest.approx(want)
        res = fu.resolution_of(10.0, ci, "none", [])
        assert [s.load for s in plan.steps] == pytest.approx(res.suggested_loads)


def test_a_tools_summary_states_its_time_under_load_not_a_steady_window():
    """A step from a tool's summary (no per-request times) has no steady window: the resolution note names the
    span its rate divides by (vLLM: the duration less the drain), not the tool's duration. By hand: two steps of
    205 s and 221 s whose rates divide by 50 s and 54 s -> median 52 s; timed steps keep their steady window."""
    from types import SimpleNamespace

    from bearing_lib.limits.curve_row import CurveRow
    from bearing_lib.limits.followup import resolution_of

    untimed = [SimpleNamespace(row=CurveRow(step=i, duration_s=d, rate_span_s=r, flags=("no_times",)))
               for i, (d, r) in enumerate(((205.0, 50.0), (221.0, 54.0)))]
    res = resolution_of(10.0, [7.0, 14.0], "none", untimed)
    assert res.steady_window_s == pytest.approx(52.0)
    assert "a step of 52 s under load (drain excluded)" in res.statement
    timed = [SimpleNamespace(row=CurveRow(step=0, duration_s=96.0, rate_span_s=96.0, flags=()))]
    res = resolution_of(10.0, [7.0, 14.0], "none", timed)
    assert res.steady_window_s == pytest.approx(96.0) and "a step of 96 s (steady window)" in res.statement
