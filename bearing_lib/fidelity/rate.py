"""Request rate: the range of completed rates the test ran against production's peak.

The test's rates are its steps' completed throughput (req/s, the achieved basis the FOS uses),
from the limits of the run the plan uses; production's peak is the target load (the profile's
P99 per-minute rate × growth, or whatever target the plan was given). Verdict rule:
:mod:`bearing_lib.fidelity.thresholds`.
"""

from __future__ import annotations

from bearing_lib.common.format import fmt_number
from bearing_lib.fidelity.result import Dimension, Peak, RateRange
from bearing_lib.fidelity.result import missing_sides as _missing
from bearing_lib.fidelity.thresholds import RATE_RULE


def rate_dimension(test_rates: list[float], peak_rps: float | None, *, peak_basis: str = "",
                   instances: int | None = None) -> Dimension:
    """``test_rates``: the completed req/s of each tested step; ``peak_rps``: production's peak (target)."""
    rates = sorted(r for r in test_rates if r is not None and r > 0)
    label = "request rate"
    t = RateRange(min_rps=rates[0], max_rps=rates[-1], steps=len(rates)) if rates else None
    p = Peak(peak_rps=peak_rps, basis=peak_basis) if peak_rps else None
    if t is None or p is None:
        missing = _missing(t is None, p is None, "request rates")
        return Dimension("rate", label, "unknown", f"{missing} to compare", RATE_RULE,
                         test=t, production=p, unit="req/s")
    on = f" on {instances} instance(s)" if instances else ""
    span = f"{fmt_number(rates[0], 3)}–{fmt_number(rates[-1], 3)} req/s completed{on}"
    if rates[-1] >= peak_rps:
        return Dimension("rate", label, "represents",
                         f"the test ran {span}, up to production's peak of {fmt_number(peak_rps, 3)} req/s", RATE_RULE,
                         test=t, production=p, distance={"peak_over_max": peak_rps / rates[-1]}, unit="req/s")
    return Dimension("rate", label, "differs",
                     f"the test ran {span}; production's peak is {fmt_number(peak_rps, 3)} req/s, "
                     f"{peak_rps / rates[-1]:.1f}× the highest tested rate: the plan's instance count assumes capacity "
                     "adds up linearly", RATE_RULE, test=t, production=p,
                     distance={"peak_over_max": peak_rps / rates[-1]}, unit="req/s")


__all__ = ["rate_dimension"]
