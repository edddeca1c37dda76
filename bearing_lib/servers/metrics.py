"""Server metrics aligned to load steps, and summarised per step and signal.

A load test knows when each step ran (its requests' send and end times); a metrics series
knows when each sample was taken. :func:`step_windows` takes the windows from a request
trace, :func:`align_to_steps` puts every sample in the step whose window holds its time
(half-open ``[start, end)``; a sample outside every window keeps step null), and
:func:`step_signals` summarises each (run, step, signal). Inputs that already say which step
a value belongs to (inference-perf's per-stage reports) skip the alignment.

Both sides must share a clock: epoch seconds on both, or pass ``offset_s`` (added to the
trace's times) when the trace was rebased to its first request.
"""

from __future__ import annotations

import polars as pl

from bearing_lib.common.errors import InputError, ParameterError
from bearing_lib.data.servermetrics import SIGNALS, ServerMetrics

WINDOW_SCHEMA = {"run_id": pl.String(), "step": pl.Int64(), "start_s": pl.Float64(), "end_s": pl.Float64()}
SUMMARY_COLUMNS = ("run_id", "step", "signal", "basis", "n", "mean", "high", "first", "last", "increase", "trend_per_s")


def step_windows(trace: object, *, offset_s: float = 0.0) -> pl.DataFrame:
    """(run_id, step, start_s, end_s) per step of a request trace: first send to last end.

    ``trace`` is a :class:`~bearing_lib.data.trace.RequestTrace` (its frame needs ``start_s``,
    ``end_s`` and ``step``). Requests without a step are ignored.
    """
    frame = getattr(trace, "frame", None)
    if not isinstance(frame, pl.DataFrame) or not {"start_s", "end_s", "step"} <= set(frame.columns):
        raise ParameterError("step_windows needs a request trace with start_s, end_s and step columns")
    f = frame.filter(pl.col("step").is_not_null())
    if f.height == 0:
        raise InputError("the trace has no request with a load step: nothing to align the metrics to")
    run = pl.col("run_id") if "run_id" in f.columns else pl.lit(None, dtype=pl.String)
    return (
        f.with_columns(run.alias("run_id"))
        .group_by("run_id", "step")
        .agg((pl.col("start_s").min() + offset_s).alias("start_s"), (pl.col("end_s").max() + offset_s).alias("end_s"))
        .sort("run_id", "step", nulls_last=True)
        .select([pl.col(c).cast(t) for c, t in WINDOW_SCHEMA.items()])
    )


def align_to_steps(metrics: ServerMetrics, windows: pl.DataFrame | list[dict[str, object]]) -> ServerMetrics:
    """``metrics`` with ``step`` (and ``run_id``) set from the window holding each sample's time.

    Windows must not overlap. A sample outside every window keeps step null; how many is a
    finding. Samples without a time cannot be aligned and are an :class:`InputError`.
    """
    win = pl.DataFrame(windows, schema=WINDOW_SCHEMA) if isinstance(windows, list) else windows
    win = win.sort("start_s")
    starts, ends = win["start_s"].to_list(), win["end_s"].to_list()
    if any(e <= s for s, e in zip(starts, ends, strict=True)):
        raise ParameterError("every step window needs end_s > start_s")
    if any(starts[i + 1] < ends[i] for i in range(len(starts) - 1)):
        raise ParameterError("step windows overlap: a sample could belong to two steps")
    f = metrics.frame
    if f["time_s"].null_count():
        raise InputError(
            f"{f['time_s'].null_count()} sample(s) have no time: undated snapshots or window statistics cannot be "
            "aligned by time",
            path=metrics.provenance.source,
        )
    idx = (
        f.select(pl.col("time_s"))
        .with_row_index("_i")
        .sort("time_s")
        .join_asof(win.with_row_index("_w").select("_w", "start_s"), left_on="time_s", right_on="start_s")
    )
    ends_s = pl.Series(ends)
    w = idx["_w"]
    inside = [wi is not None and t < ends_s[wi] for wi, t in zip(w.to_list(), idx["time_s"].to_list(), strict=True)]
    order = idx["_i"].to_list()
    step_of: list[int | None] = [None] * f.height
    run_of: list[str | None] = list(f["run_id"].to_list())
    steps, runs = win["step"].to_list(), win["run_id"].to_list()
    for k, i in enumerate(order):
        if inside[k]:
            step_of[i] = steps[w[k]]
            run_of[i] = runs[w[k]] if runs[w[k]] is not None else run_of[i]
    out = f.with_columns(pl.Series("step", step_of, dtype=pl.Int64), pl.Series("run_id", run_of, dtype=pl.String))
    prov = metrics.provenance
    outside = sum(1 for s in step_of if s is None)
    prov.add(
        "aligned_to_steps",
        f"{f.height - outside} of {f.height} samples fall in one of {win.height} step windows"
        + (f"; {outside} outside every window keep step null" if outside else ""),
        level="info" if not outside else "warning",
        count=outside or None,
    )
    return ServerMetrics(frame=out, provenance=prov)


def _increase(values: list[float]) -> float:
    """Counter increase over ordered samples: the sum of rises (a drop is a counter reset)."""
    total = 0.0
    for a, b in zip(values, values[1:], strict=False):
        total += b - a if b >= a else b
    return total


def _slope(times: list[float], values: list[float]) -> float | None:
    """Least-squares slope of value on time (per second); None with fewer than 3 samples."""
    if len(times) < 3:
        return None
    n = len(times)
    mt, mv = sum(times) / n, sum(values) / n
    sxx = sum((t - mt) ** 2 for t in times)
    if sxx == 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in zip(times, values, strict=True)) / sxx


def step_signals(metrics: ServerMetrics) -> pl.DataFrame:
    """One row per (run, step, signal) with a step: what the signal did during that step.

    Columns: ``basis`` (``samples`` or ``window statistics``), ``n`` (samples, or 1), ``mean``,
    ``high`` (max of the samples; for window statistics the p99, else the max, else the mean
    the tool gave), ``first``/``last`` (samples in time order; window statistics: the mean),
    ``increase`` (counters sampled over time: the rise within the step, resets handled; window
    statistics: the ``increase`` the tool reported, e.g. AIPerf's counter ``total``),
    ``trend_per_s`` (gauges sampled ≥ 3 times: least-squares slope). Several instances or GPUs
    in one step are pooled for the level statistics; a counter's increase is summed over
    instances and GPUs.
    """
    f = metrics.frame.filter(pl.col("signal").is_not_null() & pl.col("step").is_not_null())
    rows: list[dict[str, object]] = []
    for (run_id, step, signal), g in f.group_by("run_id", "step", "signal", maintain_order=True):
        samples = g.filter(pl.col("stat") == "sample")
        counter = SIGNALS[signal].counter if signal in SIGNALS else False
        if samples.height:
            s = samples.sort("time_s")
            vals = s["value"].to_list()
            inc = None
            if counter:
                inc = 0.0
                for _, sg in s.group_by("instance", "gpu", "labels", maintain_order=True):
                    inc += _increase(sg.sort("time_s")["value"].to_list())
            rows.append(
                {
                    "run_id": run_id, "step": step, "signal": signal, "basis": "samples", "n": len(vals),
                    "mean": sum(vals) / len(vals), "high": max(vals), "first": vals[0], "last": vals[-1],
                    "increase": inc,
                    "trend_per_s": None if counter else _slope(s["time_s"].to_list(), vals),
                }
            )
        else:
            # several series (GPUs, instances) pooled: levels averaged, highs the highest, increases summed
            pooled = g.group_by("stat").agg(pl.col("value").mean().alias("mean"), pl.col("value").max().alias("max"),
                                            pl.col("value").sum().alias("sum"))
            stats = {r["stat"]: r["sum"] if r["stat"] == "increase" else r["max"] if r["stat"] in ("p90", "p99", "max")
                     else r["mean"] for r in pooled.iter_rows(named=True)}
            # a counter the tool summarised by its increase over the window has no level: its numbers are that
            mean = stats.get("mean", stats.get("median", stats.get("value", stats.get("increase"))))
            high = stats.get("p99", stats.get("max", mean))
            rows.append(
                {
                    "run_id": run_id, "step": step, "signal": signal, "basis": "window statistics", "n": 1,
                    "mean": mean, "high": high, "first": mean, "last": mean,
                    "increase": stats.get("increase") if counter else None, "trend_per_s": None,
                }
            )
    schema = {
        "run_id": pl.String(), "step": pl.Int64(), "signal": pl.String(), "basis": pl.String(), "n": pl.Int64(),
        "mean": pl.Float64(), "high": pl.Float64(), "first": pl.Float64(), "last": pl.Float64(),
        "increase": pl.Float64(), "trend_per_s": pl.Float64(),
    }
    return pl.DataFrame(rows, schema=schema).sort("run_id", "step", "signal", nulls_last=True)
