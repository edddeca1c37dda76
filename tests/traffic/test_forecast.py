"""``targets.mid_term.trend`` in the profile JSON is read once, into its one type (traffic/forecast.py).

Truth: daily peaks on an exact line (100 + 2 x day req/s, no noise), so the OLS slope is 2 and the forecast
182.5 days after the last day is 100 + 2 x (last + 182.5), by hand; the document is the JSON text itself
(``json.dumps``), not an object handed through."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.plan.inputs import profile_input_from_dict
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.forecast import TrendForecast
from bearing_lib.traffic.targets import trend_forecast


def _profile_json() -> tuple[dict, float]:
    days = np.arange(40, dtype=float)
    fc = trend_forecast(days, 100.0 + 2.0 * days)
    truth = 100.0 + 2.0 * (39.0 + 182.5)
    mid = {"available": True, "rps": 1.5 * fc.value, "factor": 1.5, "statement": fc.statement, "trend": fc.to_dict()}
    return json.loads(json.dumps({"targets": {"target": {"rps": 3.0}, "mid_term": mid}})), truth


def test_the_profile_documents_trend_is_a_trend_forecast():
    raw, truth = _profile_json()
    doc = TrafficProfile.from_dict(raw)
    trend = doc.targets.mid_term.trend
    assert isinstance(trend, TrendForecast)
    assert trend.significant and trend.slope_rps_per_day == pytest.approx(2.0)
    assert trend.value == pytest.approx(truth) and trend.slope_ci95 == pytest.approx((2.0, 2.0))
    assert trend.at(10.0) == pytest.approx(120.0)
    # the JSON form is unchanged by the round trip (the edge writes what it read)
    assert trend.to_dict() == raw["targets"]["mid_term"]["trend"]
    # the plan takes that object as its forecast
    assert profile_input_from_dict(raw).forecast == trend


def test_a_bad_trend_is_named_with_its_path_when_the_profile_is_read():
    raw, _ = _profile_json()
    raw["targets"]["mid_term"]["trend"]["value"] = "high"
    raw["targets"]["mid_term"]["trend"]["slope_per_day"] = 2.0  # a renamed key
    with pytest.raises(SchemaError) as exc:
        TrafficProfile.from_dict(raw, source="profile JSON p.json")
    fields = sorted(p.field for p in exc.value.problems)
    assert fields == ["targets.mid_term.trend.slope_per_day", "targets.mid_term.trend.value"]
    assert str(exc.value).startswith("profile JSON p.json: 2 problem(s)")
