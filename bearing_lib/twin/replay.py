"""Replaying a test through the twin's server model: the test's rows as servers see them (runs, steps
overlapping in time, replicas behind a round-robin router), which requests the twin replays and with what
lengths, the replay itself and the figures a replayed or measured step is judged by. Calibration (its KV
policy and lost requests) and validation both replay; this module sits below both."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from bearing_lib.common.quantiles import quantile
from bearing_lib.data.trace import OUTCOME_UNKNOWN
from bearing_lib.twin.simulate import OK, ServerParams, simulate

__all__ = [
    "REPLICA",
    "assign_replicas",
    "prepare_rows",
    "replay",
    "replay_lengths",
    "replayable",
    "server_groups",
    "step_figures",
    "tested_replicas",
]


REPLICA = "_replica"


def tested_replicas(instances: object) -> int:
    """The replicas a test ran against, from its limits' ``conditions.instances`` (a whole number ≥ 1), else 1:
    one rule for ``bearing twin fit --limits`` and the report's twin."""
    return int(instances) if isinstance(instances, int | float) and not isinstance(instances, bool) \
        and instances >= 1 and float(instances).is_integer() else 1


def assign_replicas(frame: pl.DataFrame, replicas: int) -> pl.DataFrame:
    """Round-robin dispatch of each run's requests (in send order) to ``replicas`` servers: column ``_replica``
    (docs/twin.md "Replicas behind a router"). One replica: the frame unchanged (no column)."""
    if replicas <= 1:
        return frame.drop(REPLICA) if REPLICA in frame.columns else frame
    run = pl.col("run_id").fill_null("run") if "run_id" in frame.columns else pl.lit("run")
    return (frame.with_columns(run.alias("_rr_run")).sort("start_s", nulls_last=True, maintain_order=True)
            .with_columns((pl.int_range(pl.len()).over("_rr_run") % replicas).cast(pl.Int64).alias(REPLICA))
            .drop("_rr_run"))


def server_groups(frame: pl.DataFrame) -> list[pl.DataFrame]:
    """The trace's runs; a run whose steps overlap in time (separate runs per step) is split per step; with
    replicas (column ``_replica``), every group is split per replica: each is one server's requests."""
    out = _run_groups(frame)
    if REPLICA not in frame.columns:
        return out
    return [part for g in out for _, part in g.group_by([REPLICA], maintain_order=True)]


def _run_groups(frame: pl.DataFrame) -> list[pl.DataFrame]:
    out = []
    for (_,), run in frame.group_by(["run_id"], maintain_order=True):
        spans = run.group_by("step").agg(pl.col("start_s").min().alias("a"), pl.col("start_s").max().alias("b"))
        spans = spans.sort("a")
        a, b = spans["a"].to_numpy(), spans["b"].to_numpy()
        overlap = bool(np.any(a[1:] < b[:-1] - 1e-9)) if a.size > 1 else False
        if overlap:
            out.extend(part for _, part in run.group_by(["step"], maintain_order=True))
        else:
            out.append(run)
    return out



def prepare_rows(frame: pl.DataFrame) -> pl.DataFrame:
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


def replayable(g: pl.DataFrame, params: ServerParams) -> pl.Series:
    """Which requests of one run the twin replays, with their lengths filled: every one with both lengths;
    with a request timeout also a *lost* one (failed, no end time: the test dropped it), whose prompt is
    its own or the run's median, and whose output is the one it asked for or, unknown, the shortest that
    an idle server could not finish before the deadline (it did not finish before it)."""
    has = g["input_tokens"].is_not_null() & g["output_tokens"].is_not_null()
    if params.request_timeout_s is None:
        return has
    lost = (g["status"] != "ok") & g["end_s"].is_null()
    return has | lost


def replay_lengths(g: pl.DataFrame, params: ServerParams) -> tuple[np.ndarray, np.ndarray]:
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
    for g0 in server_groups(prepare_rows(frame)):
        g0 = g0.sort("start_s")
        use = replayable(g0, params)
        g = g0.filter(use)
        keep = g0.filter(~use)
        if keep.height:
            parts.append(keep.select("run_id", "step", "offered_load", "start_s", "end_s", "ttft_ms", "latency_ms",
                                     "status", "_scored").with_columns(pl.lit(None, pl.Float64).alias("tpot_ms"),
                                                            pl.lit(None, pl.Float64).alias("itl_ms")))
        if not g.height:
            continue
        a = g["start_s"].to_numpy().astype(float)
        inp, out = replay_lengths(g, params)
        res = simulate(params, a - a[0], inp, out, g["cached_tokens"].to_numpy())
        ok = res.status == OK
        end = res.end_s + a[0]
        ttft = np.where(ok, (res.first_token_s + a[0] - a) * 1000.0, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(ok & (out > 1), (end - (res.first_token_s + a[0])) * 1000.0 / (out - 1), np.nan)
        parts.append(g.select("run_id", "step", "offered_load", "start_s", "_scored").with_columns(
            pl.Series("end_s", end), pl.Series("ttft_ms", ttft).fill_nan(None),
            pl.Series("latency_ms", (end - a) * 1000.0), pl.Series("status", np.where(
                ok, "ok", np.where(res.status == 1, "timeout", "rejected"))),
            pl.Series("tpot_ms", tpot).fill_nan(None), pl.Series("itl_ms", tpot).fill_nan(None)))
    return pl.concat(parts, how="diagonal_relaxed").sort("start_s")


def step_figures(step: pl.DataFrame, sla) -> tuple[dict[str, float | None], bool | None]:
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
