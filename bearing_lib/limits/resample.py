"""The block bootstrap of a request trace's steady requests: every step's replicates per clause.

Each step's requests are resampled in blocks of time (``limits.bootstrap``: Politis–White block length, time
blocks, multinomial block weights; one draw per step, in step order, from one generator), and per clause the
replicates of its margin, of its pooled bad share and of its tail's design effect are kept
(``limits.replicates``): what the step-wise and pooled estimators' intervals and the model's design effects read.
``limits.stepstats.replicates_from_stats`` gives the same replicates from per-block statistics.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from bearing_lib.limits import bootstrap as bs
from bearing_lib.limits import evidence as ev_mod
from bearing_lib.limits import pooled
from bearing_lib.limits.replicates import StepReplicates, TraceReplicates
from bearing_lib.limits.sla import KNOWN_EXPR, OK_EXPR, SLA

MIN_BLOCKS, MAX_BLOCKS = 10, 50
"""Blocks per step of the block bootstrap (:func:`n_blocks`)."""


def n_blocks(latency_in_time_order: np.ndarray, n: int) -> int:
    """Blocks per step: ``n / b`` for the Politis–White block length ``b`` of the latency series.

    Clipped to [:data:`MIN_BLOCKS`, :data:`MAX_BLOCKS`] (and to ``n``): near capacity a
    queue's memory is long and blocks must outlast it; at low load blocks are short.
    """
    if n <= 1:
        return 1
    b = bs.politis_white_block_length(latency_in_time_order) if latency_in_time_order.size >= 20 else 1.0
    target = int(n / max(b, 1.0))
    return int(max(1, min(n, max(MIN_BLOCKS, min(MAX_BLOCKS, target)))))


def trace_replicates(
    steady: pl.DataFrame | pl.LazyFrame, windows: pl.DataFrame, sla: SLA, n_boot: int, rng: np.random.Generator,
) -> TraceReplicates:
    """Every (run, mix) group's replicates per step and clause (``limits.replicates``) via the block bootstrap.

    Memory: only the columns the statistics read are collected (from a lazy ``steady``), and
    each step's rows are gathered from one sort order in turn."""
    out: list[tuple[object, object, int, StepReplicates]] = []
    good_exprs = []
    for i, c in enumerate(sla.clauses):
        if c.kind == "goodput":
            g = OK_EXPR
            for b in c.bounds or ():
                g = g & b.holds()
            good_exprs.append(g.alias(f"_good_{i}"))
    cols = ["run_id", "step", "mix", "start_s", "status"] + sla.metrics()
    pooled_exprs = []
    for i, c in enumerate(sla.clauses):
        b_expr, e_expr = pooled.bad_expr(c)
        pooled_exprs += [b_expr.alias(f"_pb_{i}"), e_expr.alias(f"_pe_{i}")]
    present = steady.collect_schema().names()
    order = [c for c in ("run_id", "step", "start_s", "source_row", "request_id") if c in present]
    frame = steady.lazy().select([c for c in dict.fromkeys(cols) if c in present] + good_exprs + pooled_exprs + [
        OK_EXPR.alias("_ok"), KNOWN_EXPR.alias("_known"), pl.col("latency_ms").alias("_lat")]
        + [pl.col(c).alias(f"_o_{c}") for c in order[3:]]
    ).collect()
    # memory: the sort order only (4 bytes a request), and each step's rows gathered from it in turn; a
    # sorted copy of the frame and a partition_by copy of it cost ~0.3 GB per million requests
    idx = frame.select(pl.arg_sort_by(["run_id", "step", "start_s"] + [f"_o_{c}" for c in order[3:]],
                                      nulls_last=True)).to_series()
    spans = frame.group_by("run_id", "step").len().sort("run_id", "step")
    wmap = {(r["run_id"], r["step"]): r for r in windows.iter_rows(named=True)}
    at = 0
    for run, step, length in spans.iter_rows():
        part = frame[idx.slice(at, length)]
        at += length
        win = wmap.get((run, step))
        n = part.height
        lat = part["_lat"].to_numpy()  # rows are in start-time order within a step
        lat = lat[~np.isnan(lat)] if lat.dtype.kind == "f" else np.zeros(0)
        nb = n_blocks(lat, n)
        if win and win["has_times"] and part["start_s"].null_count() == 0:
            blocks = bs.time_blocks(part["start_s"].to_numpy(), win["t_start_s"], win["t_end_s"], nb)
        else:
            blocks = bs.row_blocks(n, nb)
        wts = bs.block_weights(nb, n_boot, rng)
        mixes = part["mix"].to_numpy()
        ok = part["_ok"].to_numpy()
        known = part["_known"].to_numpy()
        failed = known & ~ok
        bad = [part[f"_pb_{i}"].to_numpy() for i in range(len(sla.clauses))]
        elig = [part[f"_pe_{i}"].to_numpy() for i in range(len(sla.clauses))]
        for mix in np.unique(mixes):
            sel = mixes == mix
            b = blocks[sel]
            margins: list[np.ndarray] = []
            shares: list[np.ndarray] = []
            tails: list[float | None] = []
            for i, c in enumerate(sla.clauses):
                tails.append(None)
                if c.kind == "percentile":
                    vals = part[c.metric].to_numpy()[sel]
                    keep = ok[sel] & ~np.isnan(vals)
                    v = bs.boot_quantile(wts, b[keep], vals[keep], c.q, nb)
                    tails[-1] = ev_mod.tail_design_effect(wts, b[keep], vals[keep], nb)
                elif c.kind == "error_rate":
                    kn = known[sel]
                    v = bs.boot_rate(wts, b[kn], failed[sel][kn].astype(float), nb)
                else:
                    kn = known[sel]
                    v = bs.boot_rate(wts, b[kn], part[f"_good_{i}"].to_numpy()[sel][kn].astype(float), nb)
                margins.append(c.observed_to_margin(v))
                # the pooled estimator's input: the step's bad share (bearing_lib.limits.pooled)
                shares.append(pooled.share_to_margin(
                    c, bs.boot_rate(wts, b[elig[i][sel]], bad[i][sel][elig[i][sel]].astype(float), nb)))
            out.append((run, mix, int(step), StepReplicates(tuple(margins), tuple(shares), tuple(tails))))
    return TraceReplicates.collect(out)


__all__ = ["MAX_BLOCKS", "MIN_BLOCKS", "n_blocks", "trace_replicates"]
