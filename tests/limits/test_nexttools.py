"""The follow-up test in the first test's own words (bearing_lib.limits.nexttools).

Workloads are checked against lengths computed here from the raw files with the standard
library (csv, gzip, json) and numpy, not through bearing's loaders. Tool files are checked by
the tool's own parser where it installs here (marked ``slow``): Locust (a dependency of the test
extra) loads the generated locustfile with ``locust.util.load_locustfile`` in a subprocess and
its ``LoadTestShape`` is stepped through; GuideLLM 0.5 (``guidellm benchmark``; its install pulls
torch) parses the command line with its own click command when ``BEARING_GUIDELLM`` names a
``guidellm`` executable's Python (else skipped); GuideLLM >= 0.7 reads the scenario with its own
``BenchmarkScenario.create`` when ``BEARING_GUIDELLM_RUN`` names one (else skipped), and the scenario's
fields are checked against GuideLLM's schema PINNED below from its sources. vLLM and SGLang
(torch/CUDA) are checked against argument names PINNED below from their sources; k6 (not on PyPI)
against its documented executor schema; inference-perf's YAML by a YAML parse.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from bearing_lib.limits import followup as fu
from bearing_lib.limits import nexttools as nt

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
# k6 executors (grafana.com/docs/k6/latest/using-k6/scenarios/executors/ramping-arrival-rate/, ramping-vus/)
K6_RAMPING_ARRIVAL = {"executor", "startRate", "timeUnit", "preAllocatedVUs", "maxVUs", "stages", "exec"}
K6_RAMPING_VUS = {"executor", "startVUs", "stages", "exec"}

SHARED = os.environ.get("BEARING_SHARED_DATA")
LMB = Path(__file__).resolve().parents[2] / "data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"


def _mix(unit="rps", ci=(8.0, 12.0), run="r"):
    steps = []
    for x, w in [(2.0, 1.0), (4.0, 1.0), (6.0, 1.0), (8.0, 1.5), (10.0, 2.5), (12.0, 3.0)]:
        steps.append({"step": len(steps), "load_axis": x, "offered_load": x, "throughput_rps": x,
                      "concurrency_mean": x * w, "n_requests": int(96 * x), "duration_s": 96.0, "flags": [],
                      "recovery_step": False})
    return {"run_id": run, "mix": {"name": "all"}, "steps": steps,
            "q_ult": {"value": 10.0, "unit": unit, "ci95": list(ci), "bracket": [9.0, 11.0], "censored": "none"}}


def _plan(unit="rps", ci=(8.0, 12.0)):
    return fu.design_followup(_mix(unit, ci))


W = nt.Workload(model="smollm2", base_url="http://h:8000", input_tokens=64, output_tokens=24, input_p90=70,
                output_p90=24, streaming=True, basis="test")


# ------------------------------------------------------------------ the workload, from the raw files


def _lmb_raw(layout: str):
    """prompt/generation tokens of every row of the LMBenchmark CSVs of one layout, read with csv."""
    ins, outs = [], []
    for f in sorted(LMB.glob(f"LMBench_{layout}*.csv")):
        with f.open(newline="") as fh:
            for row in csv.DictReader(fh):
                ins.append(float(row["prompt_tokens"]))
                outs.append(float(row["generation_tokens"]))
    return np.array(ins), np.array(outs)


def test_workload_from_the_lmbenchmark_csvs_is_their_median_and_p90():
    src = SimpleNamespace(path=str(LMB), format="lmbench-csv")
    for layout, run in (("sharegpt", "vllm-70b-2replicas/sharegpt"), ("short_input", "vllm-70b-2replicas/short_input")):
        ins, outs = _lmb_raw(layout)
        w = nt.measure_workload([src], run)
        assert w.input_tokens == round(np.percentile(ins, 50)) and w.input_p90 == round(np.percentile(ins, 90))
        assert w.output_tokens == round(np.percentile(outs, 50)) and w.output_p90 == round(np.percentile(outs, 90))
        assert (w.dataset == "sharegpt") == (layout == "sharegpt")
        assert w.model is None and "FILL_IN_MODEL" in " ".join(w.unknown())  # LMBenchmark CSVs name no model
    # a mix's bounds select its requests
    ins, _ = _lmb_raw("sharegpt")
    w = nt.measure_workload([src], "vllm-70b-2replicas/sharegpt", {"input_tokens": [None, 500]})
    assert w.input_tokens == round(np.percentile(ins[ins < 500], 50))


@pytest.mark.shared_data
def test_workload_from_a_vllm_bench_serve_json():
    if not SHARED:
        pytest.skip("BEARING_SHARED_DATA is not set")
    f = Path(SHARED) / ("loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/04_tp4_pp2_IB/"
                        "serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json.gz")
    raw = json.loads(gzip.open(f).read())
    ok = [i for i, e in enumerate(raw["errors"]) if not e]
    ins = np.array([raw["input_lens"][i] for i in ok], float)
    outs = np.array([raw["output_lens"][i] for i in ok], float)
    w = nt.measure_workload([SimpleNamespace(path=str(f), format="vllm-bench-serve-requests")],
                            "serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04")
    assert (w.input_tokens, w.input_p90) == (round(np.percentile(ins, 50)), round(np.percentile(ins, 90)))
    assert (w.output_tokens, w.output_p90) == (round(np.percentile(outs, 50)), round(np.percentile(outs, 90)))
    assert w.model == raw["model_id"] and w.dataset == "sharegpt" and w.streaming is True
    text = nt.write_vllm(_plan(), w)
    assert "--dataset-name sharegpt --dataset-path FILL_IN_SHAREGPT_JSON" in text
    assert f"--model {raw['model_id']}" in text and "FILL_IN_SHAREGPT_JSON" in text.split("set -e")[0]


def test_unknowns_are_named_placeholders_in_the_file_and_its_header(tmp_path):
    w = nt.measure_workload([SimpleNamespace(path=str(tmp_path / "gone.json"), format="vllm")], "r")
    assert "not readable" in " ".join(w.notes)
    for tool, writer in nt.WRITERS.items():
        text = writer(_plan(), w)
        head = ("\n".join(json.loads(text)["metadata"]["bearing_next"]) if nt.SUFFIX[tool] == ".json"  # no comments
                else "\n".join(ln for ln in text.splitlines() if ln.startswith(("#", "//"))))
        assert "PLACEHOLDERS to fill in" in head, tool
        # the old silent defaults: 512 / 128 tokens, the model "MODEL"
        assert not re.search(r"\b(512|128)\b|[ '\"]MODEL[ '\"]", text), tool
    text = nt.write_aiperf(_plan(), w)
    assert "--synthetic-input-tokens-mean FILL_IN_INPUT_TOKENS" in text and "--model FILL_IN_MODEL" in text
    assert "--streaming" not in text  # unknown: not set, and the header says so
    assert "streaming (unknown" in text


# ------------------------------------------------------------------ the writers, per tool


def _vllm_parser():
    p = argparse.ArgumentParser(prog="vllm bench serve", exit_on_error=False)
    for flag, typ in VLLM_BENCH_SERVE_FLAGS.items():
        p.add_argument(flag, type=typ)
    for flag in VLLM_STORE_TRUE:
        p.add_argument(flag, action="store_true")
    return p


def test_vllm_command_lines_carry_the_measured_lengths():
    plan = _plan()
    lines = [ln for ln in nt.write_vllm(plan, W).splitlines() if ln.startswith("vllm bench serve")]
    assert len(lines) == len(plan.steps)
    for ln, s in zip(lines, plan.steps, strict=True):
        ns = _vllm_parser().parse_args(shlex.split(ln)[3:])  # unknown flags raise
        assert ns.request_rate == pytest.approx(s.load, abs=1e-4) and ns.burstiness == 1.0
        assert ns.num_prompts == round(s.load * s.duration_s) and ns.model == "smollm2" and ns.save_result
        assert (ns.dataset_name, ns.random_input_len, ns.random_output_len) == ("random", 64, 24)
    conc = _plan("concurrency", (2.3, 5.1))
    lines = [ln for ln in nt.write_vllm(conc, W).splitlines() if ln.startswith("vllm bench serve")]
    assert [_vllm_parser().parse_args(shlex.split(ln)[3:]).max_concurrency for ln in lines] == \
        [int(np.ceil(s.load)) for s in conc.steps]


def _guidellm_args(cmd):
    a = shlex.split(cmd)
    return {a[i][2:]: a[i + 1] for i in range(2, len(a) - 1, 2)}


def test_guidellm_is_one_invocation_with_a_rate_list():
    plan = _plan()
    assert len({s.duration_s for s in plan.steps}) == 1
    text = nt.write_guidellm(plan, W)
    cmds = [ln for ln in text.splitlines() if ln.startswith("guidellm benchmark")]
    assert len(cmds) == 1 and "one guidellm invocation" in text
    a = _guidellm_args(cmds[0])
    assert a["rate-type"] == "constant"
    assert [float(x) for x in a["rate"].split(",")] == pytest.approx([s.load for s in plan.steps], abs=1e-4)
    assert a["data"] == "prompt_tokens=64,output_tokens=24" and a["model"] == "smollm2"
    assert float(a["max-seconds"]) == plan.steps[0].duration_s
    # unequal durations: consecutive steps of equal duration share an invocation, said in the file
    plan.steps[-1].duration_s += 60
    cmds = [ln for ln in nt.write_guidellm(plan, W).splitlines() if ln.startswith("guidellm benchmark")]
    assert [len(_guidellm_args(c)["rate"].split(",")) for c in cmds] == [3, 1]
    conc = _plan("concurrency", (2.3, 5.1))
    args = [_guidellm_args(ln) for ln in nt.write_guidellm(conc, W).splitlines() if ln.startswith("guidellm")]
    assert {a["rate-type"] for a in args} == {"concurrent"}
    assert ",".join(a["rate"] for a in args) == ",".join(str(int(np.ceil(s.load))) for s in conc.steps)


# GuideLLM's scenario schema, PINNED from vllm-project/guidellm (main at ee7a774; the same at v0.7.3 for these
# fields): BenchmarkArgs forbids unknown fields (src/guidellm/benchmark/schemas/entrypoints.py,
# args_model_config extra="forbid"); each sub-model is picked by its "kind".
GUIDELLM_SPEC = {"backend", "profile", "constraints", "tokenizer", "data", "data_column_mapper", "data_preprocessors",
                 "data_finalizer", "data_loader", "seed", "outputs", "metrics"}
GUIDELLM_KINDS = {  # kind -> the fields its model takes (the ones bearing may write)
    "openai_http": {"kind", "target", "model", "request_format", "api_key", "api_routes", "timeout",  # backends/
                    "timeout_connect", "http2", "follow_redirects", "verify", "validate_backend"},  # openai/http.py
    "constant": {"kind", "rate", "max_concurrency", "rampup_duration", "warmup",  # profiles/asynchronous.py
                 "cooldown"},
    "concurrent": {"kind", "streams", "rampup_duration", "warmup", "cooldown"},  # profiles/concurrent.py
    "max_duration": {"kind", "seconds", "stopping_scope"},  # scheduler/constraints/request.py
    "synthetic_text": {"kind", "prompt_tokens", "prompt_tokens_stdev", "prompt_tokens_min", "prompt_tokens_max",
                       "output_tokens", "output_tokens_stdev", "output_tokens_min", "output_tokens_max"},
    "static": {"kind", "value"},  # benchmark/schemas/random.py
    "json": {"kind", "path"},  # benchmark/outputs/serialized.py
}


def _guidellm_models(doc):
    spec = doc["spec"]
    return [spec["backend"], spec["profile"], spec["seed"], *spec["constraints"], *spec["data"], *spec["outputs"]]


def test_guidellm_scenario_is_one_run_with_a_duration_per_step():
    """``--tool guidellm`` (GuideLLM >= 0.7): one scenario, every step of every repeat in one ``guidellm run``;
    the i-th rate runs for the i-th duration (MaxDurationConstraint indexes ``seconds`` by strategy)."""
    plan = _plan()
    plan.steps[-1].duration_s += 60  # unequal durations stay one run (the 0.6 command line needed two)
    doc = json.loads(nt.WRITERS["guidellm"](plan, W))
    assert nt.SUFFIX["guidellm"] == ".json" and "guidellm" in nt.CONTINUOUS
    assert set(doc) == {"metadata", "spec"} and set(doc["spec"]) <= GUIDELLM_SPEC
    for m in _guidellm_models(doc):
        assert set(m) <= GUIDELLM_KINDS[m["kind"]], m
    spec = doc["spec"]
    assert spec["profile"]["kind"] == "constant"
    assert spec["profile"]["rate"] == pytest.approx([s.load for s in plan.steps], abs=1e-4)
    assert spec["constraints"] == [{"kind": "max_duration", "seconds": [s.duration_s for s in plan.steps]}]
    assert spec["data"] == [{"kind": "synthetic_text", "prompt_tokens": 64, "output_tokens": 24}]
    assert (spec["backend"]["target"], spec["backend"]["model"]) == ("http://h:8000", "smollm2")
    assert all(isinstance(v, str) for v in doc["metadata"]["labels"].values())  # labels: dict[str, str]
    assert any("one guidellm run" in ln for ln in doc["metadata"]["bearing_next"])
    # repeats: the whole ascending sequence again, still one run; a concurrency: integer streams
    plan.repeats = 2
    doc = nt.guidellm_scenario(plan, W)
    assert doc["spec"]["profile"]["rate"] == pytest.approx([s.load for s in plan.steps] * 2, abs=1e-4)
    assert doc["spec"]["constraints"][0]["seconds"] == [s.duration_s for s in plan.steps] * 2
    conc = _plan("concurrency", (2.3, 5.1))
    prof = nt.guidellm_scenario(conc, W)["spec"]["profile"]
    assert prof == {"kind": "concurrent", "streams": [int(np.ceil(s.load)) for s in conc.steps]}
    # what the first test does not say stays a named placeholder (GuideLLM refuses it until filled in)
    doc = nt.guidellm_scenario(_plan(), nt.Workload())
    assert doc["spec"]["data"][0]["prompt_tokens"] == "FILL_IN_INPUT_TOKENS"
    assert (doc["spec"]["backend"]["target"], doc["spec"]["backend"]["model"]) == ("FILL_IN_BASE_URL",
                                                                                    "FILL_IN_MODEL")


def test_aiperf_and_llmperf_flags():
    plan = _plan()
    lines = [shlex.split(ln) for ln in nt.write_aiperf(plan, W).splitlines() if ln.startswith("aiperf profile")]
    assert [int(a[a.index("--request-count") + 1]) for a in lines] == [round(s.load * s.duration_s) for s in plan.steps]
    for a in lines:
        assert a[a.index("--synthetic-input-tokens-mean") + 1] == "64"
        assert a[a.index("--output-tokens-mean") + 1] == "24"
        assert "--streaming" in a
    assert "takes no list of rates" in nt.write_aiperf(plan, W)
    conc = _plan("concurrency", (2.3, 5.1))
    text = nt.write_llmperf(conc, W)
    assert [int(x) for x in re.findall(r"--num-concurrent-requests (\d+)", text)] == \
        [int(np.ceil(s.load)) for s in conc.steps]
    assert re.findall(r"--mean-input-tokens (\d+)", text) == ["64"] * 4
    # a rate plan: the first test's mean in flight at each load (8, 9.33, 10.67 within its 2-12 rps), rounded up
    plan = _plan()
    w = nt.Workload(**{**W.__dict__, "in_flight": nt.in_flight_curve(_mix()["steps"])})
    got = [int(x) for x in re.findall(r"--num-concurrent-requests (\d+)", nt.write_llmperf(plan, w))]
    meas = {2.0: 2.0, 4.0: 4.0, 6.0: 6.0, 8.0: 12.0, 10.0: 25.0, 12.0: 36.0}  # x * W by hand
    xs = sorted(meas)
    assert got == [int(np.ceil(np.interp(s.load, xs, [meas[x] for x in xs]) - 1e-9)) for s in plan.steps]


def test_k6_is_one_scenario_whose_stages_hold_each_load():
    for unit, ci in (("rps", (8.0, 12.0)), ("concurrency", (2.3, 5.1))):
        plan = _plan(unit, ci)
        text = nt.write_k6(plan, W)
        start = text.index("export const options = ") + len("export const options = ")
        body = text[start:text.index(";\n\nconst BODY")]
        (sc,) = json.loads(body)["scenarios"].values()
        assert set(sc) == (K6_RAMPING_ARRIVAL if unit == "rps" else K6_RAMPING_VUS)
        holds = sc["stages"][1::2]
        assert sum(float(st["duration"][:-1]) + 1 for st in holds) == plan.total_s
        if unit == "rps":
            assert sc["executor"] == "ramping-arrival-rate" and sc["timeUnit"] == "100s"
            assert [st["target"] / 100 for st in holds] == pytest.approx([s.load for s in plan.steps], abs=0.005)
        else:
            assert sc["executor"] == "ramping-vus"
            assert [st["target"] for st in holds] == [int(np.ceil(s.load)) for s in plan.steps]
        assert '"max_tokens": 24' in text and '"_prompt_words": 64' in text


def test_inference_perf_config_is_one_run_of_stages():
    plan = _plan()
    cfg = yaml.safe_load(nt.write_inference_perf(plan, W))
    assert [st["rate"] for st in cfg["load"]["stages"]] == pytest.approx([s.load for s in plan.steps], abs=1e-4)
    assert [st["duration"] for st in cfg["load"]["stages"]] == [int(s.duration_s) for s in plan.steps]
    assert cfg["data"]["input_distribution"]["mean"] == 64 and cfg["data"]["output_distribution"]["mean"] == 24
    assert cfg["server"]["model_name"] == "smollm2" and cfg["api"]["streaming"] is True


def test_rate_tools_get_rates_and_closed_loop_tools_integer_users():
    plan = _plan()  # 8, 9.33, 10.67, 12 rps
    veg = nt.write_vegeta(plan, W)
    assert re.findall(r"-rate=(\d+)/100s", veg) == [str(round(s.load * 100)) for s in plan.steps]
    assert "users" not in veg.lower()
    rows = list(csv.DictReader(ln for ln in nt.write_lmbenchmark(plan, W).splitlines() if not ln.startswith("#")))
    assert [float(r["qps"]) for r in rows] == pytest.approx([s.load for s in plan.steps], rel=1e-5)
    sg = nt.write_sglang(plan, W)
    assert [float(x) for x in re.findall(r"--request-rate ([\d.]+)", sg)] == pytest.approx(
        [s.load for s in plan.steps], abs=1e-4)
    # JMeter on a rate: integer threads on a 20 s pacing, and the rate they approximate
    rows = list(csv.DictReader(ln for ln in nt.write_jmeter(plan, W).splitlines() if not ln.startswith("#")))
    assert [int(r["threads"]) for r in rows] == [int(np.ceil(s.load * 20)) for s in plan.steps]
    assert [float(r["approximates_rps"]) for r in rows] == pytest.approx(
        [np.ceil(s.load * 20) / 20 for s in plan.steps], rel=1e-5)
    conc = _plan("concurrency", (2.3, 5.1))
    rows = list(csv.DictReader(ln for ln in nt.write_jmeter(conc, W).splitlines() if not ln.startswith("#")))
    assert [int(r["threads"]) for r in rows] == [int(np.ceil(s.load)) for s in conc.steps]
    assert all("." not in r["threads"] for r in rows)
    assert [u for _e, u, _r in nt.locust_stages(conc)] == [int(np.ceil(s.load)) for s in conc.steps]


def test_tool_of_reads_the_loader_format():
    res = SimpleNamespace(conditions=SimpleNamespace(sources=[SimpleNamespace(format=None, tool=None,
                                                                              tool_version=None)]))
    for fmt, tool in (("lmbench-csv", "lmbenchmark"), ("vegeta-gob", "vegeta"), ("jmeter-jtl-csv", "jmeter"),
                      ("sglang-bench-serving", "sglang"), ("llmperf-summary", "llmperf"),
                      ("inference-perf-stages", "inference-perf"), ("genai-perf-export", "genai-perf"),
                      ("aiperf-sweep-csv", "aiperf"), ("guidellm-benchmarks", "guidellm"), ("k6-ndjson", "k6"),
                      ("locust-stats", "locust"), ("vllm-bench-serve-requests", "vllm"),
                      ("azure-llm-inference", "csv")):
        res.conditions.sources[0].format = fmt
        assert nt.tool_of(res) == tool, fmt
    assert set(nt.WRITERS) == set(nt.TOOLS) == set(nt.SUFFIX)
    # GuideLLM before 0.7 has no `guidellm run --scenario`: its own command line (guidellm-0.6)
    res.conditions.sources[0].format = "guidellm-benchmarks"
    for version, tool in (("0.5.1", "guidellm-0.6"), ("v0.6.0", "guidellm-0.6"), ("0.7.2", "guidellm"),
                          ("0.8.1", "guidellm"), (None, "guidellm"),
                          ("before 0.5 (v0.2-v0.3 report schema, no metadata)", "guidellm-0.6")):
        res.conditions.sources[0].tool_version = version
        assert nt.tool_of(res) == tool, version


# ------------------------------------------------------------------ the tools' own parsers


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["rps", "concurrency"])
def test_locust_reads_the_locustfile_and_its_shape_steps_the_loads(tmp_path, unit):
    # never import locust here: it monkey-patches this process with gevent (the probe runs in a subprocess)
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust is not installed (it is in the test extra)")
    plan = _plan(unit, (8.0, 12.0) if unit == "rps" else (2.3, 5.1))
    path = tmp_path / "followup_locust.py"
    path.write_text(nt.write_locust(plan, W))
    subprocess.run([sys.executable, "-m", "py_compile", str(path)], check=True)
    times = [float(t) for t in np.cumsum([0.0] + [s.duration_s for s in plan.steps])[:-1] + 1.0] + [1e9]
    probe = f"""
import json
from locust.util.load_locustfile import load_locustfile
users, shapes = load_locustfile({str(path)!r})
shape = shapes[0]
out = []
for t in {json.dumps(times)}:
    shape.get_run_time = lambda t=t: t
    out.append(shape.tick())
try:
    wait = users["Completion"].wait_time(None)  # constant(0); constant_pacing needs a user instance
except AttributeError:
    wait = None
print(json.dumps({{"users": sorted(users), "ticks": out, "wait": wait}}))
"""
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["users"] == ["Completion"] and res["ticks"][-1] is None
    users = [t[0] for t in res["ticks"][:-1]]
    if unit == "rps":  # users = ceil(rate x 20 s pacing)
        assert users == [int(np.ceil(s.load * 20)) for s in plan.steps]
    else:  # users = ceil(concurrency), back to back
        assert users == [int(np.ceil(s.load)) for s in plan.steps] and res["wait"] == 0
    assert all(isinstance(u, int) for u in users)


GUIDELLM_PY = os.environ.get("BEARING_GUIDELLM")  # e.g. /tmp/venv/bin/python with guidellm 0.5 installed


@pytest.mark.slow
def test_guidellm_parses_its_command_line(tmp_path):
    if not GUIDELLM_PY:
        pytest.skip("BEARING_GUIDELLM (a Python with guidellm 0.5 installed) is not set")
    plan = _plan()
    cmds = [ln for ln in nt.write_guidellm(plan, W).splitlines() if ln.startswith("guidellm benchmark")]
    probe = f"""
import json, shlex
from guidellm.__main__ import cli
out = []
for cmd in {json.dumps(cmds)}:
    ctx = cli.commands["benchmark"].make_context("benchmark", shlex.split(cmd)[2:])
    if "run" in getattr(ctx.command, "commands", {{}}):  # guidellm 0.5: benchmark is a group, run its default
        ctx = ctx.command.commands["run"].make_context("run", shlex.split(cmd)[2:])
    p = ctx.params
    out.append({{"rate_type": p.get("rate_type") or p.get("profile"), "rate": p.get("rate"),
                 "max_seconds": p.get("max_seconds"), "data": p.get("data")}})
print(json.dumps(out, default=str))
"""
    r = subprocess.run([GUIDELLM_PY, "-c", probe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (got,) = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rate_type"] == "constant" and float(got["max_seconds"]) == plan.steps[0].duration_s
    rates = got["rate"] if isinstance(got["rate"], list) else [float(x) for x in str(got["rate"]).split(",")]
    assert [float(x) for x in rates] == pytest.approx([s.load for s in plan.steps], abs=1e-4)
    assert "prompt_tokens=64" in str(got["data"])


GUIDELLM_RUN_PY = os.environ.get("BEARING_GUIDELLM_RUN")  # a Python with guidellm >= 0.7 installed


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["rps", "concurrency"])
def test_guidellm_reads_the_scenario_with_its_own_reader(tmp_path, unit):
    """GuideLLM's own reader (``BenchmarkScenario.create(scenario=FILE)``, what ``guidellm run --scenario`` calls)
    loads the file and gives back the loads and durations. guidellm is not a dependency of bearing (it pulls
    torch and CUDA and pins click below bearing's): run with BEARING_GUIDELLM_RUN naming its Python."""
    if not GUIDELLM_RUN_PY:
        if os.environ.get("CI"):  # .ci/run installs guidellm in a venv of its own and sets the variable
            pytest.fail("BEARING_GUIDELLM_RUN (a Python with guidellm >= 0.7 installed) is not set under CI")
        pytest.skip("BEARING_GUIDELLM_RUN (a Python with guidellm >= 0.7 installed) is not set")
    plan = _plan(unit, (8.0, 12.0) if unit == "rps" else (2.3, 5.1))
    path = tmp_path / "followup.json"
    path.write_text(nt.WRITERS["guidellm"](plan, W))
    unfilled = tmp_path / "unfilled.json"  # lengths unknown: GuideLLM refuses the placeholders, naming the field
    unfilled.write_text(nt.WRITERS["guidellm"](plan, nt.Workload(model="m", base_url="http://h:8000")))
    probe = f"""
import json
from pydantic import ValidationError
from guidellm.benchmark import BenchmarkScenario  # where `guidellm run` finds it (0.7.3 and 0.8.1 alike)
try:
    BenchmarkScenario.create(scenario={str(unfilled)!r})
    refused = ""
except ValidationError as exc:
    refused = str(exc)
sc = BenchmarkScenario.create(scenario={str(path)!r})
(b,) = sc.get_benchmarks()
p = b.profile
print(json.dumps({{"kind": p.kind, "loads": getattr(p, "rate", None) or getattr(p, "streams", None),
                  "seconds": b.constraints[0].seconds, "data": b.data[0].model_dump(mode="json"),
                  "target": b.backend.target, "model": b.backend.model, "refused": refused}}))
"""
    r = subprocess.run([GUIDELLM_RUN_PY, "-c", probe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["kind"] == ("constant" if unit == "rps" else "concurrent")
    want = [s.load for s in plan.steps] if unit == "rps" else [int(np.ceil(s.load)) for s in plan.steps]
    assert got["loads"] == pytest.approx(want, abs=1e-4)
    assert got["seconds"] == [s.duration_s for s in plan.steps]
    assert (got["data"]["prompt_tokens"], got["data"]["output_tokens"]) == (64, 24)
    assert (got["target"], got["model"]) == ("http://h:8000", "smollm2")
    assert "FILL_IN_INPUT_TOKENS" in got["refused"] and "prompt_tokens" in got["refused"]


def test_shell_scripts_parse_and_vegeta_targets_are_json(tmp_path):
    plan = _plan()
    for tool, suffix in nt.SUFFIX.items():
        if suffix != ".sh":
            continue
        path = tmp_path / f"{tool}.sh"
        path.write_text(nt.WRITERS[tool](plan, W))
        r = subprocess.run(["sh", "-n", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, (tool, r.stderr)
    text = nt.write_vegeta(plan, W)
    target = json.loads(text.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0])
    import base64

    body = json.loads(base64.b64decode(target["body"]))
    assert body["model"] == "smollm2" and body["max_tokens"] == 24 and body["prompt"].split() == ["hi"] * 64
    assert target["url"] == "http://h:8000/v1/completions"
