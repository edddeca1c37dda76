"""The profile document is complete: ``TrafficProfile.from_dict(j).to_dict()`` gives ``j`` back.

``j`` is the profile JSON bearing writes for the real shared traces (Azure code and conversation, Mooncake
conversation and synthetic, the three ServeGen aggregates, a mix spec, a wall-clock trace over two weeks so
that the slot tables are filled) and for the bundled Prometheus counters (``metrics``), read back by
``json`` alone. Equality is checked on the JSON text: every
key, in the writer's order, every number with its JSON type (``201``, not ``201.0``), the nulls where the
writer wrote null and no key where it wrote none.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from bearing_lib import load, load_trace
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.profile import profile_traffic
from tests.factories import request_trace

AZURE_CODE = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"
AZURE_CONV = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
MOONCAKE = ("traces/mooncake-fast25/conversation_trace.jsonl", "traces/mooncake-fast25/synthetic_trace.jsonl")
SERVEGEN = ("traces/servegen-aggregates/language/m-large", "traces/servegen-aggregates/multimodal/mm-image",
            "traces/servegen-aggregates/reason/deepseek-r1")
DAY_S = 86_400.0


def _json_of(prof) -> dict:
    """The profile JSON as a file holds it: written and read back by ``json`` alone."""
    return json.loads(json.dumps(prof.to_dict(), allow_nan=False))


def _round_trip(j: dict) -> None:
    back = TrafficProfile.from_dict(j).to_dict()
    assert json.dumps(back) == json.dumps(j)


@pytest.mark.shared_data
@pytest.mark.parametrize("path", [AZURE_CODE, AZURE_CONV, *MOONCAKE])
def test_request_traces_round_trip(shared_data, path):
    j = _json_of(profile_traffic(load_trace(shared_data(path)), n_boot=200))
    _round_trip(j)
    # the keys the report and plan read are the writer's, not defaults
    assert set(j) >= {"resolution", "per_minute", "bursts", "dispersion", "targets", "seq_len"}


@pytest.mark.shared_data
@pytest.mark.parametrize("path", SERVEGEN)
def test_rate_windows_round_trip(shared_data, path):
    j = _json_of(profile_traffic(load(shared_data(path)), n_boot=200))
    _round_trip(j)
    assert "per_window" in j


@pytest.mark.shared_data
def test_servegen_decomposition_series_and_cycles_are_kept(shared_data):
    j = _json_of(profile_traffic(load(shared_data(SERVEGEN[0])), n_boot=200))
    doc = TrafficProfile.from_dict(j)
    dec = j["decomposition"]
    assert doc.decomposition is not None and doc.decomposition.series == dec["series"]
    assert doc.decomposition.input == dec["input"]
    assert [c.average_cycle_rps for c in doc.decomposition.components] == [
        c["average_cycle_rps"] for c in dec["components"]]
    assert [len(c["average_cycle_rps"]) for c in dec["components"]] == [24, 168]
    # hour starts every 3600 s, 14 days of them (read from the JSON, not from bearing)
    starts = dec["series"]["hour_start_s"]
    assert len(starts) == 336 and all(b - a == 3600.0 for a, b in zip(starts, starts[1:], strict=False))


@pytest.mark.shared_data
def test_mix_spec_round_trip(shared_data):
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, math.inf)})))
    j = _json_of(profile_traffic(load_trace(shared_data(AZURE_CONV)), mix_spec=spec, n_boot=200))
    assert j["mix_spec"] and j["mix_peaks"]["available"]
    _round_trip(j)


@pytest.mark.shared_data
def test_wall_clock_slots_round_trip(shared_data):
    """The Azure conversation hour repeated on 15 consecutive days: the slot tables are filled."""
    tr = load_trace(shared_data(AZURE_CONV))
    df = tr.frame  # start_s: UTC epoch seconds
    days = pl.concat([df.with_columns(pl.col("start_s") + d * DAY_S) for d in range(15)])
    j = _json_of(profile_traffic(request_trace(days, source="azure conv x15"), n_boot=200))
    assert j["slots"]["available"] and j["slots"]["hour_weekday"]["available"]
    _round_trip(j)
    doc = TrafficProfile.from_dict(j)
    rows = j["slots"]["hour_of_day"]["rows"]
    assert doc.slots is not None and doc.slots.hour_of_day is not None
    assert [(r.hour, r.p95_rps, r.baseline_rps) for r in doc.slots.hour_of_day.rows] == [
        (r["hour"], r["p95_rps"], r["baseline_rps"]) for r in rows]


@pytest.mark.parametrize("step", [15, 45])
def test_metrics_profile_round_trip(step):
    """A profile from Prometheus counters (the bundled range-query fixture): ``metrics`` and, at 45 s, windows."""
    from pathlib import Path

    from bearing_lib.traffic.metrics_profile import profile_metrics

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus" / f"vllm-counters-step{step}.json"
    j = _json_of(profile_metrics(load(fix), n_boot=0))
    assert j["metrics"]["token_metrics"] and j["metrics"]["rules"]
    _round_trip(j)


@pytest.mark.shared_data
def test_the_builder_result_is_the_document(shared_data):
    """One type: ``profile_traffic`` returns the ``TrafficProfile`` its JSON reads back into, equal field for field,
    with the same summary; the JSON's numbers are the per-minute counts of the raw CSV (counted here)."""
    import csv
    from datetime import datetime

    from bearing_lib.common.estimate import Estimate
    from bearing_lib.traffic.document import PassiveLimit

    path = shared_data(AZURE_CONV)
    prof = profile_traffic(load_trace(path), n_boot=50)
    assert type(prof) is TrafficProfile
    j = _json_of(prof)
    back = TrafficProfile.from_dict(j)
    assert back == prof and back.summary_lines() == prof.summary_lines()
    # the series is the raw file's complete UTC minutes, empty ones 0 (first and last, partial, left out)
    with open(path) as fh:
        t = [datetime.fromisoformat(r["TIMESTAMP"][:26] + "+00:00").timestamp() for r in csv.DictReader(fh)]
    first, last = math.floor(min(t) / 60) + 1, math.floor(max(t) / 60)
    counts = [0] * (last - first)
    for x in t:
        if first <= math.floor(x / 60) < last:
            counts[math.floor(x / 60) - first] += 1
    assert j["per_minute"]["series"]["requests"] == counts == prof.per_minute.series.requests
    assert prof.per_minute.series.minute_start_s == [60.0 * m for m in range(first, last)]
    assert prof.minute_counts()[0] == (60.0 * first, counts[0], 60.0)
    # a section set after building (bearing profile --passive-sla) is written after the others, in its own order
    prof.passive_limit = PassiveLimit(Estimate(7.25, (6.5, 8.75), unit="rps", basis="offered"),
                                      "p99(latency) <= 20s", 300.0, 17, 3.5, 0.0021, -0.00028, True)
    d = prof.to_dict()
    assert list(d)[:-1] == list(j) and list(d)[-1] == "passive_limit"
    assert list(d["passive_limit"])[:3] == ["kind", "q_ult", "clause"] and d["passive_limit"]["q_ult"]["kind"] == \
        "passive"
    assert TrafficProfile.from_dict(json.loads(json.dumps(d))).passive_limit == prof.passive_limit
    assert "passive:     passive (from production latency vs load) limit under p99(latency) <= 20s" in \
        "\n".join(prof.summary_lines())


def test_mid_term_forecast_keeps_every_key_it_writes():
    """SYNTHETIC: 35 days of 600 s windows rising 0.072 req/s a day: the mid-term forecast is made, and the profile
    keeps all of it (method, test, horizon, the slope and forecast with their intervals), not only rps and trend."""
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.ratewindows import RATE_SCHEMA, RateWindows

    w, n = 600.0, 35 * 144
    starts = 1_700_006_400.0 + w * np.arange(n)  # a UTC midnight: 35 complete days
    rate = 10 + 0.5 * np.sin(np.arange(n) * 2 * np.pi / 144) + np.arange(n) * 0.0005
    frame = pl.DataFrame({"client": ["a"] * n, "window_start_s": starts, "window_s": [w] * n, "rate_rps": rate,
                          "cv": [None] * n, "pattern": [None] * n, "shape": [None] * n, "scale": [None] * n},
                         schema=RATE_SCHEMA)
    prov = Provenance(source="synthetic", format="synthetic", tool="test", sha256="", time_origin="epoch")
    j = _json_of(profile_traffic(RateWindows(frame, prov), n_boot=20))
    mid = j["targets"]["mid_term"]
    assert mid["available"] is True and mid["n_days"] == 35 and mid["horizon_days"] == 182.5
    assert mid["trend_significant"] is True and mid["method"].startswith("OLS")
    assert mid["slope_rps_per_day"] == pytest.approx(0.0005 * 144, rel=1e-3)
    assert mid["forecast_rps"] == mid["trend"]["value"] and mid["rps"] == pytest.approx(1.5 * mid["forecast_rps"])
    assert mid["forecast_pi95"] == [mid["trend"]["lower"], mid["trend"]["upper"]]
    _round_trip(j)
