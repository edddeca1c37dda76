"""The report takes the passive limit from a profile document that carries one (``bearing profile
--passive-sla`` writes ``passive_limit``), rather than computing it again from the production trace.

Truth: a passive limit written by hand into the profile JSON (numbers no fit would give, so that finding
them on the page can only mean they came from the profile), read from the page's text."""

from __future__ import annotations

import html
import json
import re

import pytest

from bearing_lib.app import pipeline
from bearing_lib.common.errors import SchemaError
from bearing_lib.report.render import render_html
from tests.factories import request_trace
from tests.report.conftest import hand_made

PASSIVE = {"kind": "passive", "q_ult": {"value": 7.25, "ci95": [6.5, 8.75], "bracket": None, "bound": "none",
                                        "unit": "rps", "basis": "offered", "kind": "passive"},
           "clause": "p99(latency) <= 20s", "window_s": 300.0, "n_windows": 17, "highest_rate_rps": 3.5,
           "intercept": 0.0021, "slope_per_rps": -0.00028, "extrapolated": True}


def _report(profile: dict, production=None):
    return pipeline.report(limits_doc=hand_made("limits"), profile_doc=json.loads(json.dumps(profile)),
                           plan_doc=hand_made("plan"), previous=None, parameters={}, inputs=[],
                           production=production)


def _text(model) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", render_html(model))).split())


def test_the_profiles_passive_limit_reaches_the_report_text():
    model = _report({**hand_made("profile"), "passive_limit": PASSIVE})
    pas = model.plan.data.passive
    assert (pas.q_ult.value, pas.q_ult.ci95, pas.n_windows, pas.window_s) == (7.25, (6.5, 8.75), 17, 300.0)
    text = _text(model)
    # the unit is said once: "7.25 rps (95% CI 6.50–8.75)", not followed by a second "req/s"
    assert "Passive limit (production latency vs load) 7.25 rps (95% CI 6.50–8.75) under" in text
    assert "7.25" in pas.q_ult.text() and "under p99(latency) <= 20s; 17 windows of" in text
    assert "17 windows of 5.0 min; EXTRAPOLATED beyond the highest observed load 3.50 req/s" in text


def test_the_profiles_value_wins_over_the_trace_and_without_one_the_trace_decides():
    # a production trace with no latency: computed from it, the passive limit would be "not available"
    trace = request_trace({"request_id": [f"r{i}" for i in range(50)], "start_s": [1.7e9 + i for i in range(50)]})
    assert "passive limit not available" in _text(_report(hand_made("profile"), production=trace))
    model = _report({**hand_made("profile"), "passive_limit": PASSIVE}, production=trace)
    assert model.plan.data.passive.q_ult.value == 7.25


def test_a_bad_passive_limit_in_the_profile_is_named():
    bad = {**PASSIVE, "n_windows": "many", "q_ult": {**PASSIVE["q_ult"], "bound": "sideways"}}
    with pytest.raises(SchemaError) as exc:
        _report({**hand_made("profile"), "passive_limit": bad})
    assert str(exc.value).startswith("the production profile's passive_limit: 2 problem(s)")
    assert sorted(p.field for p in exc.value.problems) == ["n_windows", "q_ult.bound"]
