"""Idle GPUs left out of the GPU signals: a DCGM exporter reports every GPU of its node.

An exporter reached through a cluster service may be any node's, and a node's other GPUs may serve
nothing: a GPU whose memory in use (``gpu_memory_used_bytes``: DCGM ``FB_USED``, AIPerf/GenAI-Perf
``gpu_memory_used``) stayed 0 over the whole window holds no model. Its rows keep ``signal`` null
(finding ``idle_gpus`` naming them and the serving ones), so seven idle GPUs of an eight-GPU node do
not dilute the serving GPU's utilisation to an eighth. Without memory figures nothing is left out.
Used by every GPU loader: AIPerf/GenAI-Perf telemetry (:mod:`bearing_lib.loaders.gpu_telemetry`),
the DCGM CSV (:mod:`bearing_lib.loaders.dcgm`) and Prometheus text / query JSON
(:mod:`bearing_lib.loaders.prometheus`; docs/formats-server-metrics.md).
"""

from __future__ import annotations

from bearing_lib.data.provenance import Provenance

__all__ = ["gpu_key", "leave_out_idle_gpus"]


def gpu_key(r: dict[str, object]) -> tuple[object, ...]:
    """One GPU's rows: run, instance (exporter or host), ``gpu`` label and the other labels."""
    return r["run_id"], r["instance"], r["gpu"], r["labels"]


def _listed(keys: set[tuple[object, ...]]) -> str:
    hosts: dict[object, set[str]] = {}
    for k in keys:
        hosts.setdefault(k[1], set()).add(str(k[2]))
    return "; ".join(f"GPU {', '.join(sorted(g, key=lambda x: (len(x), x)))}" + (f" of {h}" if h else "")
                     for h, g in sorted(hosts.items(), key=lambda hg: str(hg[0])))


def leave_out_idle_gpus(rows: list[dict[str, object]], prov: Provenance) -> list[dict[str, object]]:
    """``rows`` with those of GPUs that held nothing (memory in use 0 at every sample or statistic) turned to
    ``signal`` null, and a warning ``idle_gpus`` naming the idle and the serving GPUs."""
    used: dict[tuple[object, ...], list[float]] = {}
    for r in rows:
        if r["signal"] == "gpu_memory_used_bytes":
            used.setdefault(gpu_key(r), []).append(float(r["value"]))  # type: ignore[arg-type]
    idle = {k for k, v in used.items() if max(v) == 0.0}
    if not idle:
        return rows
    prov.add("idle_gpus", f"{len(idle)} GPU(s) held no memory the whole window ({_listed(idle)}): a DCGM exporter "
             "reports every GPU of its node, so these served nothing and are left out of the GPU signals (kept "
             f"with signal null); serving: {_listed(set(used) - idle) or 'none'}", count=len(idle))
    return [{**r, "signal": None} if gpu_key(r) in idle and r["signal"] is not None else r for r in rows]
