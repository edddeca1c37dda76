"""Semantic checks against the data, called once at the start of ``fit_limits``.

Frames are hand-made; which clause, file and steps each error must name is read off them.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.data.loadpoints import LoadPointTable, conform_loadpoints
from bearing_lib.data.mixes import Mix, MixSpec, check_spec_matches
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform
from bearing_lib.limits.blended import load_weights
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.sla import check_sla_against, parse_sla


def _trace(source="t.csv", **cols) -> RequestTrace:
    return RequestTrace(conform(pl.DataFrame(cols)), Provenance(source=source, format="x", tool="x", sha256=""))


STEPS = {"start_s": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "run_id": ["r"] * 6, "step": [0, 0, 1, 1, 2, 2],
         "input_tokens": [10, 20, 30, 40, 50, 60], "output_tokens": [5] * 6}


def test_metric_present_on_every_step_passes():
    check_sla_against(parse_sla("p99(ttft) <= 1s"), [_trace(**STEPS, ttft_ms=[1.0, None, 2.0, None, 3.0, None])])


def test_metric_missing_on_one_step_names_it():
    tr = _trace(**STEPS, ttft_ms=[1.0, 1.0, None, None, 3.0, 3.0])
    with pytest.raises(SchemaError) as exc:
        check_sla_against(parse_sla("p99(ttft) <= 1s"), [tr])
    assert "t.csv has ttft_ms for only 2 of 3 steps; run_id/step r/1 have none" in str(exc.value)


def test_a_step_where_every_request_failed_does_not_count_against_the_metric():
    tr = _trace(**STEPS, ttft_ms=[1.0, 1.0, None, None, 3.0, 3.0], status=["ok", "ok", "error", "timeout", "ok", "ok"])
    check_sla_against(parse_sla("p99(ttft) <= 1s"), [tr])
    # but a step whose successful requests all lack it does
    tr2 = _trace(**STEPS, ttft_ms=[1.0, 1.0, None, None, 3.0, 3.0], status=["ok", "ok", "error", "ok", "ok", "ok"])
    with pytest.raises(SchemaError, match="only 2 of 3 steps"):
        check_sla_against(parse_sla("p99(ttft) <= 1s"), [tr2])


def test_every_clause_and_file_in_one_error():
    a = _trace("a.csv", **STEPS, latency_ms=[1.0] * 6)
    b = _trace("b.csv", **STEPS, ttft_ms=[1.0] * 6)
    sla = parse_sla("p99(ttft) <= 1s and goodput(latency<=2s, tpot<=50ms) >= 90% and error_rate <= 1%")
    with pytest.raises(SchemaError) as exc:
        check_sla_against(sla, [a, b])
    lines = [p.message for p in exc.value.problems]
    assert len(lines) == 4  # a: ttft, tpot; b: latency, tpot (error_rate reads status: never refused)
    assert lines[0].startswith("SLA clause 'p99(ttft) <= 1s': a.csv has no ttft_ms value")
    assert any(m.startswith("SLA clause 'goodput(latency<=2s, tpot<=50ms) >= 90%': b.csv has no latency_ms")
               for m in lines)
    assert str(exc.value).startswith("4 problems:")


def test_load_point_tables_count_any_statistic():
    rows = [{"run_id": "t", "step": k, "offered_load": float(k + 1), "ttft_ms_max": 10.0 if k < 2 else None}
            for k in range(3)]
    t = LoadPointTable(conform_loadpoints(rows), Provenance(source="s.json", format="x", tool="x", sha256=""))
    with pytest.raises(SchemaError, match=r"s.json has .* for only 2 of 3 steps; run_id/step t/2 have none"):
        check_sla_against(parse_sla("p99(ttft) <= 1s"), [t])
    check_sla_against(parse_sla("error_rate <= 1%"), [t])


def test_mix_spec_matching_nothing_and_one_empty_mix():
    tr = _trace(**STEPS, latency_ms=[1.0] * 6)
    small = MixSpec((Mix("small", {"input_tokens": (0, 35)}), Mix("huge", {"input_tokens": (1e6, math.inf)})))
    assert check_spec_matches(small, [tr]) == ["huge"]  # one mix holds none: flagged, not refused
    nothing = MixSpec((Mix("huge", {"input_tokens": (1e6, math.inf)}),))
    with pytest.raises(ParameterError) as exc:
        check_spec_matches(nothing, [tr])
    assert "matches none of the 6 requests" in str(exc.value) and "input_tokens 10–60" in str(exc.value)
    with pytest.raises(ParameterError, match="matches none"):  # and fit_limits refuses it before fitting
        fit_limits(tr, "p99(latency) <= 1s", mixes=nothing, n_boot=0)


@pytest.mark.parametrize("weights, ok", [
    ({"a": 0.5, "b": 0.5}, True),
    ({"a": 0.7, "b": 0.295}, True),  # within 0.01
    ({"a": 0.7, "b": 0.2}, False),
    ({"a": 0.6}, False),
    ({"a": 3, "b": 1}, True),  # relative weights (counts): normalised
    ({"a": 1.0}, True),
])
def test_weights_sum_rule(weights, ok):
    if ok:
        assert load_weights(weights) == {k: float(v) for k, v in weights.items()}
    else:
        with pytest.raises(ParameterError, match=r"shares must sum to 1 \(within 0.01\), found"):
            load_weights(weights)
