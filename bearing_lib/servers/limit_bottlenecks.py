"""The bottleneck at the limit, per mix: the limit step of each mix and the resource that binds there.

One orchestration of :func:`~bearing_lib.servers.bottleneck.find_limit_step` and
:func:`~bearing_lib.servers.bottleneck.bottleneck_at_limit` over the mixes of a limits result (the report's ops
section shows it; ``bearing bottleneck`` runs the same two for one mix). The limit step of a mix is its first
failing step in the limits, else (inference-perf) the first stage whose achieved rate fell > 10 % short of the
requested one; without limits, one row for the whole test.

:class:`LimitBottlenecks` is the result and its JSON (``to_dict`` / ``from_dict`` at the edge); each mix is a
:class:`LimitBottleneck` whose ``rules`` are the :class:`~bearing_lib.servers.bottleneck.Fired` rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.files import jsonable
from bearing_lib.servers.bottleneck import Fired

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult

HOW_TO_GIVE_METRICS = (
    "give the server metrics of the load test with the report parameter server_metrics "
    "(bearing report -p server_metrics PATH [-p metrics_format inference-perf-prometheus]): a folder of "
    "inference-perf stage_N_prometheus_metrics.json reports, or metrics whose samples carry their load step "
    "(timed vLLM/DCGM scrapes are put in the load test's steps with -p metrics_trace LOADTEST, its per-request "
    "trace)"
)
RULES_DOC = "docs/operations.md (bottleneck rules KV-1, KV-2, MEM-1, CMP-1, CMP-2, UP-1)"


@dataclass
class LimitBottleneck:
    """One mix: its limit step (and how it was found), the resource that binds there (None: none named) and the
    rules that fired, with the statement in words."""

    mix: str
    run_id: str | None
    limit_step: int | None
    limit_step_basis: str | None
    resource: str | None = None
    statement: str = ""
    rules: list[Fired] = field(default_factory=list)


@dataclass
class LimitBottlenecks:
    """The bottleneck at the limit of every mix (``rows``), or why none is named: ``given`` False without
    server metrics (``how`` says how to give them); ``source`` / ``format`` the metrics read, ``signals`` and
    ``steps`` what they hold."""

    _OMIT_NONE = ("how", "source", "format", "signals", "steps", "rules_doc")
    given: bool
    statement: str
    rows: list[LimitBottleneck] = field(default_factory=list)
    how: str | None = None
    source: str | None = None
    format: str | None = None
    signals: list[str] | None = None
    steps: list[int] | None = None
    rules_doc: str | None = None

    def to_dict(self) -> dict[str, object]:
        return jsonable(self)

    @classmethod
    def from_dict(cls, d: object) -> LimitBottlenecks:
        from bearing_lib.common.schema import parse

        return parse(cls, d, what="bottleneck at the limit")


def _limit_steps(limits: LimitsResult | None, metrics_path: str, fmt: str, run: str | None) -> list[LimitBottleneck]:
    from bearing_lib.servers.bottleneck import find_limit_step

    mixes = [m for m in (limits.mixes if limits is not None else []) if not run or m.run_id in (None, run)]
    rows = []
    for m in mixes:
        ls = find_limit_step(limits, run_id=m.run_id, mix=m.name, metrics_path=metrics_path, metrics_format=fmt)
        rows.append(LimitBottleneck(m.name, m.run_id, ls.step, ls.basis))
    if not rows:  # no limits: one row for the whole test, at its first saturated stage if there is one
        ls = find_limit_step(None, metrics_path=metrics_path, metrics_format=fmt)
        rows.append(LimitBottleneck("all", None, ls.step, ls.basis))
    return rows


def limit_bottlenecks(metrics: Any, limits: LimitsResult | None, *, metrics_path: str = "",
                      run: str | None = None) -> LimitBottlenecks:
    """Per mix of ``limits`` (the run ``run`` when given): the limit step and the resource that binds there (or
    why none is named). ``metrics`` the loaded :class:`~bearing_lib.data.servermetrics.ServerMetrics` or None."""
    if metrics is None:
        return LimitBottlenecks(False, "no server metrics given", how=HOW_TO_GIVE_METRICS)
    from bearing_lib.servers.bottleneck import bottleneck_at_limit
    from bearing_lib.servers.metrics import step_signals

    table = step_signals(metrics)
    fmt = str(metrics.provenance.format)
    if table.height == 0:
        return LimitBottlenecks(True, "the server metrics hold no sample with a load step and a known signal: "
                                + HOW_TO_GIVE_METRICS, source=metrics_path, format=fmt)
    rows = _limit_steps(limits, metrics_path, fmt, run)
    for r in rows:
        try:
            b = bottleneck_at_limit(table, limit_step=r.limit_step, run_id=r.run_id)
        except ParameterError as exc:  # the metrics hold several runs and none is this mix's: said in its row
            r.statement = str(exc)
            continue
        r.resource, r.statement, r.rules = b.resource, b.statement, list(b.fired)
    return LimitBottlenecks(True, "; ".join(f"{r.mix}: {r.resource or 'none named'}" for r in rows), rows,
                            source=metrics_path, format=fmt, signals=sorted(set(table["signal"].to_list())),
                            steps=sorted({int(s) for s in table["step"].to_list()}), rules_doc=RULES_DOC)


__all__ = ["HOW_TO_GIVE_METRICS", "RULES_DOC", "LimitBottleneck", "LimitBottlenecks", "limit_bottlenecks"]
