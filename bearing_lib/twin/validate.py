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

import math

import numpy as np
import polars as pl

from bearing_lib.common.quantiles import quantile
from bearing_lib.data.trace import OUTCOME_UNKNOWN
from bearing_lib.twin.calibrate import _groups, assign_replicas, calibrate, server_params
from bearing_lib.twin.result import StepCheck, Twin, Validation
from bearing_lib.twin.simulate import OK, ServerParams, simulate

THROUGHPUT_TOL = 0.10
LATENCY_TOL = 0.20
HELDOUT_TOL = 0.25
EPS = 1e-9  # the tolerances are inclusive: 36 completions against 40 is −10 %, within ±10 %, whatever the rounding
RULES = ("replay throughput within ±10% per step; replay P50 latency within ±20% in passing steps; "
         "SLA verdict agrees in all steps but one; each held-out step's verdict agrees or its P99 within ±25%")


def _prep(frame: pl.DataFrame) -> pl.DataFrame:
    """Every request with a start time, identity columns filled (failed requests without lengths stay:
    the measured error rate counts them)."""
    cols = frame.columns
    return frame.with_columns(
        pl.col("step").fill_null(0) if "step" in cols else pl.lit(0).alias("step"),
        pl.col("offered_load") if "offered_load" in cols else pl.lit(None, pl.Float64).alias("offered_load"),
        pl.col("cached_tokens").fill_null(0) if "cached_tokens" in cols else pl.lit(0).alias("cached_tokens"),
        pl.col("run_id").fill_null("run") if "run_id" in cols else pl.lit("run").alias("run_id"),
        pl.col("status").fill_null("ok") if "status" in cols else pl.lit("ok").alias("status"),
        pl.col("requested_output_tokens") if "requested_output_tokens" in cols
        else pl.lit(None, pl.Int64).alias("requested_output_tokens"),
        pl.col("end_s") if "end_s" in cols else pl.lit(None, pl.Float64).alias("end_s"),
    ).with_columns(
        # False for a request with no outcome to judge (cancelled / unknown): replayed, not scored
        (~pl.col("status").is_in(OUTCOME_UNKNOWN)).alias("_scored"),
    ).filter(pl.col("start_s").is_not_null()).sort("start_s")


def _replayable(g: pl.DataFrame, params: ServerParams) -> pl.Series:
    """Which requests of one run the twin replays, with their lengths filled: every one with both lengths;
    with a request timeout also a *lost* one (failed, no end time: the test dropped it), whose prompt is
    its own or the run's median, and whose output is the one it asked for or, unknown, the shortest that
    an idle server could not finish before the deadline (it did not finish before it)."""
    has = g["input_tokens"].is_not_null() & g["output_tokens"].is_not_null()
    if params.request_timeout_s is None:
        return has
    lost = (g["status"] != "ok") & g["end_s"].is_null()
    return has | lost


def _lengths(g: pl.DataFrame, params: ServerParams) -> tuple[np.ndarray, np.ndarray]:
    inp = g["input_tokens"].to_numpy().astype(float)
    out = g["output_tokens"].to_numpy().astype(float)
    if params.request_timeout_s is not None:
        ok = g["status"] == "ok"
        med = float(np.nanmedian(g.filter(ok)["input_tokens"].to_numpy().astype(float))) if ok.any() else 1.0
        outlive = math.ceil(params.request_timeout_s * 1000.0 / max(params.decode_base_ms, 1e-3)) + 1
        req = g["requested_output_tokens"].to_numpy().astype(float)
        lost = ((g["status"] != "ok") & g["end_s"].is_null()).to_numpy()
        inp = np.where(lost & np.isnan(inp), med, inp)
        fill = np.full(inp.shape, float(outlive))
        if params.kv_policy == "reserve" and params.kv_budget_tokens is not None:
            # a reserving engine must admit it: its reservation fits the budget (it is aborted at the deadline anyway)
            fill = np.minimum(fill, np.maximum(params.kv_budget_tokens - inp, 1.0))
        out = np.where(lost, np.where(np.isnan(req), fill, req), out)
    return inp, out


def replay(params: ServerParams, frame: pl.DataFrame) -> pl.DataFrame:
    """The test's requests with the twin's ``ttft_ms``, ``latency_ms``, ``end_s`` and ``status`` instead.

    A failed request the twin cannot replay (no lengths, no request timeout to lose it at) keeps its
    measured failure, so both sides count it alike."""
    parts = []
    for g0 in _groups(_prep(frame)):
        g0 = g0.sort("start_s")
        use = _replayable(g0, params)
        g = g0.filter(use)
        keep = g0.filter(~use)
        if keep.height:
            parts.append(keep.select("run_id", "step", "offered_load", "start_s", "end_s", "ttft_ms", "latency_ms",
                                     "status", "_scored").with_columns(pl.lit(None, pl.Float64).alias("tpot_ms"),
                                                            pl.lit(None, pl.Float64).alias("itl_ms")))
        if not g.height:
            continue
        a = g["start_s"].to_numpy().astype(float)
        inp, out = _lengths(g, params)
        res = simulate(params, a - a[0], inp, out, g["cached_tokens"].to_numpy())
        ok = res["status"] == OK
        end = res["end_s"] + a[0]
        ttft = np.where(ok, (res["first_token_s"] + a[0] - a) * 1000.0, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(ok & (out > 1), (end - (res["first_token_s"] + a[0])) * 1000.0 / (out - 1), np.nan)
        parts.append(g.select("run_id", "step", "offered_load", "start_s", "_scored").with_columns(
            pl.Series("end_s", end), pl.Series("ttft_ms", ttft).fill_nan(None),
            pl.Series("latency_ms", (end - a) * 1000.0), pl.Series("status", np.where(
                ok, "ok", np.where(res["status"] == 1, "timeout", "rejected"))),
            pl.Series("tpot_ms", tpot).fill_nan(None), pl.Series("itl_ms", tpot).fill_nan(None)))
    return pl.concat(parts, how="diagonal_relaxed").sort("start_s")


def _figures(step: pl.DataFrame, sla) -> tuple[dict[str, float | None], bool | None]:
    t0, t1 = float(step["start_s"].min()), float(step["start_s"].max())  # the step's send window: all it sent
    span = max(t1 - t0, 1e-9)
    # throughput over the send window counts every request's completion on both sides: a cancelled or
    # unknown request is known not to have completed inside it (GuideLLM cancels at the step's end, after the
    # last send; LMBenchmark waits at least until its last launch and keeps every completion before), so a
    # replay that completes it there does disagree with the test
    done = step.filter((pl.col("status").is_null() | (pl.col("status") == "ok"))
                       & (pl.col("end_s") >= t0) & (pl.col("end_s") <= t1)).height
    if "_scored" in step.columns:
        step = step.filter(pl.col("_scored"))  # percentiles, SLA: cancelled / unknown have no outcome to score
    ok = step.filter(pl.col("status").is_null() | (pl.col("status") == "ok"))
    ttft = ok["ttft_ms"].drop_nulls().to_numpy()
    lat = ok["latency_ms"].drop_nulls().to_numpy()

    def q(x: np.ndarray, p: float) -> float | None:
        return float(quantile(x, p)) if x.size else None

    figs = {"throughput_rps": done / span, "ttft_p50_ms": q(ttft, 0.5), "ttft_p95_ms": q(ttft, 0.95),
            "ttft_p99_ms": q(ttft, 0.99), "latency_p50_ms": q(lat, 0.5), "latency_p95_ms": q(lat, 0.95),
            "latency_p99_ms": q(lat, 0.99)}
    m = sla.margin(step) if sla is not None else None
    return figs, (None if m is None else bool(m >= 0))


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
    frame = assign_replicas(_prep(trace.frame if hasattr(trace, "frame") else trace), twin.replicas)
    sim = replay(server_params(twin.values()), frame)
    loads = (frame.group_by("run_id", "step").agg(pl.col("offered_load").first()).sort("run_id", "step"))
    rows: list[StepCheck] = []
    for run, s, load in loads.iter_rows():
        sel = (pl.col("run_id") == run) & (pl.col("step") == s)
        mf, mp = _figures(frame.filter(sel), sla_obj)
        pf, pp = _figures(sim.filter(sel), sla_obj)
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
        pf, pp = _figures(sim_h.filter((pl.col("run_id") == r.run_id) & (pl.col("step") == r.step)), sla_obj)
        chk = StepCheck(r.step, r.offered_load, True, r.measured, pf, r.sla_pass_measured, pp, run_id=r.run_id)
        rows.append(chk)
        e = _rel(pf.get(key), r.measured.get(key))
        if chk.sla_pass_measured != chk.sla_pass_predicted and not (e is not None and abs(e) <= HELDOUT_TOL + EPS):
            reasons.append(f"step {r.step} held out: predicted verdict differs and {key} is "
                           f"{'unknown' if e is None else f'{e:+.0%}'} off")
    return Validation(sla=sla_obj.text, rows=rows, trusted=not reasons, reasons=reasons, rules=RULES)


__all__ = ["RULES", "replay", "validate"]
