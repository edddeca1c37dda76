"""Prometheus metrics: text-exposition scrapes and query-API JSON, as server metrics.

Two formats, both loading into :class:`~bearing_lib.data.servermetrics.ServerMetrics`:

- ``prometheus-text``: what ``curl http://vllm:8000/metrics`` (or llama.cpp's ``llama-server
  --metrics``, SGLang's, TGI's, a DCGM exporter's ``:9400/metrics``) prints, the Prometheus
  text exposition format. One file is one snapshot; a folder of such files (``*.prom``,
  ``*.txt``, ``*.metrics``) is a series.
  Parsing is ``prometheus_client``'s own parser (the reference implementation of the
  format), not a hand-written one. Each sample's time is its exposition timestamp when
  written; else, for a file in a series, the epoch seconds or the ISO-8601 UTC time in the
  file's name (``metrics-1733077200.prom``, ``scrape-20261201T203000Z.prom``); else the
  ``time_s`` option (one snapshot). A series file without any of them is an error naming it.
- ``prometheus-query-json``: the JSON the HTTP API returns for ``/api/v1/query_range``
  (``resultType`` ``matrix``) or ``/api/v1/query`` (``vector``): every series with its labels
  and ``[time, "value"]`` pairs.

Histogram and summary series (``_bucket``, ``_sum``, ``_count``, quantiles) are kept with
``signal`` null: bearing's latency comes from the load test, not from the server's histograms.
A DCGM exporter's GPU whose ``DCGM_FI_DEV_FB_USED`` stays 0 over the input holds no model: its rows
keep ``signal`` null, with the warning ``idle_gpus`` naming it
(:func:`bearing_lib.loaders.idle_gpus.leave_out_idle_gpus`, the rule of every GPU loader).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, SchemaError, UnsupportedVersionError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.servermetrics import (
    DERIVED,
    ServerMetrics,
    conform_metrics,
    derive_signals,
    engine_of,
    map_metric,
)
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders.idle_gpus import leave_out_idle_gpus
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL_TEXT = "Prometheus text exposition"
TOOL_QUERY = "Prometheus HTTP API"
SERIES_SUFFIXES = (".prom", ".txt", ".metrics")
_SAMPLE_RE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{[^}]*\})?\s+\S+")
_EPOCH_RE = re.compile(r"(?<!\d)(\d{10}(?:\.\d+)?)(?!\d)")
_ISO_RE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})T(\d{2}):?(\d{2}):?(\d{2})Z")
INSTANCE_LABELS = ("pod", "instance", "Hostname", "hostname")
GPU_LABELS = ("gpu", "GPU_I_ID", "device")


# --------------------------------------------------------------------------- shared
def split_labels(labels: dict[str, str]) -> tuple[str | None, str | None, str | None]:
    """(instance, gpu, the other labels as sorted ``k=v`` pairs joined by commas)."""
    instance = next((labels[k] for k in INSTANCE_LABELS if labels.get(k)), None)
    gpu = next((labels[k] for k in GPU_LABELS if labels.get(k) not in (None, "")), None)
    used = {k for k in INSTANCE_LABELS if labels.get(k) == instance} | {k for k in GPU_LABELS if labels.get(k) == gpu}
    rest = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in used)
    return instance, gpu, rest or None


def sample_row(
    name: str, labels: dict[str, str], value: float, time_s: float | None, row: int, run_id: str
) -> dict[str, object]:
    """One canonical metric row (value scaled to the signal's unit when the name is mapped)."""
    mapping = map_metric(name)
    instance, gpu, rest = split_labels(labels)
    return {
        "run_id": run_id,
        "step": None,
        "time_s": time_s,
        "signal": mapping.signal if mapping else None,
        "metric": name,
        "stat": "sample",
        "value": float(value) * (mapping.scale if mapping else 1.0),
        "instance": instance,
        "gpu": gpu,
        "labels": rest,
        "source_row": row,
    }


def time_from_name(name: str) -> float | None:
    """Epoch seconds from a file name holding 10-digit epoch seconds or a compact ISO UTC time."""
    m = _ISO_RE.search(name)
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups())
        return datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()
    m = _EPOCH_RE.search(name)
    return float(m.group(1)) if m else None


def finish_metrics(rows: list[dict[str, object]], source: InputSource, prov: Provenance) -> ServerMetrics:
    """Wrap rows as :class:`ServerMetrics`; the engines, the mapped signals, the derived ones and the unmapped
    names are findings. An input where no name is known says which names it found."""
    if not rows:
        raise InputError("the input holds no metric samples", path=source.path)
    frame = conform_metrics(rows, path=str(source.path))
    derived = derive_signals(frame)
    if derived.height:
        frame = pl.concat([frame, derived])
        for d in DERIVED:
            n = derived.filter(pl.col("metric") == f"{d.numerator}/{d.denominator}").height
            if n:
                prov.add("derived_signal", f"{d.signal} = {d.numerator} / {d.denominator} ({n} sample(s)): "
                         f"{d.meaning}", level="info", count=n)
    prov.sha256 = prov.sha256 or source.sha256
    names = frame["metric"].unique().sort().to_list()
    engines = sorted({e for e in (engine_of(n) for n in names) if e is not None})
    if engines:
        prov.add("engines", f"metric names of: {', '.join(engines)}", level="info")
    mapped = sorted(s for s in frame["signal"].unique().to_list() if s is not None)
    unmapped = frame.filter(frame["signal"].is_null())["metric"].unique().sort().to_list()
    prov.add("signals", f"canonical signals read: {', '.join(mapped) if mapped else 'none'}", level="info")
    if unmapped:
        shown = ", ".join(unmapped[:15]) + (f" … (+{len(unmapped) - 15} more)" if len(unmapped) > 15 else "")
        prov.add("unmapped_metrics", f"kept with signal null (bearing does not interpret them): {shown}", level="info")
    if not mapped:
        shown = ", ".join(names[:12]) + (f" … (+{len(names) - 12} more)" if len(names) > 12 else "")
        prov.add("no_known_signal", f"no metric in the input is one bearing maps to a resource signal; found "
                 f"{len(names)} name(s): {shown} (known: vLLM vllm:*, llama.cpp llamacpp:*, SGLang sglang:*, TGI "
                 "tgi_*, DCGM DCGM_FI_*; docs/formats-server-metrics.md)")
    return ServerMetrics(frame=frame, provenance=prov)


# --------------------------------------------------------------------------- text exposition
def _is_exposition_text(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    typed = any(ln.startswith(("# TYPE ", "# HELP ")) for ln in lines[:200])
    samples = [ln for ln in lines[:200] if not ln.startswith("#")]
    return typed and bool(samples) and all(_SAMPLE_RE.match(ln) for ln in samples[:50])


def _series_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(SERIES_SUFFIXES))


def sniff_text(source: InputSource) -> bool:
    if source.is_dir:
        files = _series_files(source.path)
        others = [p for p in source.path.iterdir() if p.is_file() and p not in files and not p.name.startswith(".")]
        others = [p for p in others if p.name.lower() not in ("readme.md", "attribution.md", "license")]
        return bool(files) and not others and _is_exposition_text(InputSource(files[0]).head_text)
    if source.head.lstrip().startswith((b"{", b"[")):
        return False
    return _is_exposition_text(source.head_text)


def _parse_exposition(text: str, path: Path, *, default_time: float | None, run_id: str) -> list[dict[str, object]]:
    from prometheus_client.parser import text_string_to_metric_families

    rows: list[dict[str, object]] = []
    line_of: dict[str, int] = {}
    for i, ln in enumerate(text.splitlines(), start=1):
        if ln and not ln.startswith("#"):
            line_of.setdefault(ln.split("{", 1)[0].split(" ", 1)[0], i)
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                value = float(s.value)
                if math.isnan(value):
                    continue
                t = float(s.timestamp) if s.timestamp is not None else default_time
                rows.append(sample_row(s.name, dict(s.labels), value, t, line_of.get(s.name, 0), run_id))
    except ValueError as exc:
        row = _first_bad_line(text)
        raise BadValueError(
            f"not a Prometheus text-exposition line ({exc}); expected `name{{label=\"v\"}} value [timestamp_ms]`",
            path=path,
            row=row,
        ) from exc
    return rows


def _first_bad_line(text: str) -> int | None:
    """The 1-based line the parser refuses, found by parsing the sample lines one at a time."""
    from prometheus_client.parser import text_string_to_metric_families

    for i, ln in enumerate(text.splitlines(), start=1):
        if not ln.strip() or ln.startswith("#"):
            continue
        try:
            for fam in text_string_to_metric_families(ln + "\n"):
                list(fam.samples)
        except ValueError:
            return i
    return None


def load_text(source: InputSource, *, time_s: float | None = None, run_id: str | None = None) -> ServerMetrics:
    """A scrape file, or a folder of scrapes (a series), → server metrics.

    ``time_s`` (epoch seconds) dates a single snapshot whose samples carry no timestamp.
    """
    prov = new_provenance(source, format="prometheus-text", tool=TOOL_TEXT)
    rid = run_id or (source.path.name if source.is_dir else source.path.parent.name)
    rows: list[dict[str, object]] = []
    if source.is_dir:
        files = _series_files(source.path)
        if not files:
            raise InputError(f"no scrape files ({', '.join(SERIES_SUFFIXES)}) in the folder", path=source.path)
        undated: list[str] = []
        for p in files:
            text = InputSource(p).read_text()
            t = time_from_name(p.name)
            part = _parse_exposition(text, p, default_time=t, run_id=rid)
            if any(r["time_s"] is None for r in part):
                undated.append(p.name)
            rows += part
        if undated:
            raise BadValueError(
                f"a series needs a time for every scrape: {len(undated)} file(s) have samples without an exposition "
                f"timestamp and no epoch seconds or ISO time (YYYYMMDDTHHMMSSZ) in the file name: "
                f"{', '.join(undated[:5])}",
                path=source.path,
            )
        prov.files = [str(p) for p in files]
        prov.add("series", f"{len(files)} scrape(s) read as one series", level="info")
    else:
        rows = _parse_exposition(source.read_text(), source.path, default_time=time_s, run_id=rid)
        if any(r["time_s"] is None for r in rows):
            prov.add(
                "undated_snapshot",
                "samples carry no timestamp and no time_s was given: one snapshot with time null (it cannot be "
                "aligned to load steps by time)",
                level="info",
            )
    prov.time_origin = "epoch"
    prov.options = {"time_s": time_s} if time_s is not None else {}
    return finish_metrics(leave_out_idle_gpus(rows, prov), source, prov)


# --------------------------------------------------------------------------- query API JSON
def sniff_query(source: InputSource) -> bool:
    if source.is_dir or not source.head.lstrip().startswith(b"{"):
        return False
    head = source.head_text
    return all(f'"{k}"' in head for k in ("status", "data", "resultType", "result"))


def load_query(source: InputSource, *, run_id: str | None = None) -> ServerMetrics:
    """``/api/v1/query_range`` (matrix) or ``/api/v1/query`` (vector) JSON → server metrics."""
    doc = source.json
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise SchemaError("expected a Prometheus API response object with a `data` object", path=source.path,
                          field="data")
    if doc.get("status") != "success":
        raise InputError(
            f"the query did not succeed (status {doc.get('status')!r}, error {doc.get('error')!r})", path=source.path
        )
    data = doc["data"]
    kind = data.get("resultType")
    if kind not in ("matrix", "vector"):
        raise UnsupportedVersionError(
            f"resultType {kind!r}: bearing reads matrix (query_range) and vector (query) results",
            tool=TOOL_QUERY, version=None, missing=["data.resultType matrix|vector"], path=source.path,
        )
    result = data.get("result")
    if not isinstance(result, list):
        raise SchemaError("data.result must be a list of series", path=source.path, field="data.result")
    prov = new_provenance(source, format="prometheus-query-json", tool=TOOL_QUERY)
    rid = run_id or source.path.parent.name
    rows: list[dict[str, object]] = []
    for i, series in enumerate(result, start=1):
        labels = dict(series.get("metric") or {}) if isinstance(series, dict) else None
        if labels is None:
            raise SchemaError(f"series {i} is not an object", path=source.path, row=i, field="data.result")
        name = labels.pop("__name__", None)
        if name is None:
            raise SchemaError(
                f"series {i} has no __name__ label (an expression result, e.g. rate(...), has none): query the raw "
                "metric, or add label_replace(..., \"__name__\", \"<name>\", \"\", \"\")",
                path=source.path, row=i, field="metric.__name__",
            )
        pairs = series.get("values") if kind == "matrix" else [series.get("value")]
        for pair in pairs or []:
            try:
                t, v = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError) as exc:
                raise BadValueError(f"expected [time, \"value\"], found {pair!r}", path=source.path, row=i,
                                    field="values") from exc
            if math.isnan(v):
                continue
            rows.append(sample_row(name, labels, v, t, i, rid))
    prov.add("series", f"{len(result)} series ({kind})", level="info")
    return finish_metrics(leave_out_idle_gpus(rows, prov), source, prov)


register(
    FormatSpec(
        name="prometheus-text",
        tool=TOOL_TEXT,
        kind="metrics",
        needs="Prometheus text exposition (# TYPE lines and `name{labels} value` samples, e.g. vLLM /metrics or "
        "a DCGM exporter scrape), or a folder of such scrapes",
        sniff=sniff_text,
        load=load_text,
    )
)
register(
    FormatSpec(
        name="prometheus-query-json",
        tool=TOOL_QUERY,
        kind="metrics",
        needs='a Prometheus /api/v1/query_range or /api/v1/query response ({"status", "data": {"resultType", '
        '"result"}})',
        sniff=sniff_query,
        load=load_query,
    )
)
