"""Tokens and money, and the staged plan in instances: pure functions over plain numbers.

Nothing here reads files or builds the plan; :func:`economics_from_plan` and
:func:`staged_from_plan` read the plan's public JSON (docs/interfaces.md §6) so the plan
(``plan/capacity_plan.py``) can call them and carry the result.

Tokens
    A limit in req/s becomes tokens/s with the mix's mean token counts:
    ``input = rps × mean input tokens``, ``output = rps × mean output tokens``, total = both.
Money (``price_per_hour`` = one instance)
    ``$/1M output tokens at the allowable load = price_per_hour / (A × mean output × 3600) × 10^6``
    with ``A`` the per-instance allowable req/s; ``$/request = price_per_hour / (A × 3600)``;
    ``monthly cost of the fleet = instances × price × 730 h`` (8,760 h / 12);
    the burst buffer costs ``buffer × price × 730 h`` when fixed, and ``buffer × price × bursts
    per month × burst hours`` when elastic (it runs only during bursts).
Budget scorecard row (DOMAIN.md: green "clear cost model with headroom", yellow "computable
    but tight", red "never computed"): red without a cost or without a budget to judge it
    against, green when the monthly cost leaves at least ``headroom`` (20 %) of the budget, yellow
    when it fits with less, red when it exceeds the budget.
Staged plan (DOMAIN.md: near term = current peak × 1.5; mid term = 6-month forecast × 1.5)
    ``instances = ceil(rps × 1.5 / A)``. The forecast (:func:`growth_forecast`) is a straight
    line through the weekly peaks (statsmodels OLS, needs >= 4 weeks) with its prediction
    interval; :func:`weeks_until_exhausted` is the first week the forecast (or its upper bound)
    exceeds the fleet's allowable capacity.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from bearing_lib.common.errors import InsufficientDataError, ParameterError, SchemaError

HOURS_PER_MONTH = 730.0
STAGE_FACTOR = 1.5
MIN_WEEKS = 4


def _positive(**values: float | None) -> None:
    for name, v in values.items():
        if v is None or not math.isfinite(v) or v <= 0:
            raise ParameterError(f"{name} must be a positive number (got {v})")


@dataclass(frozen=True)
class TokenRates:
    """A request rate as tokens per second."""

    rps: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def token_rates(rps: float, *, mean_input_tokens: float, mean_output_tokens: float) -> TokenRates:
    """``rps`` in input, output and total tokens per second."""
    if rps < 0 or mean_input_tokens < 0 or mean_output_tokens < 0:
        raise ParameterError("rates and token counts must be >= 0")
    i, o = rps * mean_input_tokens, rps * mean_output_tokens
    return TokenRates(rps, i, o, i + o)


def cost_per_million_output_tokens(price_per_hour: float, *, rps: float, mean_output_tokens: float) -> float:
    """Dollars per 10^6 output tokens for one instance serving ``rps`` (its allowable load)."""
    _positive(price_per_hour=price_per_hour, rps=rps, mean_output_tokens=mean_output_tokens)
    return price_per_hour / (rps * mean_output_tokens * 3600.0) * 1e6


def cost_per_request(price_per_hour: float, *, rps: float) -> float:
    """Dollars per request for one instance serving ``rps``."""
    _positive(price_per_hour=price_per_hour, rps=rps)
    return price_per_hour / (rps * 3600.0)


def monthly_cost(instances: int, price_per_hour: float, *, hours: float = HOURS_PER_MONTH) -> float:
    """``instances`` running all month."""
    _positive(price_per_hour=price_per_hour)
    if instances < 0:
        raise ParameterError(f"instances must be >= 0 (got {instances})")
    return instances * price_per_hour * hours


def burst_buffer_monthly_cost(
    buffer: int,
    price_per_hour: float,
    *,
    mode: str,
    bursts_per_month: float | None = None,
    burst_hours: float | None = None,
) -> float:
    """The burst buffer's monthly cost: all month when ``fixed``, only during bursts when ``elastic``."""
    if mode == "fixed":
        return monthly_cost(buffer, price_per_hour)
    if mode != "elastic":
        raise ParameterError(f"buffer mode must be 'fixed' or 'elastic' (got {mode!r})")
    if bursts_per_month is None or burst_hours is None or bursts_per_month < 0 or burst_hours < 0:
        raise ParameterError("an elastic buffer needs bursts_per_month and burst_hours (>= 0)")
    return monthly_cost(buffer, price_per_hour, hours=bursts_per_month * burst_hours)


def budget_row(monthly: float | None, budget: float | None, *, headroom: float = 0.20) -> dict[str, Any]:
    """The budget scorecard row (same keys as the plan's scorecard rows)."""
    if monthly is None:
        return {"dimension": "budget", "status": "red", "value": None, "reason": "the running cost was never computed"}
    if budget is None or budget <= 0:
        return {"dimension": "budget", "status": "red", "value": monthly,
                "reason": f"monthly cost ${monthly:,.0f} with no budget to judge it against"}
    share = monthly / budget
    if share <= 1 - headroom:
        status = "green"
        why = f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget (headroom ≥ {headroom:.0%})"
    elif share <= 1:
        status, why = "yellow", f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget: tight"
    else:
        status, why = "red", f"${monthly:,.0f}/month exceeds the ${budget:,.0f} budget ({share:.0%})"
    return {"dimension": "budget", "status": status, "value": share, "reason": why}


def _get(doc: dict, dotted: str, path: str) -> Any:
    cur: Any = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise SchemaError(f"the plan JSON has no {dotted}", path=path, field=dotted)
        cur = cur[part]
    return cur


def economics_from_plan(
    plan: dict[str, Any],
    *,
    price_per_hour: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    monthly_budget: float | None = None,
    burst_hours: float | None = None,
    path: str = "plan JSON",
) -> dict[str, Any]:
    """Tokens and money at the plan's allowable load, from the plan's public JSON (§6).

    Reads ``instances.{per_instance_allowable_rps, base, buffer, total, buffer_plan.mode,
    burst.per_month, burst.duration_min}``; ``burst_hours`` overrides the burst duration.
    """
    a = float(_get(plan, "instances.per_instance_allowable_rps", path))
    total = int(_get(plan, "instances.total", path))
    buffer = int(_get(plan, "instances.buffer", path))
    inst = plan["instances"]
    mode = ((inst.get("buffer_plan") or {}).get("mode")) or "fixed"
    burst = inst.get("burst") or {}
    per_month = burst.get("per_month")
    hours = burst_hours if burst_hours is not None else (
        burst["duration_min"] / 60.0 if burst.get("duration_min") is not None else None)
    fleet = monthly_cost(total, price_per_hour)
    if mode == "elastic" and (per_month is None or hours is None):
        buffer_cost = None
        buffer_note = "elastic buffer: the plan gives no burst frequency and duration (pass burst_hours)"
    else:
        buffer_cost = burst_buffer_monthly_cost(buffer, price_per_hour, mode=mode, bursts_per_month=per_month,
                                                burst_hours=hours)
        buffer_note = f"{mode} buffer of {buffer}"
    base_cost = monthly_cost(total - buffer, price_per_hour)
    recommended = base_cost + (buffer_cost if buffer_cost is not None else 0.0)
    return {
        "price_per_hour": price_per_hour,
        "per_instance_allowable": token_rates(a, mean_input_tokens=mean_input_tokens,
                                              mean_output_tokens=mean_output_tokens).to_dict(),
        "usd_per_million_output_tokens": cost_per_million_output_tokens(price_per_hour, rps=a,
                                                                        mean_output_tokens=mean_output_tokens),
        "usd_per_request": cost_per_request(price_per_hour, rps=a),
        "monthly_cost_all_instances_always_on": fleet,
        "monthly_cost_base": base_cost,
        "monthly_cost_burst_buffer": buffer_cost,
        "monthly_cost_recommended": recommended if buffer_cost is not None else None,
        "buffer": buffer_note,
        "budget_row": budget_row(recommended if buffer_cost is not None else None, monthly_budget),
    }


# --------------------------------------------------------------------------- staged plan
def instances_for(rps: float, per_instance_allowable_rps: float, *, factor: float = STAGE_FACTOR) -> int:
    """``ceil(rps × factor / A)``."""
    _positive(per_instance_allowable_rps=per_instance_allowable_rps)
    if rps < 0:
        raise ParameterError(f"rps must be >= 0 (got {rps})")
    return math.ceil(rps * factor / per_instance_allowable_rps - 1e-9)


@dataclass(frozen=True)
class Forecast:
    """A straight-line forecast of the weekly peak: at ``horizon_weeks`` after the last week."""

    n_weeks: int
    slope_per_week: float
    intercept: float
    horizon_weeks: int
    value: float
    lower: float
    upper: float
    level: float
    method: str

    def at(self, week: float) -> float:
        """The fitted line at week index ``week`` (0 = the first data week)."""
        return self.intercept + self.slope_per_week * week

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def growth_forecast(weekly_peaks: list[float], *, horizon_weeks: int = 26, level: float = 0.95) -> Forecast:
    """OLS line through the weekly peaks (week index 0, 1, ...) and its prediction interval at
    ``horizon_weeks`` after the last week (statsmodels; 26 weeks = the sources' six months)."""
    import numpy as np
    import statsmodels.api as sm

    y = np.asarray(weekly_peaks, dtype=float)
    if y.size < MIN_WEEKS:
        raise InsufficientDataError(f"a growth forecast needs >= {MIN_WEEKS} weeks of peaks (got {y.size})")
    if not np.isfinite(y).all():
        raise ParameterError("weekly peaks must be finite numbers")
    w = np.arange(y.size, dtype=float)
    fit = sm.OLS(y, sm.add_constant(w)).fit()
    at = float(y.size - 1 + horizon_weeks)
    frame = fit.get_prediction(np.array([[1.0, at]])).summary_frame(alpha=1 - level)
    return Forecast(
        n_weeks=int(y.size), slope_per_week=float(fit.params[1]), intercept=float(fit.params[0]),
        horizon_weeks=horizon_weeks, value=float(frame["mean"].iloc[0]),
        lower=float(frame["obs_ci_lower"].iloc[0]), upper=float(frame["obs_ci_upper"].iloc[0]), level=level,
        method="statsmodels OLS of weekly peak on week index; prediction interval (obs_ci) at the horizon",
    )


def weeks_until_exhausted(forecast: Forecast, capacity_rps: float, *, max_weeks: int = 520) -> int | None:
    """Weeks after the last data week until the forecast line first exceeds ``capacity_rps``
    (None: not within ``max_weeks``, e.g. flat or falling traffic); 0 when it already does."""
    last = forecast.n_weeks - 1
    for k in range(max_weeks + 1):
        if forecast.at(last + k) > capacity_rps:
            return k
    return None


def staged_from_plan(
    plan: dict[str, Any], *, current_peak_rps: float | None = None, weekly_peaks: list[float] | None = None,
    horizon_weeks: int = 26, path: str = "plan JSON",
) -> dict[str, Any]:
    """Near and mid term in instances from the plan JSON (``target.rps`` is the current peak unless
    ``current_peak_rps`` is given); mid term only with >= 4 weekly peaks."""
    a = float(_get(plan, "instances.per_instance_allowable_rps", path))
    fleet = int(_get(plan, "instances.total", path))
    peak = current_peak_rps if current_peak_rps is not None else float(_get(plan, "target.rps", path))
    out: dict[str, Any] = {
        "per_instance_allowable_rps": a,
        "near_term": {"rps": peak * STAGE_FACTOR, "instances": instances_for(peak, a),
                      "rule": f"current peak {peak:.4g} req/s × {STAGE_FACTOR}"},
        "mid_term": None,
        "fleet_runs_out": None,
    }
    if weekly_peaks is None or len(weekly_peaks) < MIN_WEEKS:
        out["mid_term_reason"] = f"a forecast needs >= {MIN_WEEKS} weeks of peaks (got {len(weekly_peaks or [])})"
        return out
    fc = growth_forecast(weekly_peaks, horizon_weeks=horizon_weeks)
    out["mid_term"] = {"rps": fc.value * STAGE_FACTOR, "instances": instances_for(fc.value, a),
                       "instances_upper": instances_for(fc.upper, a), "forecast": fc.to_dict(),
                       "rule": f"{horizon_weeks}-week forecast {fc.value:.4g} req/s "
                               f"({fc.level:.0%} PI {fc.lower:.4g}–{fc.upper:.4g}) × {STAGE_FACTOR}"}
    cap = fleet * a
    k = weeks_until_exhausted(fc, cap)
    out["fleet_runs_out"] = {"capacity_rps": cap, "weeks_after_last": k,
                             "statement": (f"the current fleet ({fleet} × {a:.4g} req/s) runs out in {k} week(s)"
                                           if k is not None else "the forecast does not reach the fleet's capacity")}
    return out
