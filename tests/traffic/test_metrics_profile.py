"""The production profile from Prometheus counters (``traffic/metrics_profile.py``).

Two kinds of truth: hand-made range-query JSON whose per-minute counts are known by
construction (a reset, a gap, a step that does not divide a minute), and the fixture a real
Prometheus 2.42 wrote while scraping ``vllm_like_exporter.py`` (tests/fixtures/prometheus/,
README there), checked against the raw JSON read with ``json`` and numpy and against the
exporter's own log of what it counted.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib import load
from bearing_lib.cli.main import app
from bearing_lib.common.errors import InputError, InsufficientDataError
from bearing_lib.traffic.document import TrafficProfile, profile_schema_document
from bearing_lib.traffic.metrics_profile import profile_metrics

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
T0 = 1796217600  # a UTC minute


def _doc(series: list[tuple[dict[str, str], list[tuple[float, float]]]]) -> dict:
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "vllm:request_success_total", "instance": "pod-a", **lab},
         "values": [[t, str(v)] for t, v in pts]} for lab, pts in series]}}


def _write(tmp_path: Path, doc: dict, name: str = "q.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_hand_made_counters_with_a_reset(tmp_path):
    ts = [T0 + 15 * k for k in range(25)]  # 6 minutes of 15 s steps
    a = [4 * k for k in range(25)]  # 4 per step: 16 a minute
    b = [k if k < 10 else k - 9 for k in range(25)]  # 1 per step; restarted between steps 9 and 10 (value 1 at 10)
    p = _write(tmp_path, _doc([({"model_name": "m1"}, list(zip(ts, a, strict=True))),
                               ({"model_name": "m2"}, list(zip(ts, b, strict=True)))]))
    prof = profile_metrics(load(p), n_boot=0)
    d = prof.to_dict()
    assert d["source"]["kind"] == "metrics" and d["source"]["time_resolution_s"] == 15.0
    assert d["per_minute"]["series"]["requests"] == [20] * 6
    assert d["per_minute"]["series"]["minute_start_s"] == [T0 + 60.0 * i for i in range(6)]
    assert d["targets"]["target"]["rps"] == pytest.approx(20 / 60)
    m = d["metrics"]
    assert m["counter_resets"] == 1 and m["gaps"] == 0 and m["n_series"] == 2 and m["step_s"] == 15.0
    assert [(r["mix"], r["n_requests"], r["share"]) for r in m["per_mix"]] == [("m1", 96.0, 0.8), ("m2", 24.0, 0.2)]
    keys = ["mix", "n_requests", "share", "mean_input_tokens", "mean_output_tokens"]
    assert all(list(r) == keys for r in m["per_mix"])
    assert d["per_second"]["available"] is False and "15 s" in d["per_second"]["reason"]
    assert d["slo_budget"]["available"] is False and d["seq_len"]["available"] is False
    assert d["dispersion"]["interarrival_cv"] is None
    assert any("per-request" in u for u in m["unknowable"])


def test_a_gap_is_spread_over_its_steps(tmp_path):
    ts = [T0 + 15 * k for k in range(9)]  # two minutes
    vals = [0, 3, 6, 9, 12, 15, 18, 21, 24]  # 3 per step
    pts = [(t, v) for t, v in zip(ts, vals, strict=True) if t not in (T0 + 60, T0 + 75)]  # two scrapes missing
    prof = profile_metrics(load(_write(tmp_path, _doc([({"model_name": "m"}, pts)]))), n_boot=0)
    d = prof.to_dict()
    assert d["per_minute"]["series"]["requests"] == [12, 12]  # the increase of 9 over 3 steps: 3 each
    assert d["metrics"]["gaps"] == 1


def test_a_step_that_does_not_divide_a_minute_gives_windows(tmp_path):
    ts = [T0 + 45 * k for k in range(9)]
    vals = [0, 9, 18, 27, 72, 81, 90, 99, 108]  # 9 per 45 s, 45 in the fourth window
    prof = profile_metrics(load(_write(tmp_path, _doc([({"model_name": "m"}, list(zip(ts, vals, strict=True)))]))),
                           n_boot=0)
    d = prof.to_dict()
    assert d["per_minute"]["available"] is False
    assert d["per_window"]["bin_s"] == 45.0 and d["per_window"]["n_bins"] == 8
    assert d["per_window"]["rps"]["max"] == pytest.approx(45 / 45)
    assert d["per_window"]["series"]["requests"] == pytest.approx([9, 9, 9, 45, 9, 9, 9, 9])
    assert d["metrics"]["mix_peaks"]["rows"][0]["max_rps"] == pytest.approx(1.0)


def test_refusals_name_what_is_missing(tmp_path):
    gauge = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "vllm:num_requests_running"}, "values": [[T0 + 15 * k, "1"] for k in range(9)]}]}}
    with pytest.raises(InputError, match="no request counter"):
        profile_metrics(load(_write(tmp_path, gauge)))
    short = _doc([({"model_name": "m"}, [(T0, 0), (T0 + 15, 1)])])
    with pytest.raises(InsufficientDataError, match="at least three steps"):
        profile_metrics(load(_write(tmp_path, short, "s.json")))


# --------------------------------------------------------------------------- the real Prometheus fixture
def _raw_minutes(path: Path) -> tuple[dict[float, float], int]:
    """Per-minute requests from the raw JSON, by the documented rule, with json and plain Python."""
    doc = json.loads(path.read_text())
    per_min: dict[float, float] = defaultdict(float)
    resets = 0
    step = 15.0
    for s in doc["data"]["result"]:
        if s["metric"]["__name__"] != "vllm:request_success_total":
            continue
        pts = [(float(t), float(v)) for t, v in s["values"]]
        for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
            inc = v1 - v0 if v1 >= v0 else v1
            resets += v1 < v0
            n = round((t1 - t0) / step)
            for j in range(n):
                w = t1 - (j + 1) * step
                per_min[math.floor(w / 60) * 60] += inc / n
    return per_min, resets


def _log_increments() -> tuple[list[tuple[float, float]], float]:
    """(time, requests finished since the previous line of the same model) from the exporter's own log, and the
    time of the restart (the first line whose cumulative count fell)."""
    prev: dict[str, int] = {}
    out = []
    reset_t = math.inf
    with open(FIX / "exporter_log.csv", newline="") as fh:
        for t, m, stop, length, _p, _g in csv.reader(fh):
            n = int(stop) + int(length)
            p = prev.get(m)
            out.append((float(t), float(n if p is None else (n - p if n >= p else n))))  # a new process starts at 0
            if p is not None and n < p:
                reset_t = min(reset_t, float(t))
            prev[m] = n
    return out, reset_t


def test_real_prometheus_range_query_against_the_raw_json_and_the_exporter_log():
    path = FIX / "vllm-counters-step15.json"
    prof = profile_metrics(load(path), n_boot=0)
    d = prof.to_dict()
    series = d["per_minute"]["series"]
    raw, resets = _raw_minutes(path)
    minutes = series["minute_start_s"]
    assert len(minutes) == 8 and minutes == [minutes[0] + 60.0 * i for i in range(8)]
    assert series["requests"] == pytest.approx([raw[m] for m in minutes])
    assert d["metrics"]["counter_resets"] == resets == 4  # one restart, four series
    assert d["metrics"]["gaps"] == 2  # the two `length` series appear only after the restart's first request
    assert d["per_minute"]["p99"] == pytest.approx(float(np.quantile([raw[m] for m in minutes], 0.99)))
    # the exporter's own log: each minute's count moves by at most the requests of one scrape interval (5 s)
    # at either edge (the value at t is the last scrape before t) ...
    log, reset_t = _log_increments()

    def logged(a: float, b: float) -> float:
        return sum(inc for t, inc in log if a <= t < b)

    for m, r in zip(minutes, series["requests"], strict=True):
        truth = logged(m, m + 60)
        slack = logged(m - 5, m) + logged(m + 55, m + 60) + 1
        if m <= reset_t < m + 60:
            # ... and a restart loses what was finished after the last evaluation before it: up to one step
            # (15 s) plus one scrape interval of traffic before the restart
            slack += logged(reset_t - 22, reset_t)
        assert abs(r - truth) <= slack, (m, r, truth, slack)
    # tokens per request per model: the exporter draws Poisson(500 / 2000) prompt and (150 / 300) output tokens
    per = {r["mix"]: r for r in d["metrics"]["per_mix"]}
    assert per["llama-8b"]["mean_input_tokens"] == pytest.approx(500, rel=0.02)
    assert per["llama-70b"]["mean_input_tokens"] == pytest.approx(2000, rel=0.02)
    assert per["llama-70b"]["mean_output_tokens"] == pytest.approx(300, rel=0.02)
    # the 70b model's own P99 minute is 1.24x its share of the overall P99: its burst share is higher (4 of 12)
    peaks = d["metrics"]["mix_peaks"]
    row = {r["mix"]: r for r in peaks["rows"]}["llama-70b"]
    assert row["understated"] and row["own_over_share"] == pytest.approx(1.24, abs=0.01)


def test_steps_of_15_and_60_s_agree_and_45_s_gives_windows():
    p15 = profile_metrics(load(FIX / "vllm-counters-step15.json"), n_boot=0).to_dict()
    p60 = profile_metrics(load(FIX / "vllm-counters-step60.json"), n_boot=0).to_dict()
    p45 = profile_metrics(load(FIX / "vllm-counters-step45.json"), n_boot=0).to_dict()
    # one-minute evaluations are every fourth 15 s evaluation: the same per-minute counts
    assert p60["per_minute"]["series"] == p15["per_minute"]["series"]
    assert p45["per_window"]["bin_s"] == 45.0 and p45["metrics"]["time_resolution_s"] == 45.0


def test_cli_profile_of_the_fixture_feeds_the_plan(tmp_path):
    out = tmp_path / "p.json"
    r = CliRunner().invoke(app, ["profile", str(FIX / "vllm-counters-step15.json"), "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "metrics:     vllm:request_success_total every 15 s, 4 series, 4 counter reset(s)" in r.output
    # a limits file with one mix `all` (as `bearing limits --mixes none` writes): the plan blends it with the
    # metrics profile, whose every request is in `all`; FOS = Q_ult 12 req/s / the profile's P99 minute
    lim = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "limits_handmade.json").read_text())
    one = {"name": "all", "bounds": {}}
    lim["mix_spec"] = [one]
    lim["mixes"] = [{**lim["mixes"][0], "mix": one, "share": 1.0}]
    lim.pop("blended", None)
    (tmp_path / "limits.json").write_text(json.dumps(lim))
    doc = json.loads(out.read_text())
    typed = TrafficProfile.from_dict(doc)  # the new sections are typed for the readers downstream
    assert typed.metrics.counter_resets == 4 and typed.metrics.step_s == 15.0
    assert {r.mix for r in typed.metrics.mix_peaks.rows} == {"llama-8b", "llama-70b"}
    jsonschema.Draft202012Validator(profile_schema_document()).validate(doc)
    target = float(np.quantile(doc["per_minute"]["series"]["requests"], 0.99)) / 60
    assert doc["source"]["kind"] == "metrics" and doc["targets"]["target"]["rps"] == pytest.approx(target)
    plan = tmp_path / "plan.json"
    r = CliRunner().invoke(app, ["plan", "--limits", str(tmp_path / "limits.json"), "--profile", str(out),
                                 "--json", str(plan)])
    assert r.exit_code == 0, r.output
    assert json.loads(plan.read_text())["fos"]["blended"]["value"] == pytest.approx(12.0 / target)
