"""Which resource binds at the limit: documented rules over the per-step server signals.

The rules read :func:`bearing_lib.servers.metrics.step_signals` at the *limit step* (the first
step past the limit: the first failing step of the limits JSON, or the first saturated
stage) and at the step before it. They are tried in this order; every rule that fires is
reported with its evidence, and the first one names the bottleneck:

======  ===================  =============================================================
rule    resource             fires when (at the limit step)
======  ===================  =============================================================
KV-1    KV cache             ``kv_cache_usage`` high (max, or p99) >= 0.95
KV-2    KV cache             preemptions rise: the counter's increase within the step > 0,
                             or its level is above the previous step's
MEM-1   GPU memory           ``gpu_memory_used_fraction`` high >= 0.95
CMP-1   GPU compute          the waiting queue grows (mean waiting >= 1 and above the
                             previous step's, or a positive trend) and the GPU is busy
                             (``gpu_utilization`` mean >= 0.90)
CMP-2   engine queue         the waiting queue grows and GPU utilisation is not measured:
                             the engine is saturated (compute-bound is likely; DCGM would
                             tell compute from a scheduler cap such as ``max_num_seqs``)
UP-1    upstream of the GPU  the GPU is idle (``gpu_utilization`` mean < 0.50), the queue
                             does not grow, and the load test's latency rose at this step
                             (CPU, tokenizer, network or gateway)
======  ===================  =============================================================

The signals are engine-neutral: vLLM's, llama.cpp's, SGLang's and TGI's ``/metrics`` names map onto
them (:data:`bearing_lib.data.servermetrics.METRIC_NAMES`; llama.cpp ``requests_deferred`` is the
waiting queue, SGLang ``token_usage`` the KV share, an SGLang retraction a preemption).

No metrics → "no server metrics given"; metrics whose names bearing does not know, or that no
step holds → a statement naming what was found (:func:`explain_no_signals`); metrics but no
rule → "no rule fired" with the signals seen, never a guess. Thresholds are the source
checklists' (KV cache or GPU memory above 95 %); GPU busy at 90 % and idle below 50 % are
bearing's, and named in the evidence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult, MixLimit

from bearing_lib.common.errors import ParameterError
from bearing_lib.data.servermetrics import ServerMetrics

KV_HIGH = 0.95
GPU_MEM_HIGH = 0.95
GPU_BUSY = 0.90
GPU_IDLE = 0.50
QUEUE_MIN = 1.0


@dataclass(frozen=True)
class Fired:
    """One rule that fired: its id, the resource it names, and the numbers behind it."""

    rule: str
    resource: str
    evidence: str


@dataclass
class Bottleneck:
    """The verdict at one limit step."""

    run_id: str | None
    step: int | None
    resource: str | None
    statement: str
    fired: list[Fired] = field(default_factory=list)
    signals: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def explain_no_signals(metrics: ServerMetrics) -> str:
    """Why metrics that were given leave no per-step signal: no known name (the names found are listed), or
    known signals none of which has a load step."""
    f = metrics.frame
    known = f.filter(pl.col("signal").is_not_null())
    if known.height == 0:
        names = f["metric"].unique().sort().to_list()
        shown = ", ".join(names[:10]) + (f" … (+{len(names) - 10} more)" if len(names) > 10 else "")
        return (f"server metrics given, but none of their {len(names)} metric name(s) is one bearing maps to a "
                f"resource signal (found: {shown}; known engines: vLLM, llama.cpp, SGLang, TGI, DCGM)")
    return (f"server metrics given ({', '.join(sorted(set(known['signal'].to_list())))}), but no sample has a load "
            "step: align timed samples to the load test with --trace (and --offset-s)")


def _by_signal(table: pl.DataFrame, run_id: str | None, step: int | None) -> dict[str, dict[str, float | None]]:
    if step is None:
        return {}
    f = table.filter(pl.col("step") == step)
    if run_id is not None:
        f = f.filter(pl.col("run_id") == run_id)
    return {
        r["signal"]: {k: r[k] for k in ("mean", "high", "first", "last", "increase", "trend_per_s")}
        for r in f.iter_rows(named=True)
    }


def _g(d: dict[str, dict[str, float | None]], signal: str, stat: str) -> float | None:
    v = d.get(signal, {}).get(stat)
    return float(v) if v is not None else None


def name_bottleneck(
    table: pl.DataFrame | None,
    *,
    limit_step: int | None,
    previous_step: int | None = None,
    run_id: str | None = None,
    latency_rose: bool | None = None,
) -> Bottleneck:
    """Apply the rules (module docstring) to ``table`` (from ``step_signals``) at ``limit_step``.

    ``previous_step`` defaults to the highest step below ``limit_step`` in the table.
    ``latency_rose`` is the load-test side of rule UP-1 (None: not known, the rule cannot fire).
    """
    if table is None or table.height == 0:
        return Bottleneck(run_id, limit_step, None, "no server metrics given")
    runs = {r for r in table["run_id"].unique().to_list() if r is not None}
    if run_id is None and len(runs) > 1:
        raise ParameterError(f"the metrics hold {len(runs)} runs ({', '.join(sorted(runs))}): name one (run_id)")
    if limit_step is None:
        return Bottleneck(run_id, None, None, "no limit step: the load test never crossed its limit, so no resource "
                                               "is named")
    if previous_step is None:
        lower = table.filter(pl.col("step") < limit_step)
        if run_id is not None:
            lower = lower.filter(pl.col("run_id") == run_id)
        previous_step = lower["step"].max() if lower.height else None  # type: ignore[assignment]
    now = _by_signal(table, run_id, limit_step)
    before = _by_signal(table, run_id, previous_step)
    if not now:
        return Bottleneck(run_id, limit_step, None, f"no server metrics at step {limit_step}")
    fired: list[Fired] = []
    kv = _g(now, "kv_cache_usage", "high")
    if kv is not None and kv >= KV_HIGH:
        fired.append(Fired("KV-1", "KV cache", f"kv_cache_usage high {kv:.3g} >= {KV_HIGH}"))
    pre_inc = _g(now, "preemptions_total", "increase")
    pre_now, pre_before = _g(now, "preemptions_total", "last"), _g(before, "preemptions_total", "last")
    if pre_inc is not None and pre_inc > 0:
        fired.append(Fired("KV-2", "KV cache", f"{pre_inc:g} preemption(s) within step {limit_step}"))
    elif pre_now is not None and pre_before is not None and pre_now > pre_before:
        fired.append(Fired("KV-2", "KV cache",
                           f"preemptions {pre_before:g} at step {previous_step} → {pre_now:g} at step {limit_step}"))
    mem = _g(now, "gpu_memory_used_fraction", "high")
    if mem is not None and mem >= GPU_MEM_HIGH:
        fired.append(Fired("MEM-1", "GPU memory", f"GPU memory used {mem:.3g} of total >= {GPU_MEM_HIGH}"))
    wait_now, wait_before = _g(now, "requests_waiting", "mean"), _g(before, "requests_waiting", "mean")
    trend = _g(now, "requests_waiting", "trend_per_s")
    growing = wait_now is not None and wait_now >= QUEUE_MIN and (
        (wait_before is not None and wait_now > wait_before) or (trend is not None and trend > 0)
    )
    queue_text = ""
    if growing:
        parts = [f"requests_waiting mean {wait_now:.4g} at step {limit_step}"]
        if wait_before is not None:
            parts.append(f"{wait_before:.4g} at step {previous_step}")
        if trend is not None:
            parts.append(f"trend {trend:+.3g}/s")
        queue_text = ", ".join(parts)
    util = _g(now, "gpu_utilization", "mean")
    if growing and util is not None and util >= GPU_BUSY:
        fired.append(Fired("CMP-1", "GPU compute", f"{queue_text}; gpu_utilization mean {util:.3g} >= {GPU_BUSY}"))
    if growing and util is None:
        run_high = _g(now, "requests_running", "high")
        running = f"; requests_running high {run_high:.4g}" if run_high is not None else ""
        fired.append(Fired("CMP-2", "engine queue",
                           f"{queue_text}{running}; GPU utilisation not measured (compute-bound likely)"))
    if util is not None and util < GPU_IDLE and not growing and latency_rose:
        fired.append(Fired("UP-1", "upstream of the GPU",
                           f"gpu_utilization mean {util:.3g} < {GPU_IDLE}, queue not growing, latency rose"))
    seen = ", ".join(sorted(now))
    if not fired:
        return Bottleneck(run_id, limit_step, None,
                          f"no rule fired at step {limit_step} (signals seen: {seen})", [], now)
    first = fired[0]
    return Bottleneck(run_id, limit_step, first.resource,
                      f"{first.resource}-bound at step {limit_step} (rule {first.rule}: {first.evidence})", fired, now)


def first_failing_step(limits: LimitsResult, *, run_id: str | None = None,
                       mix: str | None = None) -> int | None:
    """The first step with status ``fail`` of one mix of the limits, in step order (a limits JSON document is
    read at its edge first, :meth:`LimitsResult.from_dict`).

    The run and the mix are never guessed: limits holding several runs (or a run holding several mixes)
    need ``run_id`` (``mix``), and a run or mix the limits do not hold is refused; the
    :class:`ParameterError` names the ones there are. None when the mix never failed."""
    m = limit_mix(limits, run_id=run_id, mix=mix)
    if m is None:
        return None
    return next((int(s.step) for s in sorted(m.steps, key=lambda s: s.step) if s.status == "fail"), None)


def limit_mix(limits: LimitsResult, *, run_id: str | None = None, mix: str | None = None) -> MixLimit | None:
    """The one mix (a ``MixLimit``) of the limits whose limit step is asked for (rules: :func:`first_failing_step`);
    None when the limits hold no mix."""
    result = limits
    runs = sorted({m.run_id for m in result.mixes if m.run_id is not None})
    if run_id is None and len(runs) > 1:
        raise ParameterError(f"the limits hold {len(runs)} runs ({', '.join(runs)}), each with its own limit step: "
                             "name one (bearing bottleneck --run RUN)")
    if run_id is not None and run_id not in runs:
        raise ParameterError(f"run {run_id!r} is not in the limits; they hold "
                             + (', '.join(runs) if runs else "no named run"))
    chosen = [m for m in result.mixes if run_id is None or m.run_id == run_id]
    names = sorted({m.name for m in chosen})
    if mix is None and len(names) > 1:
        raise ParameterError(f"the limits hold {len(names)} mixes ({', '.join(names)})"
                             + (f" for run {run_id!r}" if run_id else "") + ", each with its own limit step: name one "
                             "(bearing bottleneck --mix MIX)")
    if mix is not None and mix not in names:
        raise ParameterError(f"mix {mix!r} is not in the limits" + (f" for run {run_id!r}" if run_id else "")
                             + f"; they hold {', '.join(names) or 'no mix'}")
    return next((m for m in chosen if mix is None or m.name == mix), None)


def first_saturated_step(loadpoints: pl.DataFrame, *, tolerance: float = 0.10) -> int | None:
    """The first step (by offered load) whose achieved rate (``achieved_rate_rps``, else
    ``throughput_rps``) falls short of the offered load by more than ``tolerance``: the load
    generator or the server could no longer keep up."""
    f = loadpoints.filter(pl.col("offered_load").is_not_null() & pl.col("step").is_not_null()).sort("offered_load")
    for r in f.iter_rows(named=True):
        got = r.get("achieved_rate_rps")
        got = got if got is not None else r.get("throughput_rps")
        if got is not None and got < r["offered_load"] * (1 - tolerance):
            return int(r["step"])
    return None


SATURATED_BASIS = ("the first stage whose achieved rate fell more than 10% short of the requested rate (no failing "
                   "step for this mix in the limits JSON)")
FAILING_BASIS = "the mix's first failing step in the limits JSON"


@dataclass
class LimitStep:
    """The limit step of one mix and how it was found (``basis``: None when there is none)."""

    step: int | None
    basis: str | None


def find_limit_step(limits: LimitsResult | None, *, run_id: str | None = None,
                    mix: str | None = None, metrics_path: str | Path = "", metrics_format: str = "") -> LimitStep:
    """The limit step: the mix's first failing step in the limits (:func:`first_failing_step`); else, for a
    folder of inference-perf Prometheus reports, the first saturated stage (:func:`first_saturated_step` on
    its ``inference-perf-stages``); else none."""
    step = first_failing_step(limits, run_id=run_id, mix=mix) if limits is not None else None
    if step is not None:
        m = limit_mix(limits, run_id=run_id, mix=mix)  # type: ignore[arg-type]
        which = ", ".join(x for x in (f"run {m.run_id}" if m.run_id else "", f"mix {m.name}") if x)
        return LimitStep(step, f"{FAILING_BASIS} ({which})")
    if metrics_format == "inference-perf-prometheus" and str(metrics_path) and Path(metrics_path).is_dir():
        from bearing_lib.common.errors import BearingError
        from bearing_lib.loaders import load

        try:
            saturated = first_saturated_step(load(metrics_path, format="inference-perf-stages").frame)
        except BearingError:
            saturated = None
        if saturated is not None:
            return LimitStep(saturated, SATURATED_BASIS)
    return LimitStep(None, None)


def bottleneck_at_limit(table: pl.DataFrame, *, limit_step: int | None, run_id: str | None = None,
                        metrics: ServerMetrics | None = None) -> Bottleneck:
    """The bottleneck at ``limit_step`` of the per-step signals ``table`` (:func:`~bearing_lib.servers.metrics.
    step_signals`): the one run the metrics hold, else the run ``run_id``; raises :class:`ParameterError`
    naming the runs when the metrics hold several and none is ``run_id``. Used by ``bearing bottleneck``
    and the report's ops section alike. ``metrics`` (the table's source) lets an empty table say why
    (:func:`explain_no_signals`) rather than "no server metrics given"."""
    if table.height == 0 and metrics is not None and metrics.frame.height:
        return Bottleneck(run_id, limit_step, None, explain_no_signals(metrics))
    runs = sorted({r for r in table["run_id"].unique().to_list() if r is not None}) if table.height else []
    if len(runs) == 1:
        run = runs[0]
    elif run_id in runs or not runs:
        run = run_id if runs else None
    else:
        raise ParameterError(f"the metrics hold {len(runs)} runs ({', '.join(runs)}) and none is "
                             + (f"run {run_id!r}" if run_id else "named (give the run)"))
    return name_bottleneck(table, limit_step=limit_step, run_id=run)
