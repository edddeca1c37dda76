"""Validate a twin on the test it came from, before any prediction is quoted.

1. **Replay**: the test's own arrivals and request lengths go through the twin (per run, a
   fresh server, as in the test); per step, the twin's throughput, TTFT and latency
   percentiles and SLA verdict are set beside the measured ones.
2. **Leave the highest steps out**: the twin is recalibrated without each of the
   ``n_holdout`` highest-load steps of every run in turn and predicts that step.

Trust rules (all must hold; each broken one is a reason in :class:`Validation`):

* replay: throughput within ±10 % in every step;
* replay: P50 latency within ±20 % in every step the measurement passes;
* replay: the SLA verdict agrees in all steps but at most one;
* held out: the SLA verdict of every held-out step agrees, or its P99 of the SLA's first
  percentile metric is within ±25 %.

The steps' figures use all the step's requests (no warm-up trim), the same way on both
sides; the SLA verdict is bearing's (:meth:`bearing_lib.limits.sla.SLA.margin`). A request whose
outcome is neither success nor failure (status ``cancelled``: e.g. GuideLLM cancels the requests
in flight at a step's end; ``unknown``: e.g. LMBenchmark stopped waiting for it) is replayed (it
was sent: it loaded the server) and counts in the throughput over the send window (it is known not
to have completed inside it), but is left out of both sides' percentiles and SLA verdicts: counting it
as an error made the twin of a healthy GuideLLM-tested server "untrusted" (one cancelled request
per step against an ``error_rate`` clause), and the twin cannot be right or wrong about an
outcome nobody saw (docs/canonical-trace.md, "Status values").
"""

from __future__ import annotations

import numpy as np
import polars as pl

from bearing_lib.twin.calibrate import calibrate, server_params
from bearing_lib.twin.replay import assign_replicas, prepare_rows, replay, step_figures
from bearing_lib.twin.result import StepCheck, Twin, Validation

THROUGHPUT_TOL = 0.10
LATENCY_TOL = 0.20
HELDOUT_TOL = 0.25
EPS = 1e-9  # the tolerances are inclusive: 36 completions against 40 is −10 %, within ±10 %, whatever the rounding
RULES = ("replay throughput within ±10% per step; replay P50 latency within ±20% in passing steps; "
         "SLA verdict agrees in all steps but one; each held-out step's verdict agrees or its P99 within ±25%")


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not np.isfinite(a) or not np.isfinite(b) or b == 0:
        return None
    return a / b - 1.0


def _key_metric(sla) -> str:
    for c in sla.percentile_clauses():
        return {"ttft_ms": "ttft_p99_ms", "latency_ms": "latency_p99_ms"}.get(c.metric, "latency_p99_ms")
    return "latency_p99_ms"


def _highest(rows: list[StepCheck], n: int) -> list[StepCheck]:
    """The ``n`` highest-load steps of every run (a run of three steps or fewer keeps all its steps)."""
    out: list[StepCheck] = []
    if n <= 0:
        return out
    for run in dict.fromkeys(r.run_id for r in rows):
        rs = sorted((r for r in rows if r.run_id == run),
                    key=lambda r: (r.offered_load is None, r.offered_load or 0.0, r.step))
        if len(rs) > 3:
            out += rs[-n:]
    return out


def validate(twin: Twin, trace, sla, *, n_holdout: int = 2) -> Validation:
    """Replay and leave-highest-steps-out checks of ``twin`` on ``trace`` (the test it came from)."""
    from bearing_lib.limits.sla import SLA, parse_sla

    sla_obj = sla if isinstance(sla, SLA) else parse_sla(sla)
    frame = assign_replicas(prepare_rows(trace.frame if hasattr(trace, "frame") else trace), twin.replicas)
    sim = replay(server_params(twin.values()), frame)
    loads = (frame.group_by("run_id", "step").agg(pl.col("offered_load").first()).sort("run_id", "step"))
    rows: list[StepCheck] = []
    for run, s, load in loads.iter_rows():
        sel = (pl.col("run_id") == run) & (pl.col("step") == s)
        mf, mp = step_figures(frame.filter(sel), sla_obj)
        pf, pp = step_figures(sim.filter(sel), sla_obj)
        rows.append(StepCheck(int(s), load, False, mf, pf, mp, pp, run_id=str(run)))
    reasons = []
    for r in rows:
        e = _rel(r.predicted["throughput_rps"], r.measured["throughput_rps"])
        if e is not None and abs(e) > THROUGHPUT_TOL + EPS:
            reasons.append(f"step {r.step}: replayed throughput {e:+.0%} off the measured")
        e = _rel(r.predicted["latency_p50_ms"], r.measured["latency_p50_ms"])
        if r.sla_pass_measured and e is not None and abs(e) > LATENCY_TOL + EPS:
            reasons.append(f"step {r.step}: replayed P50 latency {e:+.0%} off the measured")
    disagree = [r.step for r in rows if r.sla_pass_measured is not None and r.sla_pass_measured != r.sla_pass_predicted]
    if len(disagree) > 1:
        reasons.append(f"replayed SLA verdict differs in steps {disagree}")
    # leave each of the highest steps out in turn
    key = _key_metric(sla_obj)
    for r in _highest(rows, n_holdout):
        try:
            held = calibrate(frame, n_boot=0, exclude_steps=[(r.run_id, r.step)], known=twin.given or None,
                             replicas=twin.replicas)
        except Exception as exc:  # noqa: BLE001  # reported, not raised: the check itself failed
            reasons.append(f"step {r.step} held out: recalibration failed ({exc})")
            continue
        sim_h = replay(server_params(held.values()), frame)
        pf, pp = step_figures(sim_h.filter((pl.col("run_id") == r.run_id) & (pl.col("step") == r.step)), sla_obj)
        chk = StepCheck(r.step, r.offered_load, True, r.measured, pf, r.sla_pass_measured, pp, run_id=r.run_id)
        rows.append(chk)
        e = _rel(pf.get(key), r.measured.get(key))
        if chk.sla_pass_measured != chk.sla_pass_predicted and not (e is not None and abs(e) <= HELDOUT_TOL + EPS):
            reasons.append(f"step {r.step} held out: predicted verdict differs and {key} is "
                           f"{'unknown' if e is None else f'{e:+.0%}'} off")
    return Validation(sla=sla_obj.text, rows=rows, trusted=not reasons, reasons=reasons, rules=RULES)


__all__ = ["RULES", "replay", "validate"]
