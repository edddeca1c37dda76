"""The mid-term forecast of the daily peak: :class:`TrendForecast`, one type for the profile and the plan.

:func:`bearing_lib.traffic.targets.trend_forecast` makes it (statsmodels OLS, the trend used only when
significant); the profile JSON carries it whole as ``targets.mid_term.trend`` (``to_dict``), which
:class:`~bearing_lib.traffic.document.TrafficProfile` reads back into this class when the document is
validated (the JSON edge; a key renamed or missing is named there with its path), and the plan's staged
reservation uses that object (:attr:`bearing_lib.plan.inputs.ProfileInput.forecast`). Kept apart from
``targets.py`` so that reading a profile document needs neither numpy nor polars.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict

TREND_TEST = "OLS slope t-test at 5 %: the trend is used when the slope's 95 % CI excludes 0"


@dataclass(frozen=True)
class TrendForecast:
    """The daily peak ``horizon_days`` after the last day: the OLS line when its slope is significant
    (``significant``: the slope's 95 % CI excludes 0), else the flat level; the interval clipped at 0."""

    __pydantic_config__ = ConfigDict(extra="forbid")
    n_days: int
    first_day: float
    last_day: float
    slope_rps_per_day: float
    slope_ci95: tuple[float, float]
    intercept: float
    significant: bool
    test: str
    horizon_days: float
    value: float
    lower: float
    upper: float
    level: float
    clipped: bool
    method: str
    statement: str

    def at(self, day: float) -> float:
        """The forecast line at day index ``day`` (flat at the level when there is no trend), never below 0."""
        if not self.significant:
            return max(0.0, self.intercept)
        return max(0.0, self.intercept + self.slope_rps_per_day * day)

    def to_dict(self) -> dict[str, object]:
        d = dict(self.__dict__)
        d["slope_ci95"] = list(self.slope_ci95)
        return d


__all__ = ["TREND_TEST", "TrendForecast"]
