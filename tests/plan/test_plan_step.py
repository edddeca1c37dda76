"""The plan's view of a judged step (:class:`PlanStep`): which value wins when the step, its observed clauses and
the load curve each give one. The expected values are the literals put in, by hand."""

from __future__ import annotations

from bearing_lib.limits.result import Step
from bearing_lib.limits.sla import Clause
from bearing_lib.plan.plan_step import PlanStep

P95 = Clause(text="p95(ttft) <= 1s", kind="percentile", metric="ttft_ms", stat="p95", op="<=", threshold=1000.0,
             unit="ms")
P99 = Clause(text="p99(latency) <= 9s", kind="percentile", metric="latency_ms", stat="p99", op="<=",
             threshold=9000.0, unit="ms")
ERR = Clause(text="error_rate <= 1%", kind="error_rate", stat="error_rate", op="<=", threshold=0.01,
             unit="fraction")


def _step() -> Step:
    return Step(step=3, offered_load=2.0, load_axis=1.8, throughput_rps=1.9, error_rate=0.004, concurrency_mean=None,
                recovery_step=True, stats={"ttft_ms_p95": 640.0},
                observed={"p95(ttft) <= 1s": 700.0, "p99(latency) <= 9s": 8200.0, "error_rate <= 1%": 0.004})


def test_the_step_s_own_statistics_win_over_its_observed_clauses():
    s = PlanStep.from_step(_step(), [P95, P99, ERR], "rps")
    assert (s.step, s.offered_load, s.load_axis, s.offered_load_unit) == (3, 2.0, 1.8, "rps")
    assert (s.throughput_rps, s.error_rate, s.recovery_step) == (1.9, 0.004, True)
    # ttft P95 from the load curve's statistics (640), not the clause's observed 700; latency P99 only observed;
    # the error-rate clause is not a percentile and gives no statistic
    assert s.stats == {"ttft_ms_p95": 640.0, "latency_ms_p99": 8200.0}
    assert s.stat("latency_ms_mean") is None
    assert s.observed["error_rate <= 1%"] == 0.004


def test_the_load_curve_fills_only_what_the_step_lacks():
    s = PlanStep.from_step(_step(), [P95], None)
    s.add_curve_columns({"step": 3, "mix": "a", "ttft_ms_p95": 999.0, "latency_ms_mean": 1500, "concurrency_mean": 7.0,
                         "n_requests": 120, "latency_ms_p50": None, "offered_load_unit": "rps"})
    # a judged step's field wins even when empty (concurrency_mean None stays None: it is not the curve's to fill);
    # a text column is no statistic; a None is no value
    assert s.concurrency_mean is None and s.offered_load_unit == "rps"
    assert s.stats == {"ttft_ms_p95": 640.0, "latency_ms_mean": 1500.0}
