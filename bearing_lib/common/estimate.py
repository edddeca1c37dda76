"""One value with its uncertainty, shared by limits, FOS, plan and report.

An :class:`Estimate` carries everything a number needs to keep its meaning from one
stage to the next: the point value, the 95 % CI, the bracket the data put around it, the
**bound** (a censored value is a bound with a sign, never a plain number), the unit and the
**basis** (whether a load is the *offered* load the generator asked for, or the *achieved*
throughput the server completed). Every table, headline, chart and comparison renders an
estimate through :meth:`Estimate.text`, so "≥" and "<" and the unit survive every hop.

    >>> q = Estimate(1.18, ci95=(1.05, 1.25), unit="rps", basis="offered")
    >>> q.text()
    '1.18 rps (95% CI 1.05–1.25)'
    >>> Estimate(12.0, bound="lower", unit="rps", basis="offered").text()
    '≥ 12.00 rps'
    >>> Estimate(0.7, bound="lower").scaled(0.5).text()
    '≥ 0.35'
    >>> Estimate.from_censored(3.0, "below", unit="rps").bound
    'upper'
    >>> Estimate(2.25, ci95=(1.5, None), unit="rps").text()
    '2.25 rps (95% CI ≥ 1.50, open above)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from bearing_lib.common.format import fmt_number

Bound = Literal["none", "lower", "upper", "unbounded"]
"""``none``: a measured value; ``lower``: the truth is at least ``value`` (≥);
``upper``: the truth is below ``value`` (<); ``unbounded``: no bound can be given."""

Basis = Literal["offered", "achieved", "ratio", "none"]
"""``offered``: the load the generator asked for (the load-test axis); ``achieved``: the
throughput the server completed; ``ratio``: a ratio of loads on one basis (FOS,
utilisation); ``none``: not a load."""

SIGN: dict[str, str] = {"none": "", "lower": "≥ ", "upper": "< ", "unbounded": ""}

# the limits' censoring vocabulary (docs/limits.md) as a bound
_CENSORED_BOUND: dict[str, Bound] = {
    "none": "none", "not_monotone": "none", "above": "lower", "below": "upper", "mixed": "unbounded",
    "no_data": "none",
}


@dataclass(frozen=True)
class Estimate:
    """A value with its 95 % CI, bracket, bound, unit and basis (see the module docstring)."""

    value: float | None
    ci95: tuple[float | None, float | None] | None = None
    bracket: tuple[float | None, float | None] | None = None
    bound: Bound = "none"
    unit: str = ""
    basis: Basis = "none"

    def __post_init__(self) -> None:
        if self.bound not in SIGN:
            raise ValueError(f"bound must be one of {sorted(SIGN)}, got {self.bound!r}")
        if self.value is not None and not math.isfinite(self.value) and self.bound != "unbounded":
            object.__setattr__(self, "value", None)

    # ------------------------------------------------------------------ reading
    @property
    def available(self) -> bool:
        """A value exists (a bound counts: "≥ 12" is available, "no data" is not)."""
        return self.value is not None

    @property
    def is_bound(self) -> bool:
        return self.bound in ("lower", "upper")

    @property
    def sign(self) -> str:
        """``"≥ "``, ``"< "`` or ``""``: the prefix every rendering puts before the value."""
        return SIGN[self.bound]

    @property
    def lo(self) -> float | None:
        return self.ci95[0] if self.ci95 else None

    @property
    def hi(self) -> float | None:
        return self.ci95[1] if self.ci95 else None

    def text(self, digits: int = 2, *, ci: bool = True, unit: bool = True, missing: str = "not available") -> str:
        """The one rendering of an estimate: sign, value, unit and (for a value, not a bound) the CI."""
        if self.value is None:
            return "unbounded" if self.bound == "unbounded" else missing
        u = f" {self.unit}" if unit and self.unit else ""
        s = f"{self.sign}{fmt_number(self.value, digits)}{u}"
        if ci and not self.is_bound and self.ci95 is not None:
            lo, hi = self.lo, self.hi
            if lo is not None and hi is not None:
                s += f" (95% CI {fmt_number(lo, digits)}–{fmt_number(hi, digits)})"
            elif lo is not None:  # an open end stays open (docs/capacity-plan.md, "Open ends stay open")
                s += f" (95% CI ≥ {fmt_number(lo, digits)}, open above)"
            elif hi is not None:
                s += f" (95% CI < {fmt_number(hi, digits)}, open below)"
        return s

    # ------------------------------------------------------------------ deriving
    def scaled(self, factor: float, *, unit: str | None = None, basis: Basis | None = None) -> Estimate:
        """This estimate times a positive ``factor`` (the bound keeps its sign)."""
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor must be a positive finite number, got {factor}")

        def m(x: float | None) -> float | None:
            return None if x is None else x * factor

        return replace(
            self, value=m(self.value),
            ci95=(m(self.ci95[0]), m(self.ci95[1])) if self.ci95 else None,
            bracket=(m(self.bracket[0]), m(self.bracket[1])) if self.bracket else None,
            unit=self.unit if unit is None else unit, basis=self.basis if basis is None else basis,
        )

    @classmethod
    def from_censored(cls, value: float | None, censored: str, **kw: object) -> Estimate:
        """From the limits' censoring words (``none|above|below|not_monotone|no_data|mixed``)."""
        if censored not in _CENSORED_BOUND:
            raise ValueError(f"censored must be one of {sorted(_CENSORED_BOUND)}, got {censored!r}")
        if censored == "no_data":
            value = None
        return cls(value, bound=_CENSORED_BOUND[censored], **kw)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ JSON edge
    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value, "ci95": list(self.ci95) if self.ci95 else None,
            "bracket": list(self.bracket) if self.bracket else None, "bound": self.bound,
            "unit": self.unit, "basis": self.basis,
        }

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Estimate:
        from bearing_lib.common.schema import parse

        return parse(cls, d, what="estimate")


SCHEMA = "bearing.estimate/1"


def schema_document() -> dict[str, object]:
    """The JSON Schema of an :class:`Estimate` (``bearing schema estimate``)."""
    from bearing_lib.common.schema import json_schema

    return json_schema(Estimate, title="bearing value with uncertainty", schema_id=SCHEMA)


def derived_qualifiers(bound: str) -> tuple[str, str]:
    """How a bound on a limit carries to what is computed from it: (the word before a count that divides by
    the limit, e.g. instances; the sign before a rate proportional to it, e.g. allowable req/s). An upper
    bound on the limit makes a count a floor ("at least ") and a rate a ceiling ("< "); a lower bound the
    other way round ("at most ", "≥ "); a value neither ("", "").

    >>> derived_qualifiers("upper")
    ('at least ', '< ')
    """
    return {"upper": ("at least ", "< "), "lower": ("at most ", "≥ ")}.get(bound, ("", ""))


__all__ = ["SCHEMA", "Basis", "Bound", "Estimate", "derived_qualifiers", "schema_document"]
