"""NVIDIA AIPerf's server-metrics export (``server_metrics_export.json``, AIPerf ≥ 0.13) as server metrics.

AIPerf scrapes the endpoint's ``/metrics`` (``base_url + /metrics``, on by default,
``--server-metrics``) while it runs and writes, per run, window statistics over the
profiling phase (``summary.phase_time_ranges.profiling``): for a gauge ``avg``, ``min``,
``max``, ``std``, ``p1`` … ``p99`` of its samples; for a counter ``total`` (its increase over
the phase) and ``rate``. Counter names lose their ``_total`` suffix
(``llamacpp:prompt_tokens``). Each series carries its ``endpoint_url``.

Format ``aiperf-server-metrics`` reads such a file (one step), or, with ``--format
aiperf-server-metrics``, an artefact folder or a folder of artefact folders (one run, a step
per folder ordered by the offered load of its profiling phase, ``input_config.phases``, as the
per-request sweep is: step *k* of both is the same run). Names map to signals through
:data:`bearing_lib.data.servermetrics.METRIC_NAMES` (vLLM, llama.cpp, SGLang, TGI, DCGM):
gauges as window statistics (``mean``, ``median``, ``p90``, ``p99``, ``max``), a counter's
``total`` as the stat ``increase`` (what :func:`~bearing_lib.servers.metrics.step_signals`
reports as the step's increase). The GPU telemetry AIPerf wrote in the same artefact folder
(``telemetry_data`` of ``profile_export_aiperf.json``, else ``*gpu_telemetry.jsonl``) joins each
step (:mod:`bearing_lib.loaders.gpu_telemetry`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import InputError, UnsupportedVersionError
from bearing_lib.common.files import read_json
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.servermetrics import ServerMetrics, map_metric
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders.genai_perf import profiling_phase
from bearing_lib.loaders.gpu_telemetry import (
    AIPERF_FILE,
    FIELDS,
    JSONL_SUFFIX,
    aiperf_telemetry_rows,
    jsonl_telemetry_rows,
    mark_idle_gpus,
)
from bearing_lib.loaders.prometheus import finish_metrics, split_labels
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "aiperf-server-metrics"
TOOL = "NVIDIA AIPerf"
FILE = "server_metrics_export.json"
GAUGE_STATS = {"avg": "mean", "p50": "median", "p90": "p90", "p99": "p99", "max": "max"}


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".json":
        return False
    head = source.head_text
    return '"aiperf_version"' in head and '"metrics_phase"' in head or (
        source.path.name == FILE and '"aiperf_version"' in head)


def _files(source: InputSource) -> list[Path]:
    if not source.is_dir:
        return [source.path]
    if (source.path / FILE).is_file():
        return [source.path / FILE]
    return sorted(p / FILE for p in source.path.iterdir() if p.is_dir() and (p / FILE).is_file())


def _load_key(doc: dict[str, Any]) -> tuple[float, str]:
    phase = profiling_phase(doc) or {}
    for key in ("rate", "concurrency"):
        v = phase.get(key)
        if isinstance(v, int | float):
            return float(v), key
    return math.inf, "unknown"


def _gpu_rows(f: Path, run_id: str, step: int, prov: Provenance) -> list[dict[str, object]]:
    """The GPU telemetry AIPerf wrote in the same artefact folder, as the same step: the summary's
    ``telemetry_data`` (AIPerf's statistics over the profiling phase), else its per-scrape JSONL."""
    summary = f.parent / AIPERF_FILE
    doc = read_json(summary, "AIPerf export") if summary.is_file() else {}
    if (doc.get("telemetry_data") or {}).get("endpoints"):
        prov.add("gpu_telemetry", f"step {step}: GPU telemetry statistics from {summary.name}", level="info")
        return aiperf_telemetry_rows(doc, path=summary, run_id=run_id, step=step)
    jsonl = sorted(p for p in f.parent.glob(f"*{JSONL_SUFFIX}") if p.is_file())
    if jsonl:
        prov.add("gpu_telemetry", f"step {step}: GPU telemetry samples from {jsonl[0].name} (the whole run, warm-up "
                 "included)", level="info")
        return jsonl_telemetry_rows(jsonl[0], run_id=run_id, step=step)
    return []


def load(source: InputSource, *, run_id: str | None = None) -> ServerMetrics:
    files = _files(source)
    if not files:
        raise InputError(f"no {FILE} in the folder or its subfolders", path=source.path)
    docs = []
    for f in files:
        doc = json.loads(f.read_text())
        if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
            raise UnsupportedVersionError("not an AIPerf server-metrics export", tool=TOOL,
                                          version=doc.get("aiperf_version") if isinstance(doc, dict) else None,
                                          missing=["metrics"], path=f)
        docs.append((f, doc))
    docs.sort(key=lambda fd: (_load_key(fd[1]), str(fd[0])))
    prov = new_provenance(source, format=NAME, tool=TOOL)
    rid = run_id or (source.path.name if source.is_dir and len(files) > 1 else files[0].parent.name)
    rows: list[dict[str, object]] = []
    steps_text = []
    for step, (f, doc) in enumerate(docs):
        load_value, unit = _load_key(doc)
        steps_text.append(f"{step}: {f.parent.name} ({unit} {load_value:g})")
        for name, fam in doc["metrics"].items():
            kind = fam.get("type") if isinstance(fam, dict) else None
            for series in fam.get("series", []) if isinstance(fam, dict) else []:
                stats = series.get("stats") or {}
                labels = {k: str(v) for k, v in (series.get("labels") or {}).items()}
                labels.setdefault("instance", str(series.get("endpoint_url", "")))
                instance, gpu, rest = split_labels(labels)
                mapping = map_metric(name)
                pairs = ([("increase", stats.get("total"))] if kind == "counter"
                         else [(stat, stats.get(k)) for k, stat in GAUGE_STATS.items()])
                for stat, value in pairs:
                    if not isinstance(value, int | float) or math.isnan(value):
                        continue
                    rows.append({
                        "run_id": rid, "step": step, "time_s": None,
                        "signal": mapping.signal if mapping else None, "metric": name, "stat": stat,
                        "value": float(value) * (mapping.scale if mapping else 1.0),
                        "instance": instance, "gpu": gpu, "labels": rest, "source_row": None,
                    })
        rows += _gpu_rows(f, rid, step, prov)
    if any(r["metric"] in FIELDS for r in rows):
        rows = mark_idle_gpus(rows, prov)
    versions = sorted({str(d.get("aiperf_version")) for _, d in docs if d.get("aiperf_version")})
    prov.tool_version = ", ".join(versions) or None
    prov.files = [str(f) for f, _ in docs]
    prov.add("window_statistics", "AIPerf's statistics over each run's profiling phase, a step per run in offered-load "
             f"order: {'; '.join(steps_text)}", level="info", count=len(docs))
    return finish_metrics(rows, source, prov)


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="metrics",
        needs=f"AIPerf's {FILE} (aiperf_version, metrics_phase, metrics: {{name: {{type, series: [{{stats}}]}}}}); "
        "an artefact folder or a folder of them with --format aiperf-server-metrics",
        sniff=sniff,
        load=load,
    )
)
