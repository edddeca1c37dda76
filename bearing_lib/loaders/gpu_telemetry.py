"""GPU telemetry that NVIDIA AIPerf and GenAI-Perf export, as server metrics.

Both tools scrape a DCGM exporter (or, AIPerf ≥ 0.13, pynvml / amdsmi) while they run and
write what they saw beside the latency export. Three shapes, each read as the tool's source
writes it (docs/formats-server-metrics.md, "GPU telemetry of AIPerf and GenAI-Perf"):

- GenAI-Perf ``profile_export_genai_perf.json`` → ``telemetry_stats``: ``{field: {"unit": U,
  "<gpu label>": {avg, p1 … p99, min, max, std}}}`` (triton-inference-server/perf_analyzer
  ``genai-perf/genai_perf/metrics/telemetry_statistics.py``, ``TelemetryStatistics``; the
  constant fields ``total_gpu_memory`` and ``gpu_power_limit`` carry ``avg`` only). GPUs are
  keyed by the DCGM ``gpu`` label alone (``dcgm_telemetry_data_collector.py``,
  ``_extract_gpu_label``).
- AIPerf ``profile_export_aiperf.json`` → ``telemetry_data``: ``{summary, endpoints: {endpoint:
  {gpus: {"gpu_<i>": {gpu_index, gpu_name, gpu_uuid, hostname, metrics: {field: {unit, avg,
  p1 … p99, min, max, std}}}}}}}`` (ai-dynamo/aiperf ``aiperf/common/models/export_models.py``,
  ``TelemetryExportData``; ``aiperf/gpu_telemetry/accumulator.py``, ``export_results``: gauges
  over the profiling phase, counters as the increase from the last sample before it).
- AIPerf ``gpu_telemetry_export.jsonl``: one line per GPU per scrape, ``{timestamp_ns,
  telemetry_source_url, gpu_index, gpu_uuid, gpu_model_name, hostname, …, telemetry_data:
  {field: value}}`` (``aiperf/gpu_telemetry/jsonl_writer.py``, ``TelemetryRecord``), values
  already in the units of ``GPU_TELEMETRY_METRICS_CONFIG``.

Field names changed: GenAI-Perf and AIPerf before 0.13 write ``gpu_utilization`` (%),
``gpu_memory_used`` / ``gpu_memory_free`` / ``gpu_memory_total`` (GenAI-Perf:
``total_gpu_memory``) in GB, ``gpu_power_usage`` (W); AIPerf 0.13 namespaces them per vendor
(``nvidia_gpu_utilization``, ``nvidia_memory_used``, ``nvidia_power_usage``; AMD
``amd_gfx_activity``, ``amd_memory_used``, ``amd_power``) and no longer collects FB_FREE or
FB_TOTAL (``aiperf/gpu_telemetry/constants.py``, ``DCGM_TO_FIELD_MAPPING``). "GB" is 10⁹ bytes:
both tools multiply DCGM's MiB by 1.048576e-3 (``SCALING_FACTORS``).

A DCGM exporter reports every GPU of its node, and an exporter reached through a cluster
service may be any node's: a GPU whose memory in use stayed at 0 the whole window holds no
model and serves nothing. Its rows keep ``signal`` null (finding ``idle_gpus``), so seven idle
GPUs of an eight-GPU node do not dilute the serving GPU's utilisation to an eighth.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import BadValueError, InputError, SchemaError
from bearing_lib.common.files import read_json
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.servermetrics import ServerMetrics
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders.genai_perf import profiling_phase
from bearing_lib.loaders.idle_gpus import gpu_key, leave_out_idle_gpus
from bearing_lib.loaders.prometheus import finish_metrics
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

__all__ = [
    "FIELDS",
    "TelemetryField",
    "aiperf_telemetry_rows",
    "genai_perf_telemetry_rows",
    "jsonl_telemetry_rows",
    "mark_idle_gpus",
]

NAME_AIPERF = "aiperf-gpu-telemetry"
NAME_GENAI = "genai-perf-gpu-telemetry"
TOOL_AIPERF = "NVIDIA AIPerf"
TOOL_GENAI = "NVIDIA GenAI-Perf"
AIPERF_FILE = "profile_export_aiperf.json"
GENAI_FILE = "profile_export_genai_perf.json"
JSONL_SUFFIX = "gpu_telemetry.jsonl"
JSONL_FILE = "gpu_telemetry_export.jsonl"
STATS = {"avg": "mean", "p50": "median", "p90": "p90", "p99": "p99", "max": "max"}


@dataclass(frozen=True)
class TelemetryField:
    """A tool's telemetry field bearing maps: the canonical signal, the units the tool may state and
    the factor each takes to the signal's unit, and the unit the tool's source writes."""

    signal: str
    units: tuple[tuple[str, float], ...]
    default_unit: str

    def scale(self, unit: str | None) -> float | None:
        """The factor for ``unit`` (the source's own unit when the file states none); None if unknown."""
        u = (unit or self.default_unit).strip()
        return dict(self.units).get(u, dict((k.lower(), v) for k, v in self.units).get(u.lower()))


_PERCENT = (("%", 0.01), ("percent", 0.01))
_BYTES = (("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("GiB", 2.0**30), ("MiB", 2.0**20), ("B", 1.0), ("bytes", 1.0))
_WATTS = (("W", 1.0), ("mW", 1e-3), ("kW", 1e3))

FIELDS: dict[str, TelemetryField] = {
    # GenAI-Perf (genai_perf/metrics/telemetry_metrics.py, TelemetryMetricName) and AIPerf before 0.13
    # (aiperf/gpu_telemetry/constants.py, DCGM_TO_FIELD_MAPPING: DCGM_FI_DEV_GPU_UTIL, FB_USED, FB_FREE, FB_TOTAL,
    # POWER_USAGE)
    "gpu_utilization": TelemetryField("gpu_utilization", _PERCENT, "%"),
    "gpu_memory_used": TelemetryField("gpu_memory_used_bytes", _BYTES, "GB"),
    "gpu_memory_free": TelemetryField("gpu_memory_free_bytes", _BYTES, "GB"),
    "gpu_memory_total": TelemetryField("gpu_memory_total_bytes", _BYTES, "GB"),
    "total_gpu_memory": TelemetryField("gpu_memory_total_bytes", _BYTES, "GB"),
    "gpu_power_usage": TelemetryField("gpu_power_watts", _WATTS, "W"),
    # AIPerf 0.13, namespaced per vendor (NVIDIA_TELEMETRY_FIELD_ALIASES maps the old names to these)
    "nvidia_gpu_utilization": TelemetryField("gpu_utilization", _PERCENT, "%"),
    "nvidia_memory_used": TelemetryField("gpu_memory_used_bytes", _BYTES, "GB"),
    "nvidia_power_usage": TelemetryField("gpu_power_watts", _WATTS, "W"),
    # AMD through amdsmi (aiperf/gpu_telemetry/amdsmi_collector.py): gfx_activity is the graphics engine's busy
    # share, amdsmi's counterpart of NVML's utilization.gpu
    "amd_gfx_activity": TelemetryField("gpu_utilization", _PERCENT, "%"),
    "amd_memory_used": TelemetryField("gpu_memory_used_bytes", _BYTES, "GB"),
    "amd_power": TelemetryField("gpu_power_watts", _WATTS, "W"),
}
"""Telemetry field names of AIPerf and GenAI-Perf that map to a canonical signal (others load with signal null)."""


def _where(path: Path, field: str) -> dict[str, object]:
    return {"path": path, "field": field}


def _scaled(name: str, unit: object, path: Path, field: str) -> tuple[str | None, float]:
    """(signal, factor) of a telemetry field whose file states ``unit``; unmapped names give (None, 1)."""
    spec = FIELDS.get(name)
    if spec is None:
        return None, 1.0
    if unit is not None and not isinstance(unit, str):
        raise BadValueError(f"expected the unit as text (e.g. {spec.default_unit!r}), found {unit!r}",
                            **_where(path, field))
    factor = spec.scale(unit)
    if factor is None:
        raise BadValueError(f"unit {unit!r} of {name} is not one bearing converts to {spec.signal}; expected one of "
                            f"{', '.join(u for u, _ in spec.units)}", **_where(path, field))
    return spec.signal, factor


def _stat_rows(name: str, stats: object, *, unit: object, path: Path, field: str, base: dict[str, object]
               ) -> list[dict[str, object]]:
    if not isinstance(stats, dict):
        raise BadValueError(f"expected an object of statistics (avg, p50, p90, p99, max), found "
                            f"{type(stats).__name__}", **_where(path, field))
    signal, factor = _scaled(name, unit, path, field)
    rows = []
    for key, stat in STATS.items():
        value = stats.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadValueError(f"expected a number, found {value!r}", **_where(path, f"{field}.{key}"))
        if math.isnan(value):
            continue
        rows.append({**base, "signal": signal, "metric": name, "stat": stat, "value": float(value) * factor})
    return rows


def genai_perf_telemetry_rows(doc: dict[str, Any], *, path: Path, run_id: str, step: int | None
                              ) -> list[dict[str, object]]:
    """Rows of GenAI-Perf's ``telemetry_stats`` (window statistics per field and GPU label)."""
    stats = doc.get("telemetry_stats")
    if not isinstance(stats, dict):
        raise SchemaError("the GenAI-Perf export holds no telemetry_stats object (GenAI-Perf writes it only when "
                          "--server-metrics-url reached a DCGM exporter)", path=path, field="telemetry_stats")
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    urls = (cfg.get("endpoint") or {}).get("server_metrics_urls") if isinstance(cfg.get("endpoint"), dict) else None
    instance = urls[0] if isinstance(urls, list) and len(urls) == 1 and isinstance(urls[0], str) else None
    rows: list[dict[str, object]] = []
    for name, per_gpu in stats.items():
        field = f"telemetry_stats.{name}"
        if not isinstance(per_gpu, dict):
            raise BadValueError(f"expected {{unit, <gpu>: {{avg, …}}}}, found {type(per_gpu).__name__}",
                                **_where(path, field))
        for gpu, s in per_gpu.items():
            if gpu == "unit":
                continue
            base = {"run_id": run_id, "step": step, "time_s": None, "instance": instance, "gpu": str(gpu),
                    "labels": None, "source_row": None}
            rows += _stat_rows(name, s, unit=per_gpu.get("unit"), path=path, field=f"{field}.{gpu}", base=base)
    return rows


def aiperf_telemetry_rows(doc: dict[str, Any], *, path: Path, run_id: str, step: int | None
                          ) -> list[dict[str, object]]:
    """Rows of AIPerf's ``telemetry_data`` (window statistics per endpoint, GPU and field)."""
    tel = doc.get("telemetry_data")
    if not isinstance(tel, dict) or not isinstance(tel.get("endpoints"), dict):
        raise SchemaError("the AIPerf export holds no telemetry_data.endpoints object (AIPerf writes it when GPU "
                          "telemetry is on: --gpu-telemetry)", path=path, field="telemetry_data.endpoints")
    rows: list[dict[str, object]] = []
    for endpoint, data in tel["endpoints"].items():
        gpus = data.get("gpus") if isinstance(data, dict) else None
        if not isinstance(gpus, dict):
            raise BadValueError("expected {gpus: {gpu_<i>: {...}}}", **_where(path, f"telemetry_data.endpoints."
                                                                                    f"{endpoint}"))
        for key, gpu in gpus.items():
            field = f"telemetry_data.endpoints.{endpoint}.gpus.{key}"
            if not isinstance(gpu, dict) or not isinstance(gpu.get("metrics"), dict):
                raise BadValueError("expected {gpu_index, gpu_uuid, hostname, metrics: {field: {unit, avg, …}}}",
                                    **_where(path, field))
            labels = ",".join(f"{k}={gpu[k]}" for k in ("gpu_name", "gpu_uuid", "hostname", "pod_name")
                              if gpu.get(k) not in (None, ""))
            base = {"run_id": run_id, "step": step, "time_s": None, "instance": str(endpoint),
                    "gpu": str(gpu.get("gpu_index", key)), "labels": labels or None, "source_row": None}
            for name, s in gpu["metrics"].items():
                unit = s.get("unit") if isinstance(s, dict) else None
                rows += _stat_rows(name, s, unit=unit, path=path, field=f"{field}.metrics.{name}", base=base)
    return rows


def jsonl_telemetry_rows(path: Path, *, run_id: str, step: int | None) -> list[dict[str, object]]:
    """Rows of AIPerf's ``gpu_telemetry_export.jsonl`` (a sample per GPU per scrape, epoch seconds)."""
    rows: list[dict[str, object]] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text:
                continue
            try:
                rec = json.loads(text)
            except (ValueError, UnicodeDecodeError) as exc:
                raise BadValueError(f"line {lineno} is not a JSON object ({exc})", path=path, row=lineno) from None
            data = rec.get("telemetry_data") if isinstance(rec, dict) else None
            t = rec.get("timestamp_ns") if isinstance(rec, dict) else None
            if not isinstance(data, dict) or isinstance(t, bool) or not isinstance(t, int | float):
                raise SchemaError("expected a TelemetryRecord {timestamp_ns, telemetry_source_url, gpu_index, …, "
                                  "telemetry_data: {field: value}}", path=path, row=lineno,
                                  field="timestamp_ns" if isinstance(data, dict) else "telemetry_data")
            labels = ",".join(f"{k}={rec[k]}" for k in ("gpu_model_name", "gpu_uuid", "hostname", "pod_name")
                              if rec.get(k) not in (None, ""))
            base = {"run_id": run_id, "step": step, "time_s": t / 1e9, "instance": rec.get("telemetry_source_url"),
                    "gpu": None if rec.get("gpu_index") is None else str(rec["gpu_index"]),
                    "labels": labels or None, "source_row": lineno, "stat": "sample"}
            for name, value in data.items():
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise BadValueError(f"expected a number, found {value!r}", path=path, row=lineno,
                                        field=f"telemetry_data.{name}")
                signal, factor = _scaled(name, None, path, f"telemetry_data.{name}")
                rows.append({**base, "signal": signal, "metric": name, "value": float(value) * factor})
    return rows


def _uuid(r: dict[str, object]) -> str | None:
    return next((p[len("gpu_uuid="):] for p in str(r["labels"] or "").split(",") if p.startswith("gpu_uuid=")), None)


def _one_copy_per_gpu(rows: list[dict[str, object]], prov: Provenance) -> list[dict[str, object]]:
    """One exporter's copy of each GPU (by ``gpu_uuid``) per run and step. AIPerf 0.13 scrapes its default DCGM
    endpoints (localhost:9400, :9401) besides those given, so one exporter named two ways reports every GPU twice
    (seen on AIPerf 0.13.0's own export: ``localhost:9400`` and ``127.0.0.1:9400``)."""
    first: dict[tuple[object, ...], object] = {}
    dropped: set[tuple[object, ...]] = set()
    out = []
    for r in rows:
        u = _uuid(r)
        if u is None:
            out.append(r)
            continue
        key = (r["run_id"], r["step"], u)
        owner = first.setdefault(key, r["instance"])
        if owner == r["instance"]:
            out.append(r)
        else:
            dropped.add((u, r["instance"], owner))
    if dropped:
        shown = "; ".join(sorted({f"{u} via {i} (kept {o})" for u, i, o in dropped}))
        prov.add("duplicate_gpus", f"the same GPU (gpu_uuid) came from more than one exporter URL; one copy kept: "
                 f"{shown}", level="info", count=len({d[0] for d in dropped}))
    return out


def mark_idle_gpus(rows: list[dict[str, object]], prov: Provenance) -> list[dict[str, object]]:
    """Rows with the derived memory share per GPU, one copy of each GPU, and those of GPUs that held nothing
    (memory in use 0 the whole window) turned to signal null (:func:`bearing_lib.loaders.idle_gpus.leave_out_idle_gpus`,
    the rule every GPU loader applies), with findings saying which."""
    rows = leave_out_idle_gpus(_one_copy_per_gpu(rows, prov), prov)
    return rows + _memory_share(rows, prov)


def _memory_share(rows: list[dict[str, object]], prov: Provenance) -> list[dict[str, object]]:
    """``gpu_memory_used_fraction`` per GPU: each statistic (or sample) of the memory in use over the total, the
    total being the tool's own total field, else used + free (their means for window statistics, which is exact
    as used + free is the GPU's constant frame buffer; the same scrape's for samples)."""
    mem = ("gpu_memory_used_bytes", "gpu_memory_free_bytes", "gpu_memory_total_bytes")
    by: dict[tuple[object, ...], dict[str, dict[tuple[object, object], float]]] = {}
    for r in rows:
        if r["signal"] in mem:
            key = (*gpu_key(r), r["step"])
            by.setdefault(key, {}).setdefault(str(r["signal"]), {})[(r["stat"], r["time_s"])] = float(r["value"])  # type: ignore[arg-type]
    out: list[dict[str, object]] = []
    no_total = 0
    for (run_id, instance, gpu, labels, step), sig in by.items():
        used, free, total = (sig.get(m, {}) for m in mem)
        for (stat, t), u in used.items():
            point = (stat, t) if stat == "sample" else ("mean", None)
            if point in total:
                den = total[point]
            elif point in free and point in used:
                den = used[point] + free[point]
            else:
                no_total += 1
                continue
            if den > 0:
                out.append({"run_id": run_id, "step": step, "time_s": t, "signal": "gpu_memory_used_fraction",
                            "metric": "memory used / total", "stat": stat, "value": u / den, "instance": instance,
                            "gpu": gpu, "labels": labels, "source_row": None})
    if no_total:
        prov.add("gpu_memory_total_unknown", "GPU memory in use is given but neither the total nor the free memory "
                 "(AIPerf 0.13 collects no FB_FREE or FB_TOTAL: aiperf/gpu_telemetry/constants.py), so there is no "
                 "used share for the memory rule MEM-1", level="info", count=no_total)
    return out


# --------------------------------------------------------------------------- formats
def _run_files(source: InputSource, name: str) -> list[tuple[Path, Path | None]]:
    """(file, AIPerf's per-scrape JSONL when that is what is read) per run: the file given, an artefact folder's
    summary export (AIPerf: else its ``*gpu_telemetry.jsonl``), or each artefact subfolder's (per-rate runs)."""
    def in_folder(folder: Path) -> tuple[Path, Path | None] | None:
        if (folder / name).is_file():
            return folder / name, None
        jsonl = sorted(p for p in folder.glob(f"*{JSONL_SUFFIX}") if p.is_file()) if name == AIPERF_FILE else []
        return (jsonl[0], jsonl[0]) if jsonl else None

    if not source.is_dir:
        return [(source.path, source.path if source.path.name.endswith(".jsonl") else None)]
    here = in_folder(source.path)
    if here is not None:
        return [here]
    return [r for p in sorted(source.path.iterdir()) if p.is_dir() and (r := in_folder(p)) is not None]


def _load_of(doc: dict[str, Any]) -> tuple[float, str]:
    """The run's offered load, where the export states it (AIPerf >= 0.13 ``input_config.phases``, older AIPerf
    ``input_config.loadgen``, GenAI-Perf ``input_config.perf_analyzer.stimulus`` or ``input_config``), to order the
    runs of a folder; (inf, "unknown") otherwise."""
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    places = [profiling_phase(doc) or {}, cfg.get("loadgen"), (cfg.get("perf_analyzer") or {}).get("stimulus")
              if isinstance(cfg.get("perf_analyzer"), dict) else None, cfg]
    for place in (p for p in places if isinstance(p, dict)):
        for key, unit in (("rate", "rps"), ("request_rate", "rps"), ("concurrency", "concurrency")):
            v = place.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool):
                return float(v), unit
    return math.inf, "unknown"


def _load(source: InputSource, *, name: str, tool: str, fmt: str, run_id: str | None) -> ServerMetrics:
    runs = _run_files(source, name)
    if not runs:
        raise InputError(f"no {name} in the folder or its subfolders", path=source.path)
    prov = new_provenance(source, format=fmt, tool=tool)
    docs: list[tuple[tuple[float, str], Path, dict[str, Any] | None, Path | None]] = []
    for f, jsonl in runs:
        if jsonl is not None:
            docs.append(((math.inf, "unknown"), f, None, jsonl))
            continue
        doc = read_json(f, f"{tool} export")
        docs.append((_load_of(doc), f, doc, jsonl))
    docs.sort(key=lambda d: (d[0], str(d[1])))
    several = len(docs) > 1
    rid = run_id or (source.path.name if source.is_dir and several else docs[0][1].parent.name)
    rows: list[dict[str, object]] = []
    steps_text = []
    for step, ((value, unit), f, doc, jsonl) in enumerate(docs):
        steps_text.append(f"{step}: {f.parent.name} ({unit} {value:g})")
        if jsonl is not None:
            rows += jsonl_telemetry_rows(jsonl, run_id=rid, step=step)
            prov.add("telemetry_samples", f"step {step}: AIPerf's per-scrape samples ({jsonl.name}; the whole run, "
                     "warm-up included)", level="info")
        elif name == GENAI_FILE:
            rows += genai_perf_telemetry_rows(doc or {}, path=f, run_id=rid, step=step)
        else:
            rows += aiperf_telemetry_rows(doc or {}, path=f, run_id=rid, step=step)
    if not rows:
        raise InputError(f"{tool} wrote no GPU telemetry here (telemetry_data.endpoints empty: no DCGM exporter "
                         "answered)", path=source.path)
    versions = sorted({str(d.get("aiperf_version")) for _, _, d, _ in docs if d and d.get("aiperf_version")})
    prov.tool_version = ", ".join(versions) or None
    prov.files = [str(f) for _, f, _, _ in docs]
    prov.add("window_statistics", f"{tool}'s GPU telemetry, a step per run in offered-load order: "
             f"{'; '.join(steps_text)}", level="info", count=len(docs))
    rows = mark_idle_gpus(rows, prov)
    return finish_metrics(rows, source, prov)


def load_aiperf(source: InputSource, *, run_id: str | None = None) -> ServerMetrics:
    """AIPerf's GPU telemetry: ``telemetry_data`` of the summary, or the per-scrape JSONL when it is there."""
    return _load(source, name=AIPERF_FILE, tool=TOOL_AIPERF, fmt=NAME_AIPERF, run_id=run_id)


def load_genai(source: InputSource, *, run_id: str | None = None) -> ServerMetrics:
    """GenAI-Perf's GPU telemetry: ``telemetry_stats`` of the summary export."""
    return _load(source, name=GENAI_FILE, tool=TOOL_GENAI, fmt=NAME_GENAI, run_id=run_id)


def _never(source: InputSource) -> bool:
    """GenAI-Perf's summary is read as a load test unless --format asks for its telemetry."""
    return False


def sniff_jsonl(source: InputSource) -> bool:
    """AIPerf's ``gpu_telemetry_export.jsonl`` (the summaries hold load-test results first: --format picks them)."""
    if source.is_dir or not source.path.name.endswith(".jsonl"):
        return False
    head = source.head_text
    return '"telemetry_source_url"' in head and '"telemetry_data"' in head and '"timestamp_ns"' in head


register(
    FormatSpec(
        name=NAME_AIPERF,
        tool=TOOL_AIPERF,
        kind="metrics",
        needs=f"AIPerf's {JSONL_FILE} (timestamp_ns, telemetry_source_url, gpu_index, telemetry_data), or with "
        f"--format {NAME_AIPERF} its {AIPERF_FILE} (telemetry_data.endpoints), an artefact folder or a folder of them",
        sniff=sniff_jsonl,
        load=load_aiperf,
    )
)

register(
    FormatSpec(
        name=NAME_GENAI,
        tool=TOOL_GENAI,
        kind="metrics",
        needs=f"with --format {NAME_GENAI}: GenAI-Perf's {GENAI_FILE} with telemetry_stats ({{field: {{unit, <gpu>: "
        "{avg, …}}}}), an artefact folder or a folder of them",
        sniff=_never,
        load=load_genai,
    )
)
