"""The fidelity result: how far the load test that measured the limit is from production.

:class:`Fidelity` holds one :class:`Dimension` per aspect (input length, output length,
prefix-cache hit rate, burstiness, request-rate range, model); each carries the test's and
production's values, a distance where one applies, a verdict (``represents`` / ``differs`` /
``unknown``), the threshold it was judged against and one sentence a reviewer can quote.
``to_dict``/``from_dict`` are its JSON form (the ``fidelity`` block of ``summary.json``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bearing_lib.common.errors import SchemaError

Verdict = Literal["represents", "differs", "unknown"]
VERDICTS: tuple[str, ...] = ("represents", "differs", "unknown")


def missing_sides(test_missing: bool, production_missing: bool, what: str) -> str:
    """Which side lacks ``what``: ``"the test gives no {what}"``, ``"production gives no {what}"`` or
    ``"neither the test nor production gives {what}"``."""
    if test_missing and production_missing:
        return f"neither the test nor production gives {what}"
    return f"{'the test' if test_missing else 'production'} gives no {what}"


@dataclass(frozen=True)
class Quantiles:
    """P50 / P90 / P99 (linear interpolation), min, max and mean of a sample, with its size."""

    n: int
    p50: float
    p90: float
    p99: float
    min: float
    max: float
    mean: float


@dataclass(frozen=True)
class Mean:
    """A side known only by its mean (a load-point table's tokens per request)."""

    mean: float


@dataclass(frozen=True)
class CacheRates:
    """Prefix-cache hits: the share of prompt tokens served from the cache, the share of requests with any hit,
    over ``n`` requests that carry both counts."""

    token_hit_ratio: float
    request_hit_share: float
    n: float


@dataclass(frozen=True)
class CountDispersion:
    """The index of dispersion (var / mean) of request counts at the SLA's time scale."""

    index_of_dispersion: float


@dataclass(frozen=True)
class RateRange:
    """The completed req/s of the tested steps: lowest, highest, how many steps."""

    min_rps: float
    max_rps: float
    steps: int


@dataclass(frozen=True)
class Peak:
    """Production's peak req/s and what it is (the target load's statement)."""

    peak_rps: float
    basis: str


@dataclass(frozen=True)
class Names:
    """The model names a side states (at most a few)."""

    names: list[str]


@dataclass(frozen=True)
class Endpoint:
    """The endpoint a side called or is served at."""

    endpoint: str


Side = Quantiles | Mean | CacheRates | CountDispersion | RateRange | Peak | Names | Endpoint
"""What a dimension holds of one side (the test or production): one type per kind of figure."""
SIDES: tuple[type, ...] = (Quantiles, Mean, CacheRates, CountDispersion, RateRange, Peak, Names, Endpoint)


@dataclass(frozen=True)
class LengthExtra:
    """A length dimension's figures beyond the quantiles: the headline sentence, the shares of production longer
    or shorter than anything tested, and the thresholds judged against."""

    headline: str
    longer_than_tested: float
    shorter_than_tested: float
    ks_threshold: float
    outside_threshold: float


@dataclass(frozen=True)
class TimeScale:
    """The burstiness dimension's time scale (s, and where it comes from) and the test's value per step."""

    time_scale_s: float
    time_scale_basis: str
    test_steps: list[float]


Extra = LengthExtra | TimeScale
EXTRAS: tuple[type, ...] = (LengthExtra, TimeScale)


def _by_keys(v: Any, kinds: tuple[type, ...], where: str) -> Any:
    """The JSON object ``v`` as the one of ``kinds`` whose fields are its keys (validated), None for null."""
    if v is None:
        return None
    if isinstance(v, dict):
        for tp in kinds:
            if set(v) == set(tp.__dataclass_fields__):
                from bearing_lib.common.schema import parse

                return parse(tp, v, what=where)
    shapes = "; ".join(", ".join(tp.__dataclass_fields__) for tp in kinds)
    found = ", ".join(sorted(map(str, v))) if isinstance(v, dict) else repr(v)[:60]
    raise SchemaError(f"{where}: expected an object with the keys of one of: {shapes} (found {found})")


@dataclass
class Dimension:
    """One aspect of the workload, as the test sent it and as production sees it."""

    name: str
    """``input_tokens``, ``output_tokens``, ``prefix_cache``, ``burstiness``, ``rate``, ``model``."""
    label: str
    verdict: Verdict
    statement: str
    """One sentence: what the test had, what production has, what follows."""
    threshold: str
    """The rule the verdict was judged by (docs/report.md, "Fidelity")."""
    test: Side | None = None
    production: Side | None = None
    distance: dict[str, float] = field(default_factory=dict)
    """Two-sample distances (``ks``: Kolmogorov-Smirnov statistic, ``wasserstein`` in the dimension's unit)."""
    unit: str = ""
    extra: Extra | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["extra"] is None:
            d["extra"] = {}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, where: str = "dimension") -> Dimension:
        if not isinstance(d, dict):
            raise SchemaError(f"{where}: expected an object (found {d!r:.60})")
        for key in ("name", "label", "verdict", "statement", "threshold"):
            if not isinstance(d.get(key), str):
                raise SchemaError(f"{where}.{key}: expected text (found {d.get(key)!r:.60})")
        if d["verdict"] not in VERDICTS:
            raise SchemaError(f"{where}.verdict: expected one of {', '.join(VERDICTS)} (found {d['verdict']!r})")
        return cls(name=d["name"], label=d["label"], verdict=d["verdict"], statement=d["statement"],
                   threshold=d["threshold"], test=_by_keys(d.get("test"), SIDES, f"{where}.test"),
                   production=_by_keys(d.get("production"), SIDES, f"{where}.production"),
                   distance=dict(d.get("distance") or {}), unit=str(d.get("unit") or ""),
                   extra=_by_keys(d.get("extra") or None, EXTRAS, f"{where}.extra"))


@dataclass
class Fidelity:
    """Fidelity of a load test to production (module docstring).

    ``verdict`` is ``differs`` when any dimension differs, ``represents`` when every dimension that
    could be judged represents and the input length could be judged, ``unknown`` otherwise.
    ``headline`` is the sentence for the report's headline when the test does not represent
    production (None when it does). ``covered_share`` is the share of production requests whose
    input and output lengths both lie inside the range the test sent (None when not known).
    """

    verdict: Verdict
    dimensions: list[Dimension]
    headline: str | None
    covered_share: float | None
    test_source: str
    production_source: str
    run: str | None = None
    notes: list[str] = field(default_factory=list)

    def dimension(self, name: str) -> Dimension | None:
        return next((d for d in self.dimensions if d.name == name), None)

    def sentence(self) -> str:
        """The one line the report says of it (the headline's when the test differs; ``bearing report`` prints it)."""
        if self.verdict == "differs":
            return f"The test does not represent production: {str(self.headline or '').rstrip('.')}."
        if self.verdict == "represents":
            return "The test represents production: it sent what production sends, within the fidelity thresholds."
        return "Whether the test represents production is unknown: too little is known on one side to say."

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "headline": self.headline, "covered_share": self.covered_share,
                "test_source": self.test_source, "production_source": self.production_source, "run": self.run,
                "dimensions": [d.to_dict() for d in self.dimensions], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "fidelity") -> Fidelity:
        """Validate a ``fidelity`` block once; a problem is a :class:`SchemaError` naming the field."""
        if not isinstance(d, dict):
            raise SchemaError(f"{source}: expected an object (found {d!r:.60})")
        if d.get("verdict") not in VERDICTS:
            raise SchemaError(f"{source}.verdict: expected one of {', '.join(VERDICTS)} (found {d.get('verdict')!r})")
        dims = d.get("dimensions")
        if not isinstance(dims, list):
            raise SchemaError(f"{source}.dimensions: expected a list (found {dims!r:.60})")
        cov = d.get("covered_share")
        if cov is not None and not isinstance(cov, int | float):
            raise SchemaError(f"{source}.covered_share: expected a number or null (found {cov!r:.60})")
        return cls(verdict=d["verdict"],
                   dimensions=[Dimension.from_dict(x, where=f"{source}.dimensions[{i}]") for i, x in enumerate(dims)],
                   headline=d.get("headline"), covered_share=None if cov is None else float(cov),
                   test_source=str(d.get("test_source") or ""), production_source=str(d.get("production_source") or ""),
                   run=d.get("run"), notes=[str(n) for n in d.get("notes") or []])


__all__ = [
    "EXTRAS",
    "SIDES",
    "VERDICTS",
    "CacheRates",
    "CountDispersion",
    "Dimension",
    "Endpoint",
    "Extra",
    "Fidelity",
    "LengthExtra",
    "Mean",
    "Names",
    "Peak",
    "Quantiles",
    "RateRange",
    "Side",
    "TimeScale",
    "Verdict",
    "missing_sides",
]
