"""``CurveRow.of`` keeps every value of a load-curve row the judging reads, exactly (limits.curve_row).

The curves are real: the bundled LMBenchmark sweep (llm-d exp-2) with an SLA that adds a quantile (P99.9), a
goodput clause and pooled per-clause counts, and the shared llmperf load-point table. Each row's values are
read from the polars row by their column names, written out here, and compared with the typed attributes by
identity of value (a null is None, a NaN is NaN, no rounding).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from bearing_lib import load
from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.data.mixes import MixSpec
from bearing_lib.limits.curve_row import ClauseCount, CurveRow, QuantileCI
from bearing_lib.limits.curves import load_curve
from bearing_lib.limits.fit import sla_curve
from bearing_lib.limits.sla import parse_sla

LMB = Path(__file__).resolve().parents[2] / "data" / "loadtests" / "lmbenchmark-llm-d-exp2" / "vllm-70b-2replicas"
LLMPERF = "loadtests/llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED"
FIXED = ("run_id", "mix", "step", "offered_load", "offered_load_unit", "duration_s", "rate_span_s", "n_requests",
         "n_ok", "n_errors", "n_unknown", "error_rate", "error_rate_ci95_lo", "error_rate_ci95_hi", "throughput_rps",
         "output_tokens_per_s", "send_rate_rps", "concurrency_mean", "t_first_s", "t_done_s", "valid", "phase")
METRICS = ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")


def _same(a: object, b: object) -> bool:
    """Equal and of the same kind: None is None, NaN is NaN, a number equals itself exactly."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def _check(row: dict, names: tuple[str, ...], n_clauses: int, goodput: tuple[int, ...]) -> CurveRow:
    cr = CurveRow.of(row)
    for f in FIXED:
        assert _same(getattr(cr, f), row[f]), (f, getattr(cr, f), row[f])
    assert cr.flags == tuple(row["flags"] or ())
    for m in METRICS:
        for q in names:
            got = cr.q(m, q)
            want = (row[f"{m}_{q}"], row[f"{m}_{q}_ci95_lo"], row[f"{m}_{q}_ci95_hi"])
            assert all(_same(g, w) for g, w in zip((got.value, got.lo, got.hi), want, strict=True)), (m, q)
        assert _same(cr.means[m], row[f"{m}_mean"]) and _same(cr.maxima[m], row[f"{m}_max"])
    assert cr.q("ttft_ms", "p42") == QuantileCI(None, None, None)  # not in the curve: all None, as dict.get was
    assert len(cr.clause_counts) == (n_clauses if "_pn_0" in row else 0)
    for i in range(n_clauses):
        want = (row.get(f"_pk_{i}"), row.get(f"_pn_{i}"))
        assert _same(cr.count(i).bad, want[0]) and _same(cr.count(i).n, want[1])
        assert _same(cr.goodput_share(i), row.get(f"_goodput_{i}") if i in goodput else None)
    assert cr.has_counts == (row.get("_pn_0") is not None)
    return cr


def test_every_row_of_a_trace_curve_with_counts_and_goodput():
    sla = parse_sla(["p75(tpot) <= 60ms", "goodput(ttft<=1s, tpot<=100ms) >= 90%", "error_rate <= 1%",
                     "p99.9(ttft) <= 5s"])
    it = load(LMB)
    curve = sla_curve(it, sla, MixSpec.single())
    rows = curve.to_dicts()
    assert len(rows) == curve.height > 10
    typed = [_check(r, ("p50", "p75", "p90", "p95", "p99", "p99_9"), 4, (1,)) for r in rows]
    # not hollow: the SLA-dependent parts hold real numbers
    assert all(t.has_counts and t.count(2).n == t.n_ok + t.n_errors for t in typed if t.count(2).n is not None)
    assert sum(t.q("tpot_ms", "p75").value is not None for t in typed) > 5
    assert all("ttft_ms_p99_9" in r for r in rows)  # a P99.9 over these steps' few requests: a null, kept
    assert sum(t.goodput_share(1) is not None for t in typed) > 5
    assert all(isinstance(t.count(0), ClauseCount) and t.count(0).n is not None for t in typed)


@pytest.mark.skipif(not os.environ.get("BEARING_SHARED_DATA"), reason="needs BEARING_SHARED_DATA")
def test_every_row_of_a_load_point_table_curve():
    it = load(Path(os.environ["BEARING_SHARED_DATA"]) / LLMPERF)
    rows = load_curve(it).to_dicts()
    assert len(rows) == 7
    typed = [_check(r, ("p50", "p90", "p95", "p99"), 0, ()) for r in rows]
    assert not any(t.has_counts for t in typed) and all(t.clause_counts == () for t in typed)
    assert sorted(t.offered_load for t in typed) == [1, 2, 4, 8, 16, 32, 64]
    # a table holds no request to count against the SLA: the trace's curve with the SLA's columns refuses it
    with pytest.raises(ParameterError, match="expected a RequestTrace .* got LoadPointTable"):
        sla_curve(it, "p99(ttft) <= 1s")


def test_nan_and_null_are_kept_and_a_row_without_step_is_refused():
    cr = CurveRow.of({"step": 3, "offered_load": math.inf, "error_rate": math.nan, "n_ok": None, "flags": None,
                      "ttft_ms_p99": math.nan, "ttft_ms_p99_ci95_hi": None, "_pk_1": 4, "_pn_1": 9})
    assert cr.offered_load == math.inf and math.isnan(cr.error_rate) and cr.n_ok is None and cr.flags == ()
    assert math.isnan(cr.q("ttft_ms", "p99").value) and cr.q("ttft_ms", "p99").hi is None
    # clause 1's counts without clause 0's: index 0 reads as unknown, so the row has no pooled counts
    assert cr.count(1) == ClauseCount(4, 9) and cr.count(0) == ClauseCount(None, None) and not cr.has_counts
    with pytest.raises(SchemaError, match="no 'step' column"):
        CurveRow.of({"offered_load": 1.0})
