"""kubernetes-sigs inference-perf server-side reports: ``stage_<N>_prometheus_metrics.json``.

inference-perf queries Prometheus over each stage's window and writes, under ``successes``,
window statistics of the vLLM metrics (its vLLM client maps them as follows):

=============================  ==========================================  ===================
file key                       vLLM metric queried                         canonical signal
=============================  ==========================================  ===================
``queue_len``                  gauge ``vllm:num_requests_waiting``         ``requests_waiting``
``kv_cache_usage_percentage``  gauge ``vllm:gpu_cache_usage_perc`` (0..1)  ``kv_cache_usage``
``num_requests_swapped``       gauge ``vllm:num_requests_swapped``         ``requests_swapped``
``num_preemptions_total``      ``vllm:num_preemptions_total``, read as a   ``preemptions_total``
                               gauge (a cumulative level, not a rate)
``prefix_cache_hit_percent``   prefix-cache hits / queries                 ``prefix_cache_hit_rate``
``count``, ``rate``            increase / rate of the e2e-latency count    (kept, signal null)
=============================  ==========================================  ===================

Latency histograms (``request_latency``, ``time_to_first_token``, ``time_per_output_token``)
and token counters are kept with ``signal`` null: the load-test side is read from the
lifecycle reports. One file is one stage (its number is the step); a report folder (pass
``format="inference-perf-prometheus"``, since the folder is also the lifecycle sweep) gives
every stage. ``summary_prometheus_metrics.json`` is the whole run (step null).

Traps seen in the KubeCon NA 2025 demo files and reported as findings:

- ``kv_cache_usage_percentage`` is 0.0 in every stage of the five V1-engine configurations,
  even saturated ones: the V1 engine renamed the gauge to ``vllm:kv_cache_usage_perc``, so the
  V0 name inference-perf queries returns nothing. All zeros across a run with load are
  reported as *not measured*, never as an empty cache.
- The server-side ``count``/``rate`` do not match the client's stage counts (stage 0 of the
  ``vllm`` run: 937 on the server, 60 sent by the client): the Prometheus window is not the
  stage window. bearing never uses them for the load axis.
"""

from __future__ import annotations

import re
from pathlib import Path

from bearing_lib.common.errors import InputError, UnsupportedVersionError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.servermetrics import ServerMetrics
from bearing_lib.loaders.prometheus import finish_metrics
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "kubernetes-sigs inference-perf"
FORMAT = "inference-perf-prometheus"
STAGE_RE = re.compile(r"^stage_(\d+)_prometheus_metrics\.json$")
SUMMARY = "summary_prometheus_metrics.json"
KEYS: dict[str, str | None] = {
    "queue_len": "requests_waiting",
    "kv_cache_usage_percentage": "kv_cache_usage",
    "num_requests_swapped": "requests_swapped",
    "num_preemptions_total": "preemptions_total",
    "prefix_cache_hit_percent": "prefix_cache_hit_rate",
}
"""File key → canonical signal; other keys under ``successes`` load with signal null."""
SIGNAL_KEYS = ("queue_len", "kv_cache_usage_percentage")


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".json" or not source.head.lstrip().startswith(b"{"):
        return False
    head = source.head_text
    return '"successes"' in head and '"schedule_delay"' not in head and all(f'"{k}"' in head for k in SIGNAL_KEYS)


def _files(source: InputSource) -> list[tuple[int | None, Path]]:
    if not source.is_dir:
        m = STAGE_RE.match(source.path.name)
        return [(int(m.group(1)) if m else None, source.path)]
    stages = sorted(
        (int(m.group(1)), p) for p in source.path.iterdir() if (m := STAGE_RE.match(p.name)) is not None
    )
    if not stages:
        raise InputError("no stage_<N>_prometheus_metrics.json in the folder", path=source.path)
    return stages


def _rows(doc: object, path: Path, step: int | None, run_id: str) -> list[dict[str, object]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("successes"), dict):
        raise UnsupportedVersionError(
            "expected an inference-perf Prometheus report object with a `successes` object",
            tool=TOOL, version=None, missing=["successes"], path=path,
        )
    succ = doc["successes"]
    rows: list[dict[str, object]] = []
    for key, body in succ.items():
        signal = KEYS.get(key)
        stats = body if isinstance(body, dict) else {"value": body}
        for stat, value in stats.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            rows.append(
                {
                    "run_id": run_id,
                    "step": step,
                    "time_s": None,
                    "signal": signal,
                    "metric": key,
                    "stat": stat,
                    "value": float(value),
                    "source_row": None,
                }
            )
    return rows


def load(source: InputSource, *, run_id: str | None = None, summary: bool = False) -> ServerMetrics:
    """Stage Prometheus reports (a file, or a report folder) → server metrics, one step per stage.

    ``summary=True`` on a folder reads ``summary_prometheus_metrics.json`` instead (step null).
    """
    prov = Provenance(source=str(source.path), format=FORMAT, tool=TOOL, sha256="")
    folder = source.path if source.is_dir else source.path.parent
    rid = run_id or folder.name
    if summary and source.is_dir:
        if not (folder / SUMMARY).is_file():
            raise InputError(f"no {SUMMARY} in the folder", path=source.path)
        files: list[tuple[int | None, Path]] = [(None, folder / SUMMARY)]
    else:
        files = _files(source)
    rows: list[dict[str, object]] = []
    for step, p in files:
        rows += _rows(InputSource(p).json, p, step, rid)
    prov.files = [str(p) for _, p in files]
    prov.time_origin = "none"
    prov.add(
        "window_statistics",
        "each value is inference-perf's statistic over a stage window (stat mean/median/p90/p99), not a sample; "
        "the step is the stage number in the file name",
        level="info",
    )
    _check_kv(rows, prov)
    _check_counts(rows, folder, files, prov)
    return finish_metrics(rows, source, prov)


def _check_kv(rows: list[dict[str, object]], prov: Provenance) -> None:
    kv = [r["value"] for r in rows if r["signal"] == "kv_cache_usage"]
    queue = [r["value"] for r in rows if r["signal"] == "requests_waiting"]
    if kv and all(v == 0.0 for v in kv):
        for r in rows:
            if r["signal"] == "kv_cache_usage":
                r["signal"] = None  # not a measurement: kept under its file name only
        busy = " while requests were queued" if any(v > 0 for v in queue) else ""
        prov.add(
            "kv_cache_not_measured",
            f"kv_cache_usage_percentage is 0.0 in every stage read{busy}: inference-perf queries the V0 gauge "
            "vllm:gpu_cache_usage_perc, which V1 engines renamed vllm:kv_cache_usage_perc; read as not measured",
        )


def _check_counts(
    rows: list[dict[str, object]], folder: Path, files: list[tuple[int | None, Path]], prov: Provenance
) -> None:
    """Compare the server-side request count with the client's stage count, where both exist."""
    server = {r["step"]: r["value"] for r in rows if r["metric"] == "count" and r["stat"] == "value"}
    mismatched: list[str] = []
    for step, _ in files:
        life = folder / f"stage_{step}_lifecycle_metrics.json"
        if step is None or step not in server or not life.is_file():
            continue
        try:
            client = (InputSource(life).json.get("successes") or {}).get("count")  # type: ignore[union-attr]
        except (InputError, AttributeError):
            continue
        if isinstance(client, (int, float)) and client > 0 and abs(server[step] / client - 1) > 0.10:
            mismatched.append(f"stage {step}: server {server[step]:g}, client {client:g}")
    if mismatched:
        prov.add(
            "server_count_window",
            "the server-side request count differs from the client's stage count by more than 10% (the Prometheus "
            "window is not the stage window), so server counts and rates are not used for the load axis: "
            + "; ".join(mismatched),
            count=len(mismatched),
        )


register(
    FormatSpec(
        name=FORMAT,
        tool=TOOL,
        kind="metrics",
        needs="stage_<N>_prometheus_metrics.json (successes with queue_len, kv_cache_usage_percentage, ...); "
        "a report folder with format=inference-perf-prometheus",
        sniff=sniff,
        load=load,
    )
)
