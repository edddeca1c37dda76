"""The follow-up round trip run for real: GuideLLM 0.8.1 against llama.cpp's ``llama-server`` on loopback.

``tests/data/guidellm-llamacpp-roundtrip/`` holds our own files (licence: the project's), written by
GuideLLM 0.8.1 itself on 2026-12-02 (docs/limits.md, "The round trip, run for real"):
``first_benchmarks.json`` from ``guidellm run --scenario first_scenario.json`` (constant 0.9, 1.3,
1.7 req/s, 45 s each, 64-token prompts, 24 output tokens, SmolLM2-135M Q4_1, 4 slots, one thread);
``followup_scenario.json`` is what ``bearing next limits.json --tool guidellm --loads 3 --budget-s 150``
wrote from it, and ``followup_first_benchmarks_all.json`` what GuideLLM wrote running that
scenario unchanged. Expected values are read from the raw JSON with ``json`` only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bearing_lib.loaders import load_trace

HERE = Path(__file__).resolve().parents[1] / "data" / "guidellm-llamacpp-roundtrip"
FIRST, SECOND = HERE / "first_benchmarks.json", HERE / "followup_first_benchmarks_all.json"


def _raw(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_follow_up_scenario_is_the_one_guidellm_ran():
    """What bearing wrote is what GuideLLM ran: its report's config.spec holds the scenario's loads, durations,
    workload and the first run's tokenizer and target (carried over from the first report's config.spec)."""
    first, second, scen = _raw(FIRST), _raw(SECOND), _raw(HERE / "followup_scenario.json")["spec"]
    ran = second["config"]["spec"]
    assert ran["profile"]["rate"] == scen["profile"]["rate"] == [1.7, 2.125, 2.55]
    assert ran["constraints"][0]["seconds"] == scen["constraints"][0]["seconds"] == [60.0, 60.0, 60.0]
    assert [b["config"]["strategy"]["rate"] for b in second["benchmarks"]] == [1.7, 2.125, 2.55]
    for key in ("target", "model", "request_format"):
        assert ran["backend"][key] == scen["backend"][key] == first["config"]["spec"]["backend"][key]
    assert scen["tokenizer"]["model"] == first["config"]["spec"]["tokenizer"]["model"]
    assert (scen["data"][0]["prompt_tokens"], scen["data"][0]["output_tokens"]) == (
        first["config"]["spec"]["data"][0]["prompt_tokens"], first["config"]["spec"]["data"][0]["output_tokens"])
    # the follow-up starts at the first run's highest load, where it never failed, and goes above it
    assert max(b["config"]["strategy"]["rate"] for b in first["benchmarks"]) == scen["profile"]["rate"][0]


@pytest.mark.parametrize("path", [FIRST, SECOND])
def test_bearing_reads_every_request_guidellm_recorded(path):
    raw = _raw(path)
    trace = load_trace(path)
    f = trace.frame
    assert trace.provenance.tool_version == raw["metadata"]["guidellm_version"] == "0.8.1"
    for step, b in enumerate(raw["benchmarks"]):
        ok = b["requests"]["successful"]
        rows = f.filter((f["step"] == step) & (f["status"] == "ok"))
        assert rows.height == len(ok) == b["metrics"]["request_totals"]["successful"]
        # TTFT per request: GuideLLM's own first-token time minus its request start (seconds → ms)
        t = [r["info"]["timings"] for r in ok]
        want = sorted((x["first_token_iteration"] - x["request_start"]) * 1000 for x in t)
        assert sorted(rows["ttft_ms"].to_list()) == pytest.approx(want, abs=1e-2)


def _p90_ttft(b: dict) -> float:
    return b["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]["p90"]


def test_pooling_both_runs_brackets_the_limit_the_raw_percentiles_show(tmp_path):
    """The pooled estimator (``--estimator pooled``; the model's reading of the same runs is the next test).
    First run alone: GuideLLM's own p90 TTFT stays under 500 ms at every load (0.9-1.7 req/s), so the limit is
    only a lower bound; the follow-up fails at 1.7 req/s (its 60 s step queues up: p90 ≈ 2.1 s). Pooled, the limit
    is bracketed: at most the follow-up's failing 1.7, at least the lowest passing load of the first run."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    first, second = _raw(FIRST), _raw(SECOND)
    assert all(_p90_ttft(b) < 500 for b in first["benchmarks"])
    fail = [b["config"]["strategy"]["rate"] for b in second["benchmarks"] if _p90_ttft(b) > 500]
    assert fail == [1.7, 2.125, 2.55]
    out = {}
    for name, paths in (("first", [FIRST]), ("pooled", [FIRST, SECOND])):
        out[name] = tmp_path / f"{name}.json"
        r = CliRunner().invoke(app, ["limits", *map(str, paths), "--sla", "p90(ttft) <= 500ms", "--n-boot", "200",
                                     "--estimator", "pooled", "--json", str(out[name]),
                                     *(["--pool"] if name == "pooled" else [])])
        assert r.exit_code == 0, r.output
    q1 = json.loads(out["first"].read_text())["mixes"][0]["q_ult"]
    assert q1["censored"] == "above" and q1["bracket"] == [1.7, None]  # ≥ 1.7 rps, never failed
    q = json.loads(out["pooled"].read_text())["mixes"][0]["q_ult"]
    assert q["bracket"][1] == min(fail) == 1.7
    lo, hi = q["ci95"]
    assert 0.9 <= lo <= q["value"] <= hi <= 1.7


def test_the_model_on_both_runs_pooled_stays_in_the_raw_bracket(tmp_path):
    """``--pool --estimator model`` on the same two runs. From the raw JSON: the first run passes at 0.9, 1.3 and
    1.7 req/s and the follow-up fails at 1.7, 2.125 and 2.55 (p90 TTFT > 500 ms), so the highest load passing below
    the first failure is 1.3 and the value lies in [1.3, 1.7]. The two runs contradict each other at 1.7: the model
    reads each step of pooled runs at a load jittered by 3 % (docs/limits.md, round 16), so its interval may reach
    past 1.7, but not to the next load that failed (2.125), and not below the lowest load tested (0.9)."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    steps = [(b["config"]["strategy"]["rate"], _p90_ttft(b) <= 500) for f in (FIRST, SECOND)
             for b in _raw(f)["benchmarks"]]
    first_fail = min(x for x, ok in steps if not ok)
    last_pass = max(x for x, ok in steps if ok and x < first_fail)
    next_fail = min(x for x, ok in steps if not ok and x > first_fail)
    assert (last_pass, first_fail, next_fail) == (1.3, 1.7, 2.125)
    out = tmp_path / "model.json"
    r = CliRunner().invoke(app, ["limits", str(FIRST), str(SECOND), "--pool", "--estimator", "model", "--sla",
                                 "p90(ttft) <= 500ms", "--n-boot", "200", "--json", str(out)])
    assert r.exit_code == 0, r.output
    q = json.loads(out.read_text())["mixes"][0]["q_ult"]
    lo, hi = q["ci95"]
    assert last_pass <= q["value"] <= first_fail and 0.9 <= lo < q["value"] < hi < next_fail
    assert q["estimator"].startswith("exceedance model") and "separate runs pooled" in q["interval_method"]


def test_bearing_next_writes_again_the_scenario_that_was_run(tmp_path):
    """``bearing limits`` then ``bearing next --tool guidellm`` on the first report give back, field for field, the
    scenario GuideLLM ran for the follow-up (target, model and tokenizer taken from the report's config.spec)."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    lim = tmp_path / "limits1.json"
    r = CliRunner().invoke(app, ["limits", str(FIRST), "--sla", "p90(ttft) <= 500ms", "--n-boot", "200",
                                 "--json", str(lim)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["next", str(lim), "--tool", "guidellm", "--out", str(tmp_path / "next"),
                                 "--loads", "3", "--budget-s", "150"])
    assert r.exit_code == 0, r.output
    (written,) = tmp_path.glob("next.*.all.json")
    assert json.loads(written.read_text())["spec"] == _raw(HERE / "followup_scenario.json")["spec"]


def test_followup_steps_completions_from_raw_timings():
    """The follow-up's completed rates, from GuideLLM's raw per-request timings with ``json`` only: the step spans
    its requests' ``request_start`` (successful, errored and incomplete); its steady window trims each side by
    max(10 % of the span, 2 mean latencies of the finished requests), at most 25 % (docs/limits.md, "Steady
    window"); the rate is the successful requests whose ``request_end`` falls inside the window over its length.
    2.125 req/s: 39 in 29.89 s = 1.305; 2.55 req/s: 51 in 30.0 s = 1.700: both below 70 % of the offered rate, so
    with their queue (median latency ≥ 3 × the 1.7 req/s step's) they are ``saturated`` and 1.700 is the
    follow-up's μ (tests/limits/test_followup.py)."""
    from statistics import mean

    from bearing_lib.limits.curves import load_curve

    raw = _raw(SECOND)
    want = {}
    for b in raw["benchmarks"]:
        req = b["requests"]
        t = [r["info"]["timings"] for r in req["successful"] + req["errored"] + req["incomplete"]]
        t0, t1 = min(x["request_start"] for x in t), max(x["request_start"] for x in t)
        lat = [r["info"]["timings"]["request_end"] - r["info"]["timings"]["request_start"]
               for r in req["successful"] + req["errored"]]
        trim = min(max(0.1 * (t1 - t0), 2 * mean(lat)), 0.25 * (t1 - t0))
        ws, we = t0 + trim, t1 - trim
        done = sum(ws <= r["info"]["timings"]["request_end"] <= we for r in req["successful"])
        want[b["config"]["strategy"]["rate"]] = done / (we - ws)
    assert want[2.125] == pytest.approx(1.3049, abs=1e-4) and want[2.55] == pytest.approx(1.700, abs=1e-4)
    curve = load_curve(load_trace(SECOND))
    got = {r["offered_load"]: r for r in curve.iter_rows(named=True)}
    for rate, rps in want.items():
        assert got[rate]["throughput_rps"] == pytest.approx(rps, rel=1e-6)  # epoch seconds, read relative
        assert ("saturated" in got[rate]["flags"]) is (rps < 0.7 * rate)
