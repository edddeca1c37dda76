"""One step of a load curve as judging reads it: a typed row of ``limits.curves.load_curve`` (docs/limits.md).

The load curve is a polars frame whose columns depend on the SLA: ``{metric}_{pNN}`` with ``_ci95_lo`` /
``_ci95_hi`` for every quantile the curve computed (the four standard ones and the SLA's own), ``{metric}_mean``
/ ``{metric}_max``, and on a request trace the pooled per-clause counts ``_pk_{i}`` / ``_pn_{i}``
(``limits.pooled``, ``limits.stepstats``) and each goodput clause's observed share ``_goodput_{i}``.
:meth:`CurveRow.of` reads one row (``DataFrame.to_dicts()``) once: the fixed columns become fields, the
SLA-dependent ones typed containers. Values are kept exactly as the row holds them (a null stays None, a NaN
stays NaN, no rounding); a column the curve lacks reads as None, as ``dict.get`` did.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bearing_lib.common.errors import SchemaError
from bearing_lib.limits.curves import METRICS

_QUANTILE_RE = re.compile(r"^(?P<metric>.+?)_(?P<name>p\d+(?:_\d+)?)(?:_ci95_(?P<side>lo|hi))?$")
_COUNT_RE = re.compile(r"^_p(?P<kind>[kn])_(?P<i>\d+)$")
_GOODPUT_RE = re.compile(r"^_goodput_(?P<i>\d+)$")
_SIDES = {None: 0, "lo": 1, "hi": 2}


@dataclass(frozen=True)
class QuantileCI:
    """A step's quantile of one metric (``{metric}_{pNN}``) and its 95 % order-statistic CI
    (``_ci95_lo`` / ``_ci95_hi``); None where the curve has no value."""

    value: float | None = None
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class ClauseCount:
    """The pooled counts of one SLA clause on a step: ``bad`` requests (``_pk_{i}``) of ``n`` that can count
    against it (``_pn_{i}``); None where the curve has none."""

    bad: int | None = None
    n: int | None = None


_NO_QUANTILE = QuantileCI()
_NO_COUNT = ClauseCount()


@dataclass(frozen=True)
class CurveRow:
    """One (run, step, mix) row of the load curve (``limits.curves``), typed.

    ``quantiles`` is keyed by ``(metric, name)``, e.g. ``("ttft_ms", "p99")`` (:meth:`q`); ``means`` /
    ``maxima`` by metric; ``clause_counts`` holds clause ``i``'s pooled counts at index ``i`` (empty on a
    load-point table, :meth:`count`); ``goodput`` each goodput clause's observed share by clause index
    (:meth:`goodput_share`).
    """

    step: int
    run_id: str | None = None
    mix: str | None = None
    offered_load: float | None = None
    offered_load_unit: str | None = None
    duration_s: float | None = None
    rate_span_s: float | None = None
    """The seconds ``throughput_rps`` divided its completions by (``limits.curves``): the steady window of a step
    with per-request times; for a tool's summary of an open-loop rate step, the completion span
    (``curves.completion_span``: the send window, or the duration less the unloaded latency where it includes the
    drain); where bearing keeps the tool's own rate (a closed loop, a tool without the drain), ``n_ok / rate``
    capped at the tool's duration."""
    n_requests: int | None = None
    n_ok: int | None = None
    n_errors: int | None = None
    n_unknown: int | None = None
    error_rate: float | None = None
    error_rate_ci95_lo: float | None = None
    error_rate_ci95_hi: float | None = None
    throughput_rps: float | None = None
    output_tokens_per_s: float | None = None
    send_rate_rps: float | None = None
    concurrency_mean: float | None = None
    t_first_s: float | None = None
    t_done_s: float | None = None
    """The end of the step's last request (``limits.curves.step_windows``): the server is idle after it; null
    without per-request times."""
    valid: bool | None = None
    flags: tuple[str, ...] = ()
    """The step's flags (``limits.curves``); a null list reads as none."""
    phase: str | None = None
    quantiles: Mapping[tuple[str, str], QuantileCI] = field(default_factory=lambda: MappingProxyType({}))
    means: Mapping[str, float | None] = field(default_factory=lambda: MappingProxyType({}))
    maxima: Mapping[str, float | None] = field(default_factory=lambda: MappingProxyType({}))
    clause_counts: tuple[ClauseCount, ...] = ()
    goodput: Mapping[int, float | None] = field(default_factory=lambda: MappingProxyType({}))

    def q(self, metric: str, name: str) -> QuantileCI:
        """The quantile ``name`` (``p99``, ``p99_9``) of ``metric`` with its CI; all None when not in the curve."""
        return self.quantiles.get((metric, name), _NO_QUANTILE)

    def count(self, i: int) -> ClauseCount:
        """Clause ``i``'s pooled counts; both None when the curve has none."""
        return self.clause_counts[i] if 0 <= i < len(self.clause_counts) else _NO_COUNT

    @property
    def has_counts(self) -> bool:
        """The curve carries pooled per-clause counts for this step (a request trace's, ``_pn_0`` not null)."""
        return self.count(0).n is not None

    def goodput_share(self, i: int) -> float | None:
        """Goodput clause ``i``'s observed share of good requests (``_goodput_{i}``); None when not in the curve."""
        return self.goodput.get(i)

    def share_above(self, metric: str, threshold: float) -> tuple[float, float] | None:
        """Bounds ``(lo, hi)`` on the share of ``metric`` values above ``threshold`` implied by the reported mean
        and maximum alone; None where either is missing or the maximum is not above ``threshold > 0``.

        Every value is at most the maximum and those at or below ``T`` add at most ``T``, so
        ``mean <= (1 - s) T + s max`` and the share ``s`` above ``T`` is at least ``(mean - T) / (max - T)``; by
        Markov's inequality it is at most ``mean / T``. (AIPerf's 320-concurrency point: mean 3,580 ms, maximum
        5,987 ms, at least 39.6 % above 2 s.) ``limits.evidence`` and ``limits.judging`` both read this bound.
        """
        mx, mean = self.maxima.get(metric), self.means.get(metric)
        if mx is None or mean is None or not (math.isfinite(mx) and math.isfinite(mean)):
            return None
        if not mx > threshold > 0:
            return None
        return (mean - threshold) / (mx - threshold), mean / threshold

    @classmethod
    def of(cls, row: Mapping[str, object]) -> CurveRow:
        """The typed row of one load-curve row (``DataFrame.to_dicts()`` / ``iter_rows(named=True)``)."""
        if "step" not in row:
            raise SchemaError(f"load-curve row has no 'step' column (columns: {', '.join(sorted(row))})")
        fixed = {name: row[name] for name in _FIXED if name in row}
        flags = row.get("flags")
        # the sides of a quantile (value, lo, hi) and of a count (bad, n) as they are found among the columns
        quant: dict[tuple[str, str], list[float | None]] = {}
        counts: dict[int, list[int | None]] = {}
        goodput: dict[int, float | None] = {}
        for col, v in row.items():
            if col in _FIXED or col == "flags":
                continue
            if m := _COUNT_RE.match(col):
                counts.setdefault(int(m["i"]), [None, None])[0 if m["kind"] == "k" else 1] = v
            elif m := _GOODPUT_RE.match(col):
                goodput[int(m["i"])] = v
            elif (m := _QUANTILE_RE.match(col)) and not col.startswith("_"):
                quant.setdefault((m["metric"], m["name"]), [None, None, None])[_SIDES[m["side"]]] = v
        metrics = list(dict.fromkeys([*METRICS, *(k[0] for k in quant)]))
        return cls(
            **fixed,
            flags=tuple(flags or ()),
            quantiles=MappingProxyType({k: QuantileCI(*v) for k, v in quant.items()}),
            means=MappingProxyType({m: row[f"{m}_mean"] for m in metrics if f"{m}_mean" in row}),
            maxima=MappingProxyType({m: row[f"{m}_max"] for m in metrics if f"{m}_max" in row}),
            clause_counts=tuple(ClauseCount(*counts.get(i, (None, None))) for i in range(max(counts, default=-1) + 1)),
            goodput=MappingProxyType(goodput),
        )


_FIXED = frozenset(
    f for f in CurveRow.__dataclass_fields__
    if f not in ("flags", "quantiles", "means", "maxima", "clause_counts", "goodput")
)


__all__ = ["ClauseCount", "CurveRow", "QuantileCI"]
