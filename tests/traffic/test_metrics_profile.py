"""The production profile from Prometheus counters (``traffic/metrics_profile.py``).

Two kinds of truth: hand-made range-query JSON whose per-minute counts are known by
construction (a reset, a gap, a step that does not divide a minute), and the fixture a real
Prometheus 2.42 wrote while scraping ``vllm_like_exporter.py`` (tests/fixtures/prometheus/,
README there), checked against the raw JSON read with ``json`` and numpy and against the
exporter's own log of what it counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bearing_lib import load
from bearing_lib.common.errors import InputError, InsufficientDataError
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
