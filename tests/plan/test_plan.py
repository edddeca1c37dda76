"""CapacityPlan assembly and the ``bearing plan`` CLI on HAND-MADE limits/profile files.

tests/fixtures/plan/limits_handmade.json and profile_handmade.json are hand-made (they follow
docs/interfaces.md §4 and §5; no load test or trace produced them). Expected values are
worked out by hand in the comments.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, InputError, ParameterError, SchemaError
from bearing_lib.plan.capacity_plan import (
    CapacityPlan,
    limits_from_dict,
    profile_input_from_dict,
    read_json,
    spread_windows,
    target_from_profile,
)
from bearing_lib.plan.memory import GIB
from bearing_lib.traffic.binning import RateSeries

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
LIMITS = DATA / "limits_handmade.json"
PROFILE = DATA / "profile_handmade.json"


def test_plan_by_hand():
    plan = CapacityPlan.from_files(LIMITS, PROFILE, model="llama-3.1-8b", gpu_mem_gib=80)
    d = plan.to_dict()
    # limits in req/s: short 12.0 (CI 7..9 concurrency x 12/8 = 10.5..13.5), long 4.0 (5..7 x 4/6)
    per = {m["mix"]: m for m in d["fos"]["per_mix"]}
    assert per["short"]["q_ult_ci95"] == pytest.approx([10.5, 13.5])
    assert per["long"]["q_ult_ci95"] == pytest.approx([10 / 3, 14 / 3])
    # blend 1 / (0.75/12 + 0.25/4) = 8 req/s; target 4 req/s -> FOS 2.0, utilisation 50 %
    assert d["fos"]["blended"]["q_blend_rps"] == pytest.approx(8.0)
    assert d["fos"]["blended"]["value"] == pytest.approx(2.0)
    lo, hi = d["fos"]["blended"]["ci95"]
    assert lo < 2.0 < hi
    assert d["verdict"] == "green" and d["utilisation"] == pytest.approx(0.5)
    # allowable 8 / 1.5 = 5.333 req/s = 320 req/min; CBU > 0.8 when a minute has > 256 requests
    assert d["allowable_rps"] == pytest.approx(8 / 1.5)
    assert [m["index"] for m in d["cbu"]["minutes_above"]] == [3, 4]  # 300 and 260 requests
    assert d["cbu"]["minutes_above"][0]["minute"] == "2023-11-14 22:16"  # 1700000180 s UTC
    # instances: base ceil(4 / 5.333) = 1; burst peak 10 req/s = 2.5 x target needs ceil(10 / 8) = 2
    # instances at the ultimate capacity -> buffer max(1, 2 - 1) = 1 -> 2
    assert (d["instances"]["base"], d["instances"]["buffer"], d["instances"]["total"]) == (1, 1, 2)
    assert d["instances"]["safe_concurrency"]["value"] == 8  # P99 1900 <= 2000; 16 has 3500
    # elasticity: 8 req/s per instance; the busiest minute (5 req/s) is 0.625 of one instance
    assert d["elasticity"]["recommendation"] == "elastic" and d["elasticity"]["events"] == []
    # memory at P99 6,000 tokens x concurrency 8 (the safe concurrency):
    # (16,060,522,496 + 8 x 6000 x 131072) x 1.15 = 25,704,775,270.4 B
    p99 = next(r for r in d["memory"]["rows"] if r["basis"] == "p99")
    assert p99["total_gib"] == pytest.approx(25_704_775_270.4 / GIB)
    assert p99["seed_mha_total_gib"] > 1.8 * p99["total_gib"]
    sc = {r["dimension"]: r["status"] for r in d["scorecards"]["scorecard"]}
    assert sc["compute"] == "green"  # headroom 1 - 23.94 / 80 = 70 %
    assert sc["business"] == "green"  # headroom FOS - 1 = 100 %
    assert sc["data"] == "not assessed"
    json.dumps(d, allow_nan=False)  # strict JSON


def test_sections_without_inputs_say_why():
    profile = read_json(PROFILE, "profile")
    for k in ("series", ):
        profile["per_minute"].pop(k)
    profile.pop("seq_len")
    profile.pop("bursts")
    d = CapacityPlan.build(read_json(LIMITS, "limits"), profile).to_dict()
    assert d["cbu"] == {"available": False, "reason": "no per-minute series (profile per_minute.series, or give the "
                                                      "trace)"}
    assert d["elasticity"]["available"] is False
    # the hand-made limits name llama-3.1-8b, whose preset the memory plan takes: it is the sequence lengths it lacks
    assert d["memory"] == {"available": False, "reason": "no sequence-length distribution (profile seq_len, or the "
                                                          "trace)"}
    assert d["instances"]["buffer"] == 2 and "seed default" in d["instances"]["buffer_basis"]


def test_target_from_per_minute_when_no_targets():
    p = {"per_minute": {"p99": 296.4, "p95": 282.0}}
    t = target_from_profile(p)
    assert t.rps == pytest.approx(296.4 / 60) and t.ci95 is None and "no CI" in t.basis
    t2 = target_from_profile(p, quantile=0.95, growth=1.5)
    assert t2.rps == pytest.approx(282.0 / 60 * 1.5)
    t3 = target_from_profile({"targets": {"target_rps": 4.0, "ci95": [3.6, 4.4], "growth": 1.0}}, growth=2.0)
    assert t3.rps == pytest.approx(8.0) and t3.ci95 == pytest.approx((7.2, 8.8))
    with pytest.raises(SchemaError):
        target_from_profile({})


def test_limits_reader_errors_and_skips():
    with pytest.raises(SchemaError, match="mixes"):
        limits_from_dict({})
    li = limits_from_dict({"conditions": {"offered_load_unit": "concurrency"},
                           "mixes": [{"mix": {"name": "a"}, "q_ult": {"value": 4, "unit": "concurrency"}},
                                     {"mix": {"name": "b"}, "q_ult": {"value": 3.0, "unit": "rps"}}]})
    assert [lim.mix for lim in li.limits] == ["b"] and "no throughput_rps" in li.skipped["a"]
    assert li.tested_instances == 1 and li.tested_instances_basis.startswith("assumed")


def test_cli_plan(tmp_path):
    out = tmp_path / "plan.json"
    before = LIMITS.read_bytes(), PROFILE.read_bytes()
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--tier", "critical",
                                   "--model", "llama-3.1-8b", "--gpu-mem-gib", "80", "--json", str(out)])
    assert res.exit_code == 0, res.output
    # critical tier: FOS 2.0 < 2.5 -> red; allowable 8 / 2.5 = 3.2 req/s = 192 req/min
    assert "verdict:     RED" in res.output
    d = json.loads(out.read_text())
    assert d["verdict"] == "red" and d["allowable_rps"] == pytest.approx(3.2)
    # CBU = count / 192: above 0.8 when count > 153.6 -> minutes 1,2,3,4,5,8,9
    assert [m["index"] for m in d["cbu"]["minutes_above"]] == [1, 2, 3, 4, 5, 8, 9]
    # base = ceil(4 / (8 / 2.5)) = ceil(1.25) = 2
    assert d["instances"]["base"] == 2
    assert (LIMITS.read_bytes(), PROFILE.read_bytes()) == before  # inputs untouched


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = CliRunner().invoke(app, ["plan", "--limits", str(bad), "--profile", str(PROFILE)])
    assert res.exit_code == 1 and "not valid JSON" in res.output and str(bad) in res.output
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--tier", "gold"])
    assert res.exit_code == 1 and "unknown service tier" in res.output
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--model", "x"])
    assert res.exit_code == 1 and "unknown model preset" in res.output
    with pytest.raises(InputError, match="not found"):
        read_json(tmp_path / "missing.json", "limits")


def test_growth_scales_target_and_replay():
    plan = CapacityPlan.from_files(LIMITS, PROFILE, growth=2.0)
    d = plan.to_dict()
    assert d["target"]["rps"] == pytest.approx(8.0)
    assert d["fos"]["blended"]["value"] == pytest.approx(1.0)
    # replay on the series x 2: the busiest minute is 600 req/min = 10 req/s on 8 req/s instances
    assert d["elasticity"]["n_scale_up"] >= 1
    assert math.isclose(d["elasticity"]["per_instance_rps"], 8.0)


def _two_runs():
    d = read_json(LIMITS, "limits")
    a, b = json.loads(json.dumps(d["mixes"][0])), json.loads(json.dumps(d["mixes"][0]))
    a["run_id"], b["run_id"] = "vllm", "llm-d"
    b["q_ult"]["throughput_rps"] = 6.0
    b["q_ult"]["ci95"] = [7, None]  # one-sided CI (upper end not bounded by the bootstrap)
    d["mixes"] = [a, b]
    return d


def test_several_runs_need_a_choice():
    d = _two_runs()
    profile = read_json(PROFILE, "profile")
    profile["mix_shares"] = [{"mix": "short", "share": 1.0}]
    with pytest.raises(ParameterError, match=r"2 runs \(llm-d, vllm\)"):
        CapacityPlan.build(d, profile)
    with pytest.raises(ParameterError, match="no run 'x'"):
        CapacityPlan.build(d, profile, run="x")
    plan = CapacityPlan.build(d, profile, run="llm-d")
    # throughput 6 req/s at 8 concurrent: CI [7, open] x 6/8 = [5.25, open]
    m = plan.fos.per_mix[0]
    assert m.q_ult_rps == 6.0 and m.q_ult_ci95[0] == pytest.approx(5.25) and m.q_ult_ci95[1] is None
    assert any("open above" in n and "leaves that end open" in n for n in plan.notes)
    assert plan.fos.blended.fos.value == pytest.approx(6.0 / 4.0)
    # every downstream number keeps the open end: FOS [≤ 5.25 / 4 (the target's CI widens it), open], allowable
    # [5.25 / 1.5, open], and the instance count's LOW end open (a higher limit needs fewer instances)
    assert plan.fos.blended.ci95[0] <= 5.25 / 4.0 and plan.fos.blended.ci95[1] is None
    assert plan.allowable_rps == pytest.approx(4.0) and plan.allowable_ci95[1] is None
    assert plan.allowable_ci95[0] == pytest.approx(3.5)
    inst = plan.instances
    tested = inst.tested_instances
    hi_count = math.ceil(4.0 / (5.25 / tested / 1.5) - 1e-9)
    assert inst.base_ci95 == (None, hi_count) and inst.total_ci95[0] is None
    assert inst.open_reason == "no step above the limit failed a clause"
    # the JSON edge: null where open, read back the same
    doc = plan.to_dict()
    assert doc["allowable_ci95"][1] is None and doc["instances"]["base_ci95"] == [None, hi_count]
    back = CapacityPlan.from_dict(json.loads(json.dumps(doc)))
    assert back.instances.base_ci95 == (None, hi_count) and back.fos.blended.ci95[1] is None
    assert back.to_dict() == doc


def _coarse_profile():
    """The plan's typed view of a profile with 600 s bins (like ServeGen's windows): the hand-made
    profile JSON without its series, and the windows of a RateSeries spread over their minutes."""
    d = read_json(PROFILE, "profile")
    d["per_minute"].pop("series")
    pi = profile_input_from_dict(d, source="profile JSON")
    s = RateSeries(600.0, np.array([1_700_000_400.0, 1_700_001_000.0]), np.array([1200.0, 3000.0]), aligned=True)
    pi.series, pi.series_labels, pi.series_note = spread_windows(s.start_s.tolist(), s.requests.tolist(), s.bin_s,
                                                                 s.aligned)
    return pi


def test_coarse_windows_are_spread_over_minutes():
    plan = CapacityPlan.build(read_json(LIMITS, "limits"), _coarse_profile())
    c = plan.cbu.to_dict()
    # 1200 requests in 10 min = 120/min, 3000 = 300/min; allowable 320/min -> CBU 0.375 and 0.9375
    assert c["n_minutes"] == 20
    assert (plan.cbu.max, plan.cbu.n_above) == (pytest.approx(300 / 320), 10)
    assert [m.cbu for m in plan.cbu.minutes_above] == pytest.approx([300 / 320] * 10)
    assert [m["index"] for m in c["minutes_above"]] == list(range(10, 20))
    assert c["minutes_above"][0]["minute"] == "2023-11-14 22:30"  # 1700001000 s UTC
    assert any("600 s bins" in n for n in plan.notes)


def test_cli_user_inputs(tmp_path):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"data": {"coverage": 0.8}, "engineering": {"canary": True, "monitoring": True,
                                                                            "rollback": True},
                                  "budget": {"cost_model": "none"}, "health": {"gpu_utilisation": 0.7}}))
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--inputs", str(inputs),
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    sc = {r["dimension"]: r["status"] for r in d["scorecards"]["scorecard"]}
    assert (sc["data"], sc["engineering"], sc["budget"]) == ("yellow", "green", "red")
    assert sc["compute"] == "not assessed"  # the limits name no model: no memory plan
    ck = {c["metric"]: c["status"] for c in d["scorecards"]["checklist"]}
    assert ck["GPU utilisation"] == "healthy" and ck["cost per request"] == "not measured"


def test_repr_html_escapes_and_shows_sections():
    d = read_json(LIMITS, "limits")
    d["mixes"][0]["mix"]["name"] = "<script>x</script>"
    p = read_json(PROFILE, "profile")
    p["mix_shares"][0]["mix"] = "<script>x</script>"
    h = CapacityPlan.build(d, p, model="llama-3.1-8b", gpu_mem_gib=80)._repr_html_()
    assert "<script>x</script>" not in h and "&lt;script&gt;" in h
    assert "GREEN" in h and "Memory plan" in h and "Elasticity replay" in h


def test_buffer_is_fixed_when_the_replay_falls_behind():
    p = read_json(PROFILE, "profile")
    # SYNTHETIC series: 240/min (4 req/s, one 8 req/s instance at 0.5) then a jump to 1200/min (20 req/s)
    p["per_minute"]["series"] = {"minute_start_s": list(range(0, 600, 60)), "requests": [240] * 5 + [1200] * 5}
    plan = CapacityPlan.build(read_json(LIMITS, "limits"), p)
    # by hand: initial ceil(4 / (8 x 0.6)) = 1 instance; minute 5: 20 > 8 ready -> over; scale up
    # ceil(20 / 4.8) - 1 = 4 more, ready at 6 + 1.5 = 7.5 -> from minute 8; over in minutes 5, 6, 7;
    # replay buffer = ceil(20 / 8) - 1 = 2; burst buffer = 1 -> fixed 2
    e = plan.elasticity
    assert e.over_capacity_minutes == [5, 6, 7] and e.buffer == 2
    assert plan.instances.buffer_plan.mode == "fixed" and plan.instances.buffer_plan.instances == 2
    assert plan.to_dict()["instances"]["buffer_plan"]["mode"] == "fixed"
    ok = CapacityPlan.build(read_json(LIMITS, "limits"), read_json(PROFILE, "profile"))
    assert ok.instances.buffer_plan.mode == "elastic" and ok.instances.buffer_plan.instances == 1


def test_cli_vllm_log_check(tmp_path):
    log = tmp_path / "vllm.log"
    # transcribed from LMCache/LMCache#1739 (Qwen3-14B, vLLM V1)
    log.write_text("INFO [gpu_worker.py:298] Available KV cache memory: 6.51 GiB\n"
                   "INFO [kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens\n")
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--model", "qwen3-14b",
                                   "--gpu-mem-gib", "80", "--vllm-log", str(log), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "vLLM log:    qwen3-14b: 6.51 GiB of KV cache holds 42,663 tokens" in res.output
    chk = json.loads(out.read_text())["memory"]["vllm_log_check"]
    assert chk["right"] is True and chk["logged_tokens"] == 42_656
    # without --model the check uses the model the limits name (llama-3.1-8b), never a default: its KV cache holds
    # 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B a token, so 6.51 GiB hold 6.51 x 2**30 / 131072 = 53,329
    res = CliRunner().invoke(app, ["plan", "--limits", str(LIMITS), "--profile", str(PROFILE), "--vllm-log", str(log)])
    assert res.exit_code == 0, res.output
    assert f"llama-3.1-8b: 6.51 GiB of KV cache holds {int(6.51 * 2**30 // 131072):,} tokens" in res.output


def test_target_ci_that_misses_the_point_is_widened():
    t = target_from_profile({"targets": {"target": {"rps": 8.3, "ci95": [6.0, 8.2], "quantile": 0.99}}})
    assert t.ci95 == (6.0, 8.3) and "widened" in t.basis
    with pytest.raises(BadValueError, match="targets.target.rps"):
        target_from_profile({"targets": {"target": {"rps": 0.0}}}, source="p.json")


def test_safe_concurrency_planning_without_concurrency_at_the_limit():
    # HAND-MADE limits on a concurrency axis whose steps carry no concurrency_mean / latency_ms_mean: no
    # concurrency at Q_ult (Little's law), so the memory plan falls back to the max safe concurrency. The
    # highest step meeting p99 latency < 2000 ms is the one at 8 concurrent (the fixture's q_ult bracket [8, 16]).
    d = read_json(LIMITS, "limits")
    for m in d["mixes"]:
        for st in m["steps"]:
            st.pop("concurrency_mean", None)
            st.pop("latency_ms_mean", None)
    plan = CapacityPlan.build(d, read_json(PROFILE, "profile"), model="llama-3.1-8b")
    assert plan.instances.safe_concurrency.value == 8.0
    assert plan.memory.concurrency == 8
    assert "whose p99(latency_ms) and every other clause meet the SLA" in plan.memory.concurrency_basis
    assert "no concurrency at Q_ult" in plan.memory.concurrency_basis
