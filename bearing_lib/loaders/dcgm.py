"""DCGM exporter metrics as a CSV: GPU utilisation and memory over time.

``dcgm-exporter`` itself serves Prometheus text (read that with ``prometheus-text``); this
format is the table operators export from it (a Prometheus/Grafana CSV download, or a
``dcgmi dmon`` capture converted to CSV): one row per sample and GPU, columns

- a time column: ``timestamp``, ``time`` or ``Time`` — epoch seconds (epoch milliseconds
  when above 10^11) or an ISO-8601 time (``Z`` or an offset; a time without a zone is read as
  UTC and the provenance says so);
- optionally ``gpu`` (or ``GPU``, ``gpu_index``) and ``Hostname`` (or ``hostname``,
  ``instance``, ``pod``);
- one column per DCGM field, named as the exporter names it: ``DCGM_FI_DEV_GPU_UTIL``
  (percent), ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_FB_FREE`` (MiB),
  ``DCGM_FI_DEV_POWER_USAGE`` (W), ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0..1), and any other
  ``DCGM_FI_*`` (kept with signal null).

When both FB_USED and FB_FREE are present, ``gpu_memory_used_fraction`` = used / (used +
free) is derived per row. A GPU whose FB_USED stays 0 the whole file holds no model (the exporter
reports every GPU of its node): its rows keep ``signal`` null, with the warning ``idle_gpus``
naming it (:func:`bearing_lib.loaders.idle_gpus.leave_out_idle_gpus`, the rule of every GPU loader).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import polars as pl

from bearing_lib.common.errors import BadValueError, SchemaError
from bearing_lib.data.servermetrics import MIB, ServerMetrics
from bearing_lib.loaders._common import new_provenance, read_csv_checked, table_columns
from bearing_lib.loaders.idle_gpus import leave_out_idle_gpus
from bearing_lib.loaders.prometheus import finish_metrics, sample_row
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "NVIDIA DCGM exporter"
FORMAT = "dcgm-csv"
TIME_COLUMNS = ("timestamp", "time", "Time")
GPU_COLUMNS = ("gpu", "GPU", "gpu_index")
HOST_COLUMNS = ("Hostname", "hostname", "instance", "pod")


def _columns(source: InputSource) -> list[str]:
    try:
        return table_columns(source)
    except Exception:  # noqa: BLE001 - a sniffer never raises
        return []


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".csv", ".tsv", ""):
        return False
    cols = _columns(source)
    return any(c in cols for c in TIME_COLUMNS) and any(c.startswith("DCGM_FI_") for c in cols)


def _epoch_seconds(frame: pl.DataFrame, col: str, path: str) -> tuple[list[float], bool]:
    """(epoch seconds per row, whether a zone-less ISO time was read as UTC). Each value is read on
    its own: a number is epoch seconds (milliseconds above 10^11), anything else ISO-8601."""
    out: list[float] = []
    naive_seen = False
    for raw, line in zip(frame[col].to_list(), frame["source_row"].to_list(), strict=True):
        text = (raw or "").strip()
        try:
            v = float(text)
        except ValueError:
            v = None
        if v is not None and math.isfinite(v):
            out.append(v / 1000.0 if v > 1e11 else v)
            continue
        try:
            t = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise BadValueError(
                f"expected epoch seconds or an ISO-8601 time, found {raw!r}", path=path, row=int(line), field=col
            ) from None
        if t.tzinfo is None:
            naive_seen = True
            t = t.replace(tzinfo=UTC)
        out.append(t.timestamp())
    return out, naive_seen


def load(source: InputSource, *, run_id: str | None = None) -> ServerMetrics:
    """A DCGM CSV → server metrics (one row per sample, GPU and field)."""
    cols = _columns(source)
    tcol = next((c for c in TIME_COLUMNS if c in cols), None)
    fields = [c for c in cols if c.startswith("DCGM_FI_")]
    if tcol is None or not fields:
        raise SchemaError(
            f"a DCGM CSV needs a time column ({', '.join(TIME_COLUMNS)}) and DCGM_FI_* columns; found {cols}",
            path=source.path, field=tcol or "DCGM_FI_*",
        )
    wanted = {tcol: pl.String(), **{f: pl.Float64() for f in fields}}
    frame = read_csv_checked(source, wanted)
    prov = new_provenance(source, format=FORMAT, tool=TOOL)
    t, naive = _epoch_seconds(frame, tcol, str(source.path))
    if naive:
        prov.add("timezone_assumed", f"{tcol} has times without a zone: read as UTC")
    gcol = next((c for c in GPU_COLUMNS if c in frame.columns), None)
    hcol = next((c for c in HOST_COLUMNS if c in frame.columns), None)
    rid = run_id or source.path.parent.name
    rows: list[dict[str, object]] = []
    gpus = frame[gcol].cast(pl.String).to_list() if gcol else [None] * frame.height
    hosts = frame[hcol].cast(pl.String).to_list() if hcol else [None] * frame.height
    lines = frame["source_row"].to_list()
    times = t
    values = {f: frame[f].to_list() for f in fields}
    for i in range(frame.height):
        labels = {k: v for k, v in (("gpu", gpus[i]), ("Hostname", hosts[i])) if v is not None}
        for f in fields:
            v = values[f][i]
            if v is not None:
                rows.append(sample_row(f, labels, v, times[i], lines[i], rid))
        used, free = values.get("DCGM_FI_DEV_FB_USED"), values.get("DCGM_FI_DEV_FB_FREE")
        if used is not None and free is not None and used[i] is not None and free[i] is not None:
            total = used[i] + free[i]
            if total > 0:
                row = sample_row("DCGM_FI_DEV_FB_USED", labels, 0.0, times[i], lines[i], rid)
                row |= {"signal": "gpu_memory_used_fraction", "metric": "FB_USED/(FB_USED+FB_FREE)",
                        "value": used[i] / total}
                rows.append(row)
    prov.time_origin = "epoch"
    prov.add("units", f"FB_USED/FB_FREE in MiB (× {MIB} → bytes); GPU_UTIL in % (÷ 100)", level="info")
    return finish_metrics(leave_out_idle_gpus(rows, prov), source, prov)


register(
    FormatSpec(
        name=FORMAT,
        tool=TOOL,
        kind="metrics",
        needs="a CSV with a time column (timestamp/time) and DCGM_FI_* field columns (e.g. DCGM_FI_DEV_GPU_UTIL, "
        "DCGM_FI_DEV_FB_USED)",
        sniff=sniff,
        load=load,
    )
)
