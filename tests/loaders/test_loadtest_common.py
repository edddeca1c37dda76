"""Shared load-test helpers (bearing_lib/loaders/_loadtest.py): rates, step numbering, CSV sections."""

from __future__ import annotations

import math

import pytest

from bearing_lib.common.errors import BadValueError, UnsupportedVersionError
from bearing_lib.data.provenance import Provenance
from bearing_lib.loaders import load
from bearing_lib.loaders._loadtest import StepFacts, number_steps, parse_rate


@pytest.mark.parametrize("value,want", [(2, 2.0), (0.5, 0.5), ("inf", math.inf), ("Infinity", math.inf),
                                        (math.inf, math.inf), ("4", 4.0), (None, None)])
def test_parse_rate(value, want):
    assert parse_rate(value, path="f", field="request_rate") == want


@pytest.mark.parametrize("value", ["fast", -1.0, True, math.nan])
def test_parse_rate_rejects(value):
    with pytest.raises(BadValueError, match="request_rate"):
        parse_rate(value, path="f", field="request_rate")


def test_number_steps_orders_by_load_inf_last_one_unit_per_run():
    prov = Provenance(source="x", format="f", tool="t", sha256="")
    steps = [
        StepFacts("a", math.inf, "rps", rank=1, tiebreak=(0,)),
        StepFacts("a", 8.0, "rps", rank=1, tiebreak=(1,)),
        StepFacts("a", 1.0, "concurrency", rank=0, tiebreak=(2,)),
        StepFacts("a", 2.0, "rps", rank=1, tiebreak=(4,)),
        StepFacts("a", 2.0, "rps", rank=1, tiebreak=(3,)),
        StepFacts("b", None, None, tiebreak=(0,)),
        StepFacts("b", 4.0, "rps", tiebreak=(1,)),
    ]
    out = number_steps(steps, prov)
    a = [(s.offered_load, s.tiebreak, s.step) for s in out if s.run_id == "a"]
    # one unit per run: the 4 rps steps keep run "a" (ascending, repeats by tiebreak, inf last); the
    # one concurrency step is its own run "a/concurrency"
    assert a == [(2.0, (3,), 0), (2.0, (4,), 1), (8.0, (1,), 2), (math.inf, (0,), 3)]
    assert [(s.offered_load, s.step) for s in out if s.run_id == "a/concurrency"] == [(1.0, 0)]
    moved = next(f for f in prov.findings if f.code == "mixed_offered_load_units")
    assert "its rps steps stay in 'a' and the others form their own run(s) 'a/concurrency'" in moved.message
    b = [(s.offered_load, s.step) for s in out if s.run_id == "b"]
    assert b == [(4.0, 0), (None, 1)]
    codes = {f.code for f in prov.findings}
    assert {"repeated_load_level", "mixed_offered_load_units", "offered_load_unknown", "unbounded_rate"} <= codes


def test_aiperf_sweep_csv_sections_and_unknown_layout(tmp_path):
    # SYNTHETIC: the AIPerf sweep layout with two levels, CRLF and trailing sections
    head = "concurrency,request_count_mean,request_throughput_mean,request_latency_mean,request_latency_max," \
           "time_to_first_token_mean,benchmark_duration_mean,goodput_mean"
    body = ["4,100,2.0,500.0,900.0,50.0,50.0,1.9", "1,40,0.8,400.0,700.0,40.0,50.0,0.8"]
    tail = ["", "Metadata", "Field,Value", "Sweep Parameters,concurrency", ""]
    p = tmp_path / "profile_export_aiperf_sweep.csv"
    p.write_bytes("\r\n".join([head, *body, *tail]).encode())
    f = load(p).frame
    assert f["offered_load"].to_list() == [1.0, 4.0] and f["latency_ms_max"].to_list() == [700.0, 900.0]
    p.write_bytes("\r\n".join([head.replace("request_latency_mean,", ""), "4,100,2.0,900.0,50.0,50.0,1.9"]).encode())
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.missing == ["request_latency_mean"]
    p.write_bytes("\r\n".join([head, *body, "", "Metadata", "Field,Value", "Sweep Parameters,request_rate"]).encode())
    with pytest.raises(BadValueError, match="Sweep Parameters"):
        load(p)
