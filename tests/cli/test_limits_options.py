"""``bearing limits`` options: --mapping (generic tables), --model / --hardware / --tested-instances
into ``conditions``, and a terminal summary that names the steps not judged and why; ``bearing
profile --mapping``.

The load test is SYNTHETIC: a per-request log in an ad-hoc layout (column names a user's own
tool might write), three steps of 500 requests at 1, 4 and 16 users whose TTFTs are chosen so
that the P99 is ~1.5 x 100, 200 and 900 ms, plus a short step of 20 requests at 32 users (too few
for a P99, and not slow enough for its lower bound to fail). With ``p99(ttft) <= 500ms`` the
limit lies between 4 and 16 users, and the 32-user step cannot be judged.
"""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.limits import decision_lines, not_judged_lines, stated_conditions
from bearing_lib.cli.main import app

runner = CliRunner()
MAPPING = """columns:
  request_id: id
  start_s: sent
  latency_ms: took_ms
  ttft_ms: first_ms
  status: code
  step: level
  offered_load: users
  offered_load_unit: unit
  model: served
units: {sent: s, took_ms: ms, first_ms: ms}
status_map: {"200": ok, "500": error}
"""
STEPS = [(1, 500, 100.0), (4, 500, 200.0), (16, 500, 900.0), (32, 20, 150.0)]


@pytest.fixture
def log(tmp_path):
    p = tmp_path / "my_tool_log.csv"
    t = 1_700_000_000.0
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "sent", "took_ms", "first_ms", "code", "level", "users", "unit", "served"])
        for k, (users, n, ttft) in enumerate(STEPS):
            for i in range(n):
                first = ttft * (0.5 + i / n)  # spread 0.5x .. 1.5x: the P99 is ~1.49x the base
                w.writerow([f"s{k}-{i}", f"{t:.3f}", first + 400.0, f"{first:.3f}", 200, k, users, "concurrency",
                            "my-model"])
                t += 0.1
    m = tmp_path / "map.yaml"
    m.write_text(MAPPING)
    return p, m


def _limits(p, m, tmp_path, *extra):
    out = tmp_path / "limits.json"
    r = runner.invoke(app, ["limits", str(p), "--mapping", str(m), "--sla", "p99(ttft) <= 500ms", "--mixes", "none",
                            "--n-boot", "0", "--json", str(out), *extra])
    return r, out


def test_mapping_model_hardware_instances_and_the_steps_not_judged(log, tmp_path):
    p, m = log
    r, out = _limits(p, m, tmp_path, "--model", "llama-3.1-8b", "--hardware", "1 x H100-80GB",
                     "--tested-instances", "2")
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    cond = d["conditions"]
    assert cond["model"] == "llama-3.1-8b"
    assert "--model 'llama-3.1-8b' differs from the model(s) the load-test files name: my-model" in d["notes"]
    assert (cond["hardware"], cond["instances"]) == ("1 x H100-80GB", 2)
    assert cond["sources"][0]["format"] == "generic"
    (mix,) = d["mixes"]
    # P99 of step 1 (4 users) is about 1.49 x 200 ms, of step 2 (16 users) 1.49 x 900 ms
    assert mix["q_ult"]["bracket"] == [4.0, 16.0]
    by_load = {s["offered_load"]: s for s in mix["steps"]}
    assert by_load[32.0]["status"] == "undetermined"
    # the summary names the step that was not judged and why, and the stated conditions
    assert "step at 32 concurrency not judged: p99(ttft) <= 500ms: too few requests for a p99" in r.output
    assert "conditions: model llama-3.1-8b; hardware 1 x H100-80GB; instances 2" in r.output
    assert "note: --model 'llama-3.1-8b' differs from the model(s) the load-test files name: my-model" in r.output


def test_bad_instances_and_mapping_with_another_format_exit_1(log, tmp_path):
    p, m = log
    r, _ = _limits(p, m, tmp_path, "--tested-instances", "0")
    assert r.exit_code == 1 and "--tested-instances: expected an integer >= 1, got 0" in r.output
    r, _ = _limits(p, m, tmp_path, "--format", "lmbench-csv")
    assert r.exit_code == 1 and "does not take option(s) ['mapping']" in r.output


def test_profile_mapping_implies_the_generic_format(log, tmp_path):
    p, _ = log
    m = tmp_path / "production.yaml"  # the same log read as production traffic: no step columns
    m.write_text("columns: {request_id: id, start_s: sent, latency_ms: took_ms, status: code}\n"
                 "units: {sent: s, took_ms: ms}\nstatus_map: {'200': ok}\n")
    out = tmp_path / "profile.json"
    r = runner.invoke(app, ["profile", str(p), "--mapping", str(m), "--json", str(out), "--mixes", "none"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    # 1520 requests 0.1 s apart from 22:13:20 UTC (t = 1,700,000,000) to 22:15:51.9: the one full
    # minute, 22:14, holds 600; 22:13 and 22:15 are partial and left out
    starts, counts = d["per_minute"]["series"]["minute_start_s"], d["per_minute"]["series"]["requests"]
    assert starts == [1_700_000_040.0] and counts == [600]
    r = runner.invoke(app, ["profile", str(p), "--mapping", str(log[1]), "--json", str(out), "--force"])
    assert r.exit_code == 1 and "Use `bearing limits` for load-test results" in r.output


def test_profile_passive_sla_reads_the_trace_with_its_mapping(tmp_path):
    """A JMeter results file (its header is detected as JMeter) read as production through --mapping: the passive
    limit re-reads it with the same mapping (it used to detect JMeter and refuse the mapping option)."""
    from bearing_lib.loaders import load
    from bearing_lib.twin.passive import passive_limit

    rng = np.random.default_rng(3)
    rows, t0 = [], 1_786_714_400_000
    for minute in range(16):  # 16 minutes at 0.5-2 rps; latency ~ 100 / (3 - rate) ms with noise
        rate = 0.5 + 1.5 * (minute % 8) / 7
        for ts in np.sort(rng.uniform(0, 60_000, rng.poisson(rate * 60))):
            ms = 100.0 / (3.0 - rate) * rng.lognormal(0.0, 0.3)
            rows.append(f"{t0 + minute * 60_000 + int(ts)},{int(ms)},req,200,OK,tg 1-1,text,true,,1,1,1,1,"
                        f"http://x/,{int(ms)},0,0")
    p = tmp_path / "results.jtl"
    p.write_text("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
                 "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n" + "\n".join(rows) + "\n")
    m = tmp_path / "map.yaml"
    m.write_text("columns: {start_s: timeStamp, latency_ms: elapsed, status: success}\n"
                 "units: {timeStamp: ms, elapsed: ms}\ntime_origin: epoch\nstatus_map: {'true': ok, 'false': error}\n")
    out = tmp_path / "profile.json"
    r = runner.invoke(app, ["profile", str(p), "--mapping", str(m), "--passive-sla", "p99(latency) <= 400ms",
                            "--json", str(out), "--mixes", "none"])
    assert r.exit_code == 0, r.output
    got = json.loads(out.read_text())["passive_limit"]
    lib = passive_limit(load(p, format="generic", mapping=m), "p99(latency) <= 400ms")
    assert got["kind"] == "passive" and got["q_ult"]["value"] == lib.q_ult.value


def test_not_judged_lines_group_steps_by_reason():
    mix = {"q_ult": {"unit": "rps"}, "steps": [
        {"offered_load": 0.5, "status": "undetermined", "reasons": ["p99(ttft) <= 2s: too few requests (83 ok)"]},
        {"offered_load": 1.0, "status": "undetermined", "reasons": ["p99(ttft) <= 2s: too few requests (80 ok)"]},
        {"offered_load": 1.5, "status": "undetermined", "reasons": ["p99(ttft) <= 2s: too few requests (79 ok)"]},
        {"offered_load": 2.0, "status": "undetermined", "reasons": ["p99(ttft) <= 2s: too few requests (70 ok)"]},
        {"offered_load": 3.0, "status": "pass", "reasons": []},
        {"offered_load": 9.0, "status": "excluded", "reasons": ["generator behind: sent 6.1 rps of 9"]},
    ]}
    assert not_judged_lines(mix) == [
        "4 steps at 0.5–2 rps not judged; the first: p99(ttft) <= 2s: too few requests (83 ok)",
        "step at 9 rps left out: generator behind: sent 6.1 rps of 9",
    ]
    # vLLM's rate inf is written null: the step is named by its number, not "at ? rps" (round 22)
    inf = {"q_ult": {"unit": "rps"}, "steps": [
        {"step": 3, "offered_load": None, "status": "excluded", "reasons": ["offered load is not a finite number"]},
        {"step": 4, "offered_load": 2.0, "status": "undetermined", "reasons": ["flag too_short"]},
        {"step": 5, "offered_load": None, "status": "undetermined", "reasons": ["flag too_short"]},
    ]}
    assert not_judged_lines(inf) == [
        "step 3 left out: offered load is not a finite number",
        "2 steps (at 2 rps, step 5) not judged; the first: flag too_short",
    ]


@pytest.mark.parametrize("typed", [False, True])
def test_stated_conditions_on_a_dict_or_typed_conditions(typed):
    def result(model):
        cond = SimpleNamespace(model=model, hardware=None, instances=None, instances_basis=None) if typed else \
            {"model": model}
        return SimpleNamespace(conditions=cond, notes=[])

    def get(r, k):
        return getattr(r.conditions, k) if typed else r.conditions.get(k)

    r = result(["a", "b"])
    assert stated_conditions(r, model="a", hardware=None, tested_instances=None) == []  # one of the files' models
    assert get(r, "model") == "a" and r.notes == []
    r = result(["a"])
    said = stated_conditions(r, model="x", hardware="8xA100", tested_instances=3)
    assert said == r.notes == ["--model 'x' differs from the model(s) the load-test files name: a"]
    assert (get(r, "model"), get(r, "hardware"), get(r, "instances")) == ("x", "8xA100", 3)
    assert get(r, "instances_basis") == "stated with bearing limits --tested-instances"


def test_the_table_writes_an_interval_as_lo_to_hi():
    """A new user read the bracket column "[20,000, 30,000]" as three numbers (round 21): the ends are joined by
    "to", thousands still grouped, an open end said as one."""
    from bearing_lib.cli.limits import _span

    assert _span((20_000.0, 30_000.0)) == "20,000 to 30,000"
    assert _span((9.5, None)) == "9.5 to open"
    assert _span((None, 2.532)) == "open to 2.532"
    assert _span((None, None)) == "–" and _span(None) == "–"


def test_the_follow_up_test_is_printed_once():
    """It is printed under the mix's statement with the table; the decisions list repeated it (AIPerf's sweep, a new
    user's read, round 22)."""
    doc = {"mixes": [{"run_id": "r", "mix": {"name": "all"}, "steps": [],
                      "notes": ["follow-up test: loads 213.2, 247.8 concurrency", "another note"]}]}
    assert decision_lines(doc) == ["r / all:", "  note: another note"]
