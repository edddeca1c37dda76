"""NVIDIA AIPerf per-request records (``profile_export.jsonl``), a run or a sweep of runs.

AIPerf writes one artefact folder per run (``--output-artifact-dir``): the per-request
``profile_export.jsonl``, the summary ``profile_export_aiperf.json`` (read alone by
:mod:`bearing_lib.loaders.genai_perf`), ``inputs.json`` and logs. Format ``aiperf-requests``
reads, as a :class:`~bearing_lib.data.trace.RequestTrace`:

- a ``profile_export.jsonl`` file;
- an artefact folder holding one;
- a folder of artefact folders (one per load level, e.g. ``rate_2/``, ``rate_8/``): one sweep,
  one run, steps ordered by offered load.

Every line is AIPerf's ``MetricRecordInfo`` (``aiperf/common/models/record_models.py``):
``metadata`` (``request_start_ns`` and ``request_end_ns``, wall clock ``time.time_ns()``, the
end being the error's time for a failed request; ``benchmark_phase`` warmup|profiling;
``was_cancelled``), ``metrics`` (each ``{value, unit}``: ``request_latency``,
``time_to_first_token``, ``inter_token_latency`` = (latency − TTFT) / (output tokens − 1),
``inter_chunk_latency`` the list of gaps between streamed chunks, ``input_sequence_length``,
``output_sequence_length``) and ``error`` (``{code, type, message}``) for a failed request.

Mapping: ``start_s``/``end_s`` from the ns clocks; ``latency_ms``, ``ttft_ms``; ``tpot_ms`` from
``inter_token_latency``; ``itl_ms`` the mean of ``inter_chunk_latency``; token counts from the
sequence lengths. Status: no ``error`` → ``ok``; ``was_cancelled`` (AIPerf's own
``--request-cancellation-rate`` cancels them, error code 499 "RequestCancellationError") →
``cancelled``, neither success nor failure (AIPerf counts them as errors); ``TimeoutError``
(``--request-timeout-seconds``) → ``timeout``; HTTP 429 → ``rejected``; anything else
``error``. Warm-up records are left out (a finding counts them). The offered load and the
version come from the ``profile_export_aiperf.json`` beside the records (profiling phase of
``input_config.phases``: ``rate`` in rps or ``concurrency``; ``aiperf_version``); without one
the load is unknown and a finding says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import SendWindow
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._loadtest import StepFacts, number, number_steps, parse_rate, step_columns, step_rows
from bearing_lib.loaders.genai_perf import profiling_phase
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "aiperf-requests"
TOOL = "NVIDIA AIPerf"
RECORDS = "profile_export.jsonl"
SUMMARY = "profile_export_aiperf.json"
_TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "sec": 1000.0, "s": 1000.0}


def _is_records_text(head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    return first.startswith("{") and '"metadata"' in first and '"request_start_ns"' in first


def _records_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(".jsonl") and _is_records_text(InputSource(path).head_text)


def _artefact_dirs(source: InputSource) -> list[Path]:
    """The artefact folders a folder source stands for: itself, or its subfolders holding records."""
    if (source.path / RECORDS).is_file():
        return [source.path]
    return sorted(p for p in source.path.iterdir() if p.is_dir() and (p / RECORDS).is_file())


def sniff(source: InputSource) -> bool:
    try:
        if source.is_dir:
            dirs = _artefact_dirs(source)
            return bool(dirs) and _records_file(dirs[0] / RECORDS)
        return source.suffix == ".jsonl" and _is_records_text(source.head_text)
    except (OSError, ValueError):
        return False


def version(source: InputSource) -> str | None:
    files = [d / SUMMARY for d in _artefact_dirs(source)] if source.is_dir else [source.path.parent / SUMMARY]
    for f in files:
        if f.is_file():
            v = json.loads(f.read_text()).get("aiperf_version")
            return str(v) if v else None
    return None


def _ms(metrics: dict[str, Any], key: str, path: Path, row: int) -> float | None:
    m = metrics.get(key)
    if not isinstance(m, dict) or m.get("value") is None:
        return None
    unit = str(m.get("unit", "ms"))
    if unit not in _TO_MS:
        raise BadValueError(f"metric {key} has unit {unit!r}; expected ms, ns, us or sec", path=path, row=row,
                            field=f"metrics.{key}.unit")
    v = m["value"]
    if isinstance(v, list):
        vals = [float(x) for x in v if x is not None]
        return sum(vals) / len(vals) * _TO_MS[unit] if vals else None
    return float(v) * _TO_MS[unit]


def _count(metrics: dict[str, Any], key: str) -> int | None:
    m = metrics.get(key)
    return int(m["value"]) if isinstance(m, dict) and isinstance(m.get("value"), int | float) else None


def _status(rec: dict[str, Any]) -> tuple[str, str | None]:
    err = rec.get("error")
    if rec["metadata"].get("was_cancelled"):
        return "cancelled", _error_text(err) if isinstance(err, dict) else "cancelled by AIPerf"
    if not err:
        return "ok", None
    text = _error_text(err)
    if err.get("code") == 429:
        return "rejected", text
    if "timeout" in str(err.get("type", "")).lower():
        return "timeout", text
    return "error", text


def _error_text(err: dict[str, Any]) -> str:
    head = " ".join(str(x) for x in (err.get("code"), err.get("type")) if x not in (None, ""))
    return f"{head}: {err.get('message', '')}".strip(": ")[:500]


def _read_records(path: Path) -> tuple[list[dict[str, object]], int]:
    rows: list[dict[str, object]] = []
    warmup = 0
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadValueError(f"not a JSON line ({exc.msg})", path=path, row=i) from exc
            meta = rec.get("metadata") if isinstance(rec, dict) else None
            if not isinstance(meta, dict) or "request_start_ns" not in meta or "request_end_ns" not in meta:
                raise UnsupportedVersionError(f"line {i} is not an AIPerf record", tool=TOOL, version=None,
                                              missing=["metadata.request_start_ns", "metadata.request_end_ns"],
                                              path=path)
            if meta.get("benchmark_phase") == "warmup":
                warmup += 1
                continue
            metrics = rec.get("metrics") or {}
            status, error = _status(rec)
            ok = status == "ok"
            rows.append({
                "request_id": str(meta.get("x_request_id") or i),
                "start_s": int(meta["request_start_ns"]) / 1e9,
                "end_s": int(meta["request_end_ns"]) / 1e9,
                "latency_ms": _ms(metrics, "request_latency", path, i) if ok else None,
                "ttft_ms": _ms(metrics, "time_to_first_token", path, i) if ok else None,
                "tpot_ms": _ms(metrics, "inter_token_latency", path, i) if ok else None,
                "itl_ms": _ms(metrics, "inter_chunk_latency", path, i) if ok else None,
                "input_tokens": _count(metrics, "input_sequence_length") or _count(metrics, "error_isl"),
                "output_tokens": _count(metrics, "output_sequence_length") if ok else None,
                "status": status,
                "error": error,
                "source_row": i,
            })
    return rows, warmup


def _summary_facts(folder: Path) -> tuple[float | None, str | None, str | None, str | None, dict[str, Any]]:
    """(offered load, unit, model, version, phase) from the summary beside the records."""
    f = folder / SUMMARY
    if not f.is_file():
        return None, None, None, None, {}
    doc = json.loads(f.read_text())
    phase = profiling_phase(doc) or {}
    load = unit = None
    if phase.get("rate") is not None:
        load, unit = parse_rate(phase["rate"], path=f, field="input_config.phases.rate"), "rps"
    elif phase.get("concurrency") is not None:
        load, unit = number(phase["concurrency"], path=f, field="input_config.phases.concurrency"), "concurrency"
    else:  # AIPerf 0.1.x
        lg = (doc.get("input_config") or {}).get("loadgen") or {}
        if lg.get("request_rate") is not None:
            load, unit = parse_rate(lg["request_rate"], path=f, field="input_config.loadgen.request_rate"), "rps"
        elif lg.get("concurrency") is not None:
            load, unit = number(lg["concurrency"], path=f, field="input_config.loadgen.concurrency"), "concurrency"
    models = ((doc.get("input_config") or {}).get("models") or {}).get("items") or []
    model = str(models[0].get("name")) if models and isinstance(models[0], dict) else None
    return load, unit, model, (str(doc["aiperf_version"]) if doc.get("aiperf_version") else None), phase


def load(source: InputSource) -> RequestTrace:
    prov = new_provenance(source, format=NAME, tool=TOOL)
    if source.is_dir:
        folders = _artefact_dirs(source)
        if not folders:
            raise InputError(f"no {RECORDS} in the folder or its subfolders", path=source.path)
        files = [d / RECORDS for d in folders]
        sweep = folders != [source.path]
        run_id = source.path.name
    else:
        files, sweep, run_id = [source.path], False, source.path.parent.name
    steps: list[StepFacts] = []
    payload: dict[int, tuple[Path, list[dict[str, object]], str | None]] = {}
    versions: set[str] = set()
    warm = 0
    no_load: list[str] = []
    for k, f in enumerate(files):
        rows, w = _read_records(f)
        warm += w
        if not rows:
            raise InputError("the file holds no profiling record", path=f)
        load_value, unit, model, ver, phase = _summary_facts(f.parent)
        if ver:
            versions.add(ver)
        if load_value is None:
            no_load.append(str(f.parent.name if sweep else f.name))
        starts = [float(r["start_s"]) for r in rows]  # type: ignore[arg-type]
        ends = [float(r["end_s"]) for r in rows]  # type: ignore[arg-type]
        sent = len(rows)
        # first -> last request_start_ns, scaled so that n / window is the send rate
        window = SendWindow.of((max(starts) - min(starts)) * sent / (sent - 1) if sent > 1 else None, "measured",
                               "request_start_ns: (last − first) × n / (n − 1)")
        steps.append(StepFacts(
            run_id=run_id, offered_load=load_value, offered_load_unit=unit, tiebreak=(str(f),),
            duration_s=max(ends) - min(starts), n_requests_reported=int(phase["requests"]) if phase.get("requests")
            else None, source_file=str(f.relative_to(source.path)) if source.is_dir else f.name,
            send_window=window if unit == "rps" else None, duration_includes_drain=True, payload=k,
        ))
        payload[k] = (f, rows, model)
    steps = number_steps(steps, prov)
    frames = []
    counts = {"cancelled": 0, "timeout": 0, "error": 0, "rejected": 0}
    for s in steps:
        f, rows, model = payload[s.payload]
        df = pl.DataFrame(rows, infer_schema_length=None)
        for st in counts:
            counts[st] += df.filter(pl.col("status") == st).height
        frames.append(df.with_columns(
            pl.lit(model, dtype=pl.String).alias("model"),
            *[pl.lit(v).alias(c) for c, v in step_columns(s).items()],
            (pl.lit(f"{s.source_file}#") + pl.col("request_id")).alias("request_id"),
        ))
    frame = pl.concat(frames, how="vertical_relaxed")
    if sweep:
        prov.add("sweep_of_artefact_folders", f"{len(files)} AIPerf artefact folders read as one sweep: "
                 + ", ".join(f.parent.name for f in files), level="info", count=len(files))
    if warm:
        prov.add("warmup_left_out", f"{warm} warm-up record(s) (benchmark_phase warmup) left out", level="info",
                 count=warm)
    if counts["cancelled"]:
        prov.add("cancelled_by_aiperf", f"{counts['cancelled']} request(s) AIPerf cancelled itself "
                 "(--request-cancellation-rate; error 499 RequestCancellationError): status cancelled, neither success "
                 "nor failure (AIPerf's own error count includes them)", count=counts["cancelled"])
    if no_load:
        prov.add("offered_load_unknown", f"no {SUMMARY} beside {', '.join(no_load)}: the load level is unknown",
                 count=len(no_load))
    prov.add("per_request", f"per-request records of {RECORDS} (preferred over the summary); times are wall-clock "
             "epoch ns", level="info")
    trace = finish_trace(frame, source, format=NAME, tool=TOOL, tool_version=", ".join(sorted(versions)) or None,
                         derived=("itl_ms",), time_origin="epoch", provenance=prov, options={},
                         steps=step_rows(steps))
    trace.provenance.files = [str(f) for f in files]
    return trace


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs=f"AIPerf's per-request {RECORDS} (lines {{metadata: {{request_start_ns, request_end_ns, ...}}, "
        "metrics, error}}), its artefact folder, or a folder of artefact folders (one per load level)",
        sniff=sniff,
        load=load,
        version=version,
    )
)
