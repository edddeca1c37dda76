"""LMCache LMBenchmark per-request CSVs (also as run by fmperf in llm-d-benchmark).

One CSV per QPS level; one row per *completed* request. Two layouts:

- ``sharegpt``: ``prompt_tokens, generation_tokens, ttft, generation_time, launch_time, finish_time``;
- multi-round (``short_input``): the same plus ``user_id, question_id`` before the times
  (token counts written as ``76.0``).

Units: ``ttft`` and ``generation_time`` (first to last token) in seconds, ``launch_time``
and ``finish_time`` in epoch seconds. The QPS level is written **only in the file name**
(``LMBench_sharegpt_output_<qps>.csv``, ``LMBench_short_input_qps<qps>.csv``): bearing reads
it from there, says so in a finding and cross-checks it against the measured launch rate.
There is **no error column**: an absent request is either a failure or one the run stopped waiting for
(LMCache/LMBenchmark ``sharegpt/sharegpt-qa.py``: a result is appended only when a request completes, an
exception drops it; ``sharegpt/utils.py`` ``AsyncLoopWrapper.WaitLoop`` gathers the in-flight requests after
the last launch without ``return_exceptions``, so the first exception ends the wait and the CSV holds what
had completed by then). The ``sharegpt`` workload sends a fixed list of prompts on a **fixed schedule**,
prompt ``k`` at ``start + k / qps`` (``BenchmarkRunner.run``), so an absent request leaves a hole in that
lattice: where every recorded launch sits on it (within :data:`GRID_TOLERANCE` of an interval, no two in one
slot), bearing puts one row per empty slot (``start_s`` the slot's launch time, no end, TTFT or output,
``error`` "absent: …"): status ``error`` when it was launched earlier than the step's last recorded end minus
the run's highest recorded latency (it had completed or raised before collection stopped: :func:`_fate`),
else ``unknown`` (neither success nor failure). ``input_tokens`` and ``requested_output_tokens`` of such a
row are those of the same prompt where it completed in another step of the run (the steps' prompt lengths
are matched to align them), else null. Slots after a step's last recorded launch are empty too when a
lower-QPS step of the same run completed every prompt (the run's prompt count is then known; a ``--time``
limit would cut the *lower* QPS steps first, so it cannot explain them). Findings say how many, per step
(failed and unknown), and the highest recorded latency (a sharp ceiling there is a timeout in front of the
engine). Option ``absent="ignore"`` keeps only the recorded rows (the error rate is then unknown, as before).
The multi-round layout has no fixed schedule; its absent requests cannot be placed.

A folder of such CSVs (and its direct sub-folders) loads as runs with ordered steps: one run per
folder and workload (``<folder>/<workload>``), steps ordered by QPS.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import InputError, ParameterError, UnsupportedVersionError
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_csv_checked
from bearing_lib.loaders._loadtest import step_exprs, step_row
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "lmbench-csv"
TOOL = "LMCache LMBenchmark"
BASE = ("prompt_tokens", "generation_tokens", "ttft", "generation_time", "launch_time", "finish_time")
MULTI = ("user_id", "question_id")
SIGNATURE = ("generation_time", "launch_time")
RATE_TOLERANCE = 0.10
"""Relative difference between the file-name QPS and the measured launch rate that earns a warning."""
GRID_TOLERANCE = 0.35
"""Largest distance of a recorded launch from its slot ``start + k / qps``, in intervals, for the file to
count as sent on LMBenchmark's fixed schedule (measured on the llm-d exp-2 sweeps: at most 0.21)."""
PROMPT_MATCH_TOKENS = 4
"""Prompt lengths of one prompt in two steps differ by the QPS prefix LMBenchmark adds (``"0.5 "``)."""
MAX_ALIGN_SHIFT = 50
"""Largest shift, in prompts, between two steps' first recorded prompts that the alignment tries."""
ABSENT_MODES = ("failed", "ignore")

_NAME_RE = re.compile(r"^LMBench_(?P<workload>.+?)_(?:output_|qps)(?P<qps>\d+(?:\.\d+)?)\.csv$")
_LOOSE_RE = re.compile(r"(?P<qps>\d+(?:\.\d+)?)\.csv$")


def _header(source: InputSource) -> list[str]:
    return [c.strip() for c in source.first_line.split(",")]


def _is_lmbench_file(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".csv":
        return False
    cols = _header(source)
    return all(c in cols for c in SIGNATURE)


def _files(source: InputSource) -> list[InputSource]:
    if not source.is_dir:
        return [source]
    # the folder itself and its direct sub-folders (one per deployment), not deeper
    paths = [p for pat in ("*.csv", "*.csv.gz", "*/*.csv", "*/*.csv.gz") for p in source.path.glob(pat)]
    return [InputSource(p) for p in sorted(paths) if p.is_file()]


def sniff(source: InputSource) -> bool:
    if not source.is_dir:
        return _is_lmbench_file(source)
    files = _files(source)
    return bool(files) and all(_is_lmbench_file(f) for f in files)


def parse_name(name: str) -> tuple[str, float | None]:
    """Workload and QPS written in an LMBench file name (``("sharegpt", 0.5)``); QPS None if absent."""
    m = _NAME_RE.match(name)
    if m:
        return m.group("workload"), float(m.group("qps"))
    m2 = _LOOSE_RE.search(name)
    stem = Path(name).stem
    return stem, (float(m2.group("qps")) if m2 else None)


def _read_one(src: InputSource) -> tuple[pl.DataFrame, str]:
    cols = _header(src)
    missing = [c for c in BASE if c not in cols]
    if missing:
        raise UnsupportedVersionError(
            "an LMBenchmark CSV layout bearing does not know",
            tool=TOOL,
            version=None,
            missing=missing,
            path=src.path,
        )
    layout = "multi-round" if all(c in cols for c in MULTI) else "sharegpt"
    types: dict[str, pl.DataType] = {
        "prompt_tokens": pl.Int64(),
        "generation_tokens": pl.Int64(),
        "ttft": pl.Float64(),
        "generation_time": pl.Float64(),
        "launch_time": pl.Float64(),
        "finish_time": pl.Float64(),
    }
    if layout == "multi-round":
        types |= {"user_id": pl.String(), "question_id": pl.String()}
    return read_csv_checked(src, types), layout


def _slots(raw: pl.DataFrame, qps: float | None, layout: str):
    """Slot index ``round((launch − first launch) × qps)`` of each row, or None when the file is not
    on LMBenchmark's fixed schedule (multi-round layout, no QPS, a launch off its slot, two in one)."""
    if layout != "sharegpt" or qps is None or qps <= 0 or raw.height < 10:
        return None
    import numpy as np  # here, not at the top: `bearing inspect` of a small file stays numpy-free

    t = raw["launch_time"].to_numpy().astype(float)
    x = (t - t.min()) * qps
    k = np.rint(x)
    if np.max(np.abs(x - k)) > GRID_TOLERANCE or np.unique(k).size != k.size:
        return None
    return k.astype(np.int64)


def _align(slots, prompts, ref: dict[int, int]) -> int | None:
    """Shift ``o`` that puts slot ``k`` on prompt ``k + o`` of the reference step (prompt lengths
    within :data:`PROMPT_MATCH_TOKENS` on ≥ 80 % of ≥ 10 shared prompts), or None."""
    best, best_o = 0.0, None
    for o in range(-MAX_ALIGN_SHIFT, MAX_ALIGN_SHIFT + 1):
        pairs = [(ref[k + o], int(v)) for k, v in zip(slots.tolist(), prompts.tolist(), strict=True) if k + o in ref]
        if len(pairs) < 10:
            continue
        share = sum(abs(a - b) <= PROMPT_MATCH_TOKENS for a, b in pairs) / len(pairs)
        if share > best:
            best, best_o = share, o
    return best_o if best >= 0.8 else None


def _absent_rows(meta: list) -> tuple[dict[int, pl.DataFrame], list[str], list[str], dict[str, float]]:
    """Rows for the empty slots of every file on the fixed schedule, keyed by position in ``meta``, each
    ``error`` (certainly failed) or ``unknown`` (the run may have stopped waiting for it: :func:`_fate`);
    also per-step counts and the files not on the schedule (for the findings), and each run's highest
    recorded latency."""
    out: dict[int, pl.DataFrame] = {}
    counts: list[str] = []
    off_grid: list[str] = []
    runs: dict[str, list[int]] = {}
    for i, m in enumerate(meta):
        runs.setdefault(m[0], []).append(i)
    ceiling = {run: max(float((meta[i][3]["finish_time"] - meta[i][3]["launch_time"]).max() or 0.0) for i in idx)
               for run, idx in runs.items()}
    for idx in runs.values():
        slots = {i: _slots(meta[i][3], meta[i][1], meta[i][4]) for i in idx}
        off_grid += [meta[i][2].name for i in idx if slots[i] is None and meta[i][4] == "sharegpt"]
        on = [i for i in idx if slots[i] is not None]
        if not on:
            continue
        ref_i = max(on, key=lambda i: meta[i][3].height)
        ref = dict(zip(slots[ref_i].tolist(), meta[ref_i][3]["prompt_tokens"].to_list(), strict=True))
        shift = {i: (0 if i == ref_i else _align(slots[i], meta[i][3]["prompt_tokens"].to_numpy(), ref)) for i in on}
        # the run's prompt list: lengths of each prompt where it completed (lowest QPS first)
        lengths: dict[int, tuple[int, int]] = {}
        for i in sorted(on, key=lambda i: meta[i][1]):
            if shift[i] is None:
                continue
            r = meta[i][3]
            for k, pt, gt in zip(slots[i].tolist(), r["prompt_tokens"].to_list(), r["generation_tokens"].to_list(),
                                 strict=True):
                lengths.setdefault(k + shift[i], (pt, gt))
        aligned = [i for i in on if shift[i] is not None]
        p_lo = min(int(slots[i].min()) + shift[i] for i in aligned)
        p_hi = max(int(slots[i].max()) + shift[i] for i in aligned)
        complete_qps = [meta[i][1] for i in aligned
                        if int(slots[i].min()) + shift[i] == p_lo and int(slots[i].max()) + shift[i] == p_hi]
        for i in on:
            run, qps, f, raw, _ = meta[i]
            k = slots[i]
            t0 = float(raw["launch_time"].min())
            present = set(k.tolist())
            holes = [j for j in range(int(k.min()), int(k.max()) + 1) if j not in present]
            lead: list[int] = []
            trail: list[int] = []
            if shift[i] is not None:
                o = shift[i]
                lead = list(range(p_lo - o, int(k.min())))
                if any(q < qps for q in complete_qps):
                    trail = list(range(int(k.max()) + 1, p_hi - o + 1))
            empty = lead + holes + trail
            if not empty:
                continue
            known = [lengths.get(j + shift[i]) if shift[i] is not None else None for j in empty]
            start = [t0 + j / qps for j in empty]
            last_end = float(raw["finish_time"].max())
            failed = [_fate(s, last_end, ceiling[run]) for s in start]
            slot_of = [j + (shift[i] or 0) for j in empty]
            err = [(f"absent: slot {j} of the fixed 1/qps schedule has no row and was launched {last_end - s:.1f} s "
                    f"before the step's last recorded end, longer than the run's highest recorded latency "
                    f"({ceiling[run]:.1f} s): it ended before collection stopped and was not kept, so it raised")
                   if bad else
                   (f"absent: slot {j} of the fixed 1/qps schedule has no row; launched {last_end - s:.1f} s before "
                    f"the step's last recorded end (the run's highest recorded latency is {ceiling[run]:.1f} s), it "
                    "may still have been in flight when LMBenchmark stopped waiting: outcome unknown")
                   for j, s, bad in zip(slot_of, start, failed, strict=True)]
            out[i] = pl.DataFrame({
                "slot": empty,
                "start_s": start,
                "input_tokens": [None if v is None else v[0] for v in known],
                "requested_output_tokens": [None if v is None else v[1] for v in known],
                "status": ["error" if b else "unknown" for b in failed],
                "error": err,
            }, schema={"slot": pl.Int64, "start_s": pl.Float64, "input_tokens": pl.Int64,
                       "requested_output_tokens": pl.Int64, "status": pl.String, "error": pl.String})
            sent = raw.height + len(empty)
            n_bad = sum(failed)
            part = (f"{f.name}: {len(empty)} of {sent} absent ({len(empty) / sent:.1%}): {n_bad} failed, "
                    f"{len(empty) - n_bad} unknown")
            if lead or trail:
                part += f"; {len(lead) + len(trail)} of them after the last (or before the first) recorded launch"
            counts.append(part)
    return out, counts, off_grid, ceiling


def _fate(launch_s: float, last_end_s: float, ceiling_s: float) -> bool:
    """True when an absent request certainly failed; False when its outcome is unknown.

    LMBenchmark (LMCache/LMBenchmark ``sharegpt/sharegpt-qa.py``, ``BenchmarkRunner.run`` and
    ``RequestExecutor.launch_request``) appends a result only when a request completes: one that raises is
    logged and dropped. After the last launch, ``AsyncLoopWrapper.WaitLoop`` (``sharegpt/utils.py``) gathers
    the requests still in flight **without** ``return_exceptions``, so the first exception among them ends
    the wait, and the CSV is written from whatever had completed by then: a request still in flight at that
    moment is absent too, though it might have completed. The collection stopped no earlier than the step's
    last recorded end (that request completed and was kept). A request lives at most about the run's highest
    recorded latency (with a deadline in front of the engine, e.g. the llm-d gateway's ~30 s, failed
    requests are cut there and completed ones pile just below it): so one launched more than that before the
    last recorded end had completed or raised before collection stopped; absent, it raised. A later one
    may have been cut off by the stop: unknown, neither success nor failure (docs/canonical-trace.md).
    """
    return launch_s + ceiling_s < last_end_s


def load(source: InputSource, *, absent: str = "failed") -> RequestTrace:
    """Load one LMBench CSV or a folder of them into a request trace with steps.

    ``absent``: ``"failed"`` (default) adds a row for each empty slot of the fixed schedule, ``error`` or
    ``unknown`` (module docstring); ``"ignore"`` keeps only the recorded rows.
    """
    if absent not in ABSENT_MODES:
        raise ParameterError(f"option absent must be one of {', '.join(ABSENT_MODES)}, got {absent!r}")
    files = _files(source)
    if not files:
        raise InputError("the folder holds no LMBenchmark CSV", path=source.path)
    prov = new_provenance(source, format=NAME, tool=TOOL)
    prov.files = [str(f.path) for f in files]
    parts: list[pl.DataFrame] = []
    steps: list[dict[str, object]] = []
    meta = []
    layouts: set[str] = set()
    for f in files:
        raw, layout = _read_one(f)
        layouts.add(layout)
        workload, qps = parse_name(f.name)
        rel_parent = f.path.parent.name
        run_id = f"{rel_parent}/{workload}"
        meta.append((run_id, qps, f, raw, layout))
    # order steps by QPS inside each run (files without a QPS last, by name)
    meta.sort(key=lambda m: (m[0], m[1] is None, m[1] if m[1] is not None else 0.0, m[2].name))
    step_of: dict[str, int] = {}
    mismatches: list[str] = []
    no_rate: list[str] = []
    holes, hole_counts, off_grid, ceiling = _absent_rows(meta) if absent == "failed" else ({}, [], [], {})
    max_latency = {meta[i][0]: ceiling[meta[i][0]] for i in holes}
    for pos, (run_id, qps, f, raw, layout) in enumerate(meta):
        step = step_of.get(run_id, 0)
        step_of[run_id] = step + 1
        n = raw.height
        launch = raw["launch_time"]
        span = float(launch.max() - launch.min()) if n > 1 else 0.0
        measured = (n - 1) / span if span > 0 else None
        if qps is None:
            no_rate.append(f.name)
        elif pos not in holes and measured is not None and abs(measured / qps - 1) > RATE_TOLERANCE:
            mismatches.append(f"{f.name}: name says {qps:g} rps, measured launch rate {measured:.3g} rps ({n} rows)")
        rel = f.path.parent.name
        if layout == "multi-round":
            rid = pl.format("{}:u{}-q{}", pl.lit(f"{rel}/{f.name}"), pl.col("user_id"), pl.col("question_id"))
        else:
            rid = pl.format("{}:{}", pl.lit(f"{rel}/{f.name}"), pl.col("source_row"))
        out_tok = pl.col("generation_tokens")
        unit = "rps" if qps is not None else None
        parts.append(
            raw.select(
                rid.alias("request_id"),
                pl.col("launch_time").alias("start_s"),
                pl.col("finish_time").alias("end_s"),
                (pl.col("ttft") * 1000.0).alias("ttft_ms"),
                ((pl.col("finish_time") - pl.col("launch_time")) * 1000.0).alias("latency_ms"),
                pl.when(out_tok > 1)
                .then(pl.col("generation_time") * 1000.0 / (out_tok - 1))
                .otherwise(None)
                .alias("tpot_ms"),
                pl.col("prompt_tokens").alias("input_tokens"),
                out_tok.alias("output_tokens"),
                pl.lit("ok").alias("status"),
                *step_exprs(run_id, step, qps, unit),
                pl.col("source_row"),
            )
        )
        if pos in holes:
            h = holes[pos]
            parts.append(h.select(
                pl.format("{}:absent-{}", pl.lit(f"{rel}/{f.name}"), pl.col("slot")).alias("request_id"),
                pl.col("start_s"),
                pl.col("input_tokens"),
                pl.col("requested_output_tokens"),
                pl.col("status"),
                pl.col("error"),
                *step_exprs(run_id, step, qps, unit),
            ))
        steps.append(step_row(run_id, step, qps, unit, source_file=str(f.path),
                              n_requests_reported=raw.height + (holes[pos].height if pos in holes else 0)))
    prov.add(
        "offered_load_from_file_name",
        "LMBenchmark writes the QPS level only in the file name; offered_load was read from the name "
        "and cross-checked against the measured launch rate ((n-1) / launch span)",
        level="info",
    )
    unknown = [m[2].name for m in meta if m[4] != "sharegpt"] + off_grid
    if absent == "ignore" or unknown:
        prov.add(
            "no_error_column",
            "LMBenchmark CSVs have no error column: failed requests are absent, so every row is 'ok' and the "
            "error rate cannot be known from "
            + ("these files (option absent=ignore)" if absent == "ignore" else
               f"the {len(unknown)} file(s) not sent on its fixed 1/qps schedule (the multi-round workload has "
               "none): " + ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")),
            level="warning",
            count=len(unknown) if absent != "ignore" else len(meta),
        )
    if hole_counts:
        lost = pl.concat(list(holes.values()))
        n_abs = lost.height
        n_bad = int((lost["status"] == "error").sum())
        prov.add(
            "absent_requests_failed",
            f"{n_abs} request(s) absent from the files were sent and put back at their slots (LMBenchmark keeps "
            "only completed requests, and its sharegpt workload launches prompt k at start + k/qps): "
            f"{n_bad} certainly failed (status error, counted in the error rate: launched earlier than the step's "
            "last recorded end minus the run's highest recorded latency, so they had completed or raised before "
            f"LMBenchmark stopped collecting), {n_abs - n_bad} have an unknown outcome (status unknown: the run "
            "stops waiting at the first exception after its last launch, and they may still have been in flight; "
            "neither success nor failure). Start at the slot, no end; prompt and output length from the same "
            "prompt in another step where known. The highest recorded latency is "
            + ", ".join(f"{v:.1f} s in {r}" for r, v in sorted(max_latency.items()))
            + ": a sharp ceiling there is a timeout in front of the engine (gateway or client), which the absent "
            "requests ran into. Per step: " + "; ".join(hole_counts),
            level="warning",
            count=n_bad,
        )
        if n_abs > n_bad:
            prov.add(
                "absent_requests_unknown",
                f"{n_abs - n_bad} absent request(s) have status unknown: launched too late before the step's "
                "collection stopped for LMBenchmark to have seen them end (its WaitLoop ends at the first "
                "exception after the last launch); they are left out of error rates and percentiles, and "
                "counted as sent",
                level="warning",
                count=n_abs - n_bad,
            )
    elif absent == "failed" and not unknown:
        prov.add("absent_requests_none", "every slot of the fixed 1/qps schedule has a row: no request is absent",
                 level="info")
    if mismatches:
        prov.add(
            "offered_load_mismatch",
            f"measured launch rate differs from the file name's QPS by more than {RATE_TOLERANCE:.0%} in "
            f"{len(mismatches)} file(s) (missing rows may be failed requests): " + "; ".join(mismatches),
            count=len(mismatches),
        )
    if no_rate:
        prov.add("offered_load_unknown", f"no QPS in the file name of: {', '.join(no_rate)}", count=len(no_rate))
    prov.add("layout", f"layout(s): {', '.join(sorted(layouts))}", level="info")
    frame = pl.concat(parts, how="diagonal_relaxed")
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool=TOOL,
        tool_version=None,
        derived=("request_id", "tpot_ms", "step", "offered_load", "offered_load_unit", "run_id", "status"),
        provenance=prov,
        options={},
        steps=steps,
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="a CSV with columns prompt_tokens, generation_tokens, ttft, generation_time, launch_time, "
        "finish_time (+ user_id, question_id), or a folder of them",
        sniff=sniff,
        load=load,
    )
)
