"""The twin's validation leaves requests with no outcome (cancelled / unknown) out of both sides' figures.

GuideLLM cancels the requests still in flight when a step's duration ends (docs/formats-loadtests-llm.md):
one or a few per step on a healthy server. Counted as errors, they failed every step of an
``error_rate <= 0%`` SLA on the measured side only, so the twin's replay "disagreed" everywhere and a
healthy server's twin came out untrusted.
"""

from __future__ import annotations

import polars as pl
import pytest

from bearing_lib.data.trace import RequestTrace
from bearing_lib.twin import calibrate
from bearing_lib.twin.replay import prepare_rows, step_figures
from bearing_lib.twin.validate import validate
from tests.twin.conftest import oracle_trace

SLA = "p99(ttft) <= 2s and error_rate <= 0%"


def _last_of_each_step_as(trace: RequestTrace, status: str) -> RequestTrace:
    """The request started last in each step, cut as a tool cuts it at the step's end: no end, TTFT, output."""
    f = trace.frame.with_row_index("_i")
    last = set(f.group_by("run_id", "step").agg(pl.col("_i").sort_by("start_s").last())["_i"].to_list())
    cut = pl.col("_i").is_in(list(last))
    g = f.with_columns(
        pl.when(cut).then(pl.lit(status)).otherwise(pl.col("status")).alias("status"),
        *[pl.when(cut).then(None).otherwise(pl.col(c)).alias(c)
          for c in ("end_s", "ttft_ms", "latency_ms", "tpot_ms", "itl_ms", "output_tokens")],
    ).drop("_i")
    return RequestTrace(frame=g, provenance=trace.provenance)


def test_cancelled_and_unknown_requests_do_not_fail_a_healthy_step():
    tr = oracle_trace("small", "chat")
    for status in ("cancelled", "unknown"):
        cut = _last_of_each_step_as(tr, status)
        frame = prepare_rows(cut.frame)
        for (_run, _step), step in frame.group_by("run_id", "step"):
            assert (step["status"] == status).sum() == 1
            base = step.filter(pl.col("status") != status)
            # the percentiles and verdict of the step equal those of the same step without the no-outcome
            # request; the throughput counts ok completions inside the step's own send window (it was sent)
            figs, verdict = step_figures(step, _sla())
            ref, ref_verdict = step_figures(base.with_columns(pl.lit(True).alias("_scored")), _sla())
            t0, t1 = step["start_s"].min(), step["start_s"].max()
            done = base.filter((pl.col("status") == "ok") & pl.col("end_s").is_between(t0, t1)).height
            assert figs["ttft_p99_ms"] == ref["ttft_p99_ms"]
            assert figs["throughput_rps"] == pytest.approx(done / (t1 - t0), rel=1e-12)
            assert verdict == ref_verdict


def test_validation_of_a_healthy_server_is_not_spoiled_by_one_cancelled_request_per_step():
    tr = oracle_trace("small", "chat")
    tw = calibrate(tr, n_boot=0)
    base = validate(tw, tr, SLA, n_holdout=0)
    cut = validate(tw, _last_of_each_step_as(tr, "cancelled"), SLA, n_holdout=0)
    measured = [r.sla_pass_measured for r in base.rows]
    assert any(measured)  # the low steps pass error_rate <= 0%: they have no failure
    # with one cancelled request per step the measured verdicts are the same: a cancel is not an error
    assert [r.sla_pass_measured for r in cut.rows] == measured
    assert cut.trusted == base.trusted


def _sla():
    from bearing_lib.limits.sla import parse_sla

    return parse_sla(SLA)
