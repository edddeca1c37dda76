"""The typed block-bootstrap replicates (``limits.replicates``) and per-step totals (``limits.steptotals``).

The tables are read where a step is missing (None, said as such), the bad share is the pooled margin turned back
by hand, and the replicates of a hand-built trace whose every request is known (constant TTFT, steps with no
error or every request failed, a mix absent from a step) hold the values worked out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import ParameterError
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.limits import stepstats as ss
from bearing_lib.limits.curves import saturation_cap, step_windows
from bearing_lib.limits.replicates import ReplicateTable, StepReplicates, TraceReplicates
from bearing_lib.limits.sla import parse_sla
from bearing_lib.limits.steptotals import StepTotal, StepTotals
from tests.limits.synth import make_trace

SPEC = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, float("inf"))})))
SLA = parse_sla(["p99(ttft) <= 50ms", "error_rate <= 1%"])


def test_a_table_reads_its_steps_and_says_none_for_a_step_it_does_not_hold():
    step = StepReplicates(margins=(np.array([0.5, -0.25]), np.array([1.0, 0.0])),
                          pooled=(np.array([0.9, 0.1]), np.array([-1.0, 1.0])))
    table = ReplicateTable({3: step})
    assert table.margin(3, 0).tolist() == [0.5, -0.25] and table.pooled(3, 1).tolist() == [-1.0, 1.0]
    # the bad share behind a pooled margin m = 1 - share / allowed: share = (1 - m) * allowed
    assert table.share(3, 0, 0.01) == pytest.approx([0.001, 0.009], abs=1e-15)
    assert table.share(3, 1, 0.05) == pytest.approx([0.1, 0.0], abs=1e-15)
    # a step the bootstrap did not reach: None from every accessor, not an empty default
    assert table.margin(4, 0) is None and table.pooled(4, 0) is None and table.share(4, 0, 0.01) is None
    with pytest.raises(ParameterError, match="2 clause margin"):
        StepReplicates(margins=(np.zeros(2), np.zeros(2)), pooled=(np.zeros(2),))


def test_the_groups_are_keyed_by_run_and_mix_as_strings():
    a, b = StepReplicates((np.zeros(1),), (np.ones(1),)), StepReplicates((np.ones(1),), (np.zeros(1),))
    reps = TraceReplicates.collect([(7, "chat", 0, a), (7, "chat", 1, b), ("7", "rag", 1, a)])
    assert sorted(reps.groups) == [("7", "chat"), ("7", "rag")] and not reps.empty
    assert reps.table(7, "chat").margin(1, 0).tolist() == [1.0]
    assert reps.table("7", "chat").margin(0, 0).tolist() == [0.0]
    assert reps.table(7, "rag").margin(0, 0) is None  # the mix has no step 0
    assert reps.table(8, "chat") is None  # a group the bootstrap did not reach
    assert TraceReplicates.collect([]).empty


def test_tail_design_effects_are_one_per_clause_or_none():
    step = StepReplicates((np.zeros(2), np.zeros(2)), (np.zeros(2), np.zeros(2)), (2.5, None))
    table = ReplicateTable({0: step, 1: StepReplicates((np.zeros(2),), (np.zeros(2),))})
    assert table.tail_deff(0, 0) == 2.5 and table.tail_deff(0, 1) is None
    assert table.tail_deff(1, 0) is None and table.tail_deff(2, 0) is None  # none kept; not resampled
    with pytest.raises(ParameterError, match="1 tail design effect"):
        StepReplicates((np.zeros(2), np.zeros(2)), (np.zeros(2), np.zeros(2)), (2.5,))


def _known_trace() -> pl.DataFrame:
    """Run r: step 0 has 400 short requests, all ok; step 1 has 300 short requests, all failed, and 200 long ones,
    all ok. Every successful request's TTFT is 10 ms."""
    rng = np.random.default_rng(0)
    parts = []
    for step, (n_short, n_long, short_status) in enumerate(((400, 0, "ok"), (300, 200, "error"))):
        n = n_short + n_long
        start = 100.0 * step + np.sort(rng.uniform(0, 60.0, n))
        parts.append(pl.DataFrame({
            "run_id": "r", "step": step, "offered_load": 10.0 * (step + 1), "offered_load_unit": "rps",
            "start_s": start, "end_s": start + 0.05, "latency_ms": 50.0, "ttft_ms": 10.0,
            "input_tokens": np.r_[np.full(n_short, 100), np.full(n_long, 2000)], "output_tokens": 20,
            "cached_tokens": 0, "status": np.r_[np.full(n_short, short_status), np.full(n_long, "ok")]}))
    return pl.concat(parts)


def test_replicates_of_a_trace_whose_every_request_is_known():
    tr = make_trace(_known_trace())
    win = step_windows(tr)
    reps = ss.replicates_from_stats(ss.step_stats(tr.frame.lazy(), win, SPEC, SLA), SLA, 200, 0)
    short, long_ = reps.table("r", "short"), reps.table("r", "long")
    assert sorted(short.steps) == [0, 1] and sorted(long_.steps) == [1]
    for table, step in ((short, 0), (long_, 1)):
        # every resample's P99 TTFT is 10 ms (within the histogram's tolerance): margin 1 - 10/50 each
        p99 = 50.0 * (1.0 - table.margin(step, 0))
        assert p99.shape == (200,) and p99 == pytest.approx(np.full(200, 10.0), rel=ss.TOLERANCE)
        # no request failed: error rate 0 (margin 1), bad share 0 for both clauses (pooled margin 1)
        assert table.margin(step, 1).tolist() == [1.0] * 200
        assert table.pooled(step, 0).tolist() == table.pooled(step, 1).tolist() == [1.0] * 200
        assert table.share(step, 1, 0.01).tolist() == [0.0] * 200
    # step 1 of the short mix: every request failed: error rate 1, margin 1 - 1 / 0.01 = -99 in every resample,
    # bad share 1; no successful request, so no P99 at all (NaN in every resample)
    assert short.margin(1, 1).tolist() == short.pooled(1, 1).tolist() == [-99.0] * 200
    assert short.share(1, 1, 0.01) == pytest.approx(np.ones(200), abs=1e-12)
    assert all(math.isnan(v) for v in short.margin(1, 0))
    # the long mix sent nothing at step 0: not resampled there; a group with no request has no table
    assert long_.margin(0, 0) is None and long_.share(0, 1, 0.01) is None
    assert reps.table("r", "other") is None and reps.table("s", "short") is None


def test_engine_tail_design_effect_sees_clustered_tails():
    # SYNTHETIC: one step of 12,000 requests over 600 s whose slowest 10 % come in runs of 30 consecutive requests
    # (queue episodes): the engine's per-block histograms (limits.stepstats) give a tail design effect of about 30
    # (Kish, as limits.evidence.tail_design_effect in memory: tests/limits/test_evidence_model.py); the same
    # latencies shuffled about 1
    from bearing_lib.limits.sla import parse_sla

    sla = parse_sla("p99(ttft) <= 5s")
    n, m = 12_000, 30
    rng = np.random.default_rng(5)
    ttft = rng.uniform(100.0, 200.0, n)
    for s in rng.choice(np.arange(0, n, m), size=n // 10 // m, replace=False):
        ttft[s:s + m] = rng.uniform(1000.0, 2000.0, m)
    start = np.sort(rng.uniform(0.0, 600.0, n))

    def deff(values: np.ndarray) -> float | None:
        frame = pl.DataFrame({"run_id": "r", "step": 0, "offered_load": 20.0, "offered_load_unit": "rps",
                              "start_s": start, "end_s": start + values / 1000.0 + 1.0, "latency_ms": values + 1000.0,
                              "ttft_ms": values, "input_tokens": 100, "output_tokens": 20, "cached_tokens": 0,
                              "status": "ok"})
        tr = make_trace(frame)
        spec = MixSpec.single()
        reps = ss.replicates_from_stats(ss.step_stats(tr.frame.lazy(), step_windows(tr), spec, sla), sla, 2000, 0)
        (table,) = reps.groups.values()
        return table.tail_deff(0, 0)

    clustered = deff(ttft)
    assert clustered is not None and 0.6 * m <= clustered <= 1.4 * m, clustered
    shuffled = deff(rng.permutation(ttft))
    assert shuffled is not None and 1.0 <= shuffled <= 1.6, shuffled


def test_step_totals_and_the_saturation_cap_they_feed():
    totals = StepTotals.of_frame(pl.DataFrame({"run_id": ["r", "r"], "step": [0, 1],
                                               "throughput_rps": [20.0, 9.0], "output_tokens_per_s": [400.0, None]}))
    assert totals.total(0) == StepTotal(20.0, 400.0) and totals.total(1) == StepTotal(9.0, None)
    assert totals.total(2) is None
    rows = [{"step": s, "flags": flags, "offered_load_unit": "rps", "throughput_rps": thr, "offered_load": x,
             "duration_s": None}
            for s, flags, thr, x in ((0, [], 5.0, 10.0), (1, ["saturated"], 8.0, 20.0), (2, [], 12.0, 30.0))]
    # without totals the mix's own rates: the highest, 12 rps, at step 2
    assert (saturation_cap(rows).rps, saturation_cap(rows).step) == (12.0, 2)
    # with them: steps 0 and 1 read the run's totals (20, 9), step 2 (not in them) its own 12: 20 rps at step 0
    cap = saturation_cap(rows, totals)
    assert (cap.rps, cap.step, cap.offered_load, cap.saturated_steps) == (20.0, 0, 10.0, (1,))
