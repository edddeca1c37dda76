"""``T_recover``: how long a service takes to come back inside its SLA after load is cut.

Definition (docs/domain.md): where a run drops from an overloaded step to a lower one, the
time from the drop until rolling P99 and error rate are back inside the SLA and stay
there for a hold window (default 30 s).

How bearing measures it, per drop:

* **drop**: consecutive steps ``i -> i+1`` of one run where step ``i`` is overloaded
  (the caller says which steps are, e.g. phase plastic/failure; by default a step is
  overloaded when ``sla_check`` fails on all its requests) and step ``i+1`` has a lower
  offered load. The drop time is the first request start of step ``i+1``.
* **rolling view**: what a monitor sees: at each tick ``tau`` (every ``tick_s``) the
  window holds the requests that *completed* in ``(tau - rolling_s, tau]`` (``end_s``;
  ``start_s + latency_ms`` when ``end_s`` is null). ``sla_check(window)`` decides
  whether the SLA holds there (the caller's SLA object: P99 clauses, error rate, and its
  own rule for too-few-requests windows).
* ``T_recover = tau* - t_drop``, where ``tau*`` is the first tick from which every tick
  up to ``tau* + hold_s`` passes. It includes the rolling window's lag (a monitor
  cannot see recovery before the bad completions leave its window). If no such tick
  exists before the lower step ends, the result is censored: ``> (end - t_drop)``.

* **windows scale with the step**: the rolling window and the hold together take at most
  half of the lower step (``WINDOW_SHARE``): for a lower step of length ``L`` both are
  multiplied by ``min(1, 0.5 L / (rolling_s + hold_s))``. A 40 s step with the default
  10 s window and 30 s hold is measured with a 5 s window and a 15 s hold, so a run that
  recovered at once reads about 5 s (the window's lag), not "> 37 s (censored)". When
  the scaled window would be shorter than ``MIN_ROLLING_S`` or the hold shorter than
  ``MIN_HOLD_S`` the step is too short to tell: that drop has ``censored="too_short"``,
  no value, and the reason says how long a lower step must be.

Without a drop, or without request times, the result has ``value_s`` None and a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.common.files import jsonable

SlaCheck = Callable[[pl.DataFrame], bool]

WINDOW_SHARE = 0.5
MIN_ROLLING_S = 2.0
MIN_HOLD_S = 5.0


@dataclass(frozen=True)
class Drop:
    """One drop from an overloaded step to a lower load, and how long the SLA took to hold again after it."""

    from_step: int
    to_step: int
    from_load: float | None
    to_load: float | None
    t_drop_s: float
    """When the lower step started (the trace's clock, s)."""
    step_s: float
    """How long the lower step lasted."""
    rolling_s: float
    """The rolling window used (scaled down for a short lower step)."""
    hold_s: float
    """The hold used (scaled the same way)."""
    value_s: float | None
    """Seconds until the rolling window was back inside the SLA and held; the step's length when it never was
    (``above``); None when too short to tell."""
    censored: str
    """``none``, ``above`` or ``too_short``."""


@dataclass
class RecoveryResult:
    """``T_recover`` in seconds (the longest over the run's drops), or None with a reason.

    ``censored`` is ``"none"``, ``"above"`` (not recovered before the lower step
    ended: the true value is larger than ``value_s``) or ``"too_short"`` (every lower
    step was too short for even the smallest windows: ``value_s`` None). Each drop's
    entry records the ``rolling_s`` and ``hold_s`` actually used.
    """

    value_s: float | None
    censored: str
    reason: str
    drops: list[Drop] = field(default_factory=list)
    available: bool = True
    """False when it could not be computed at all (``reason`` says why)."""

    def to_dict(self) -> dict[str, object]:
        return jsonable(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        v = "n/a" if self.value_s is None else (">" if self.censored == "above" else "") + f"{self.value_s:.1f} s"
        return f"<p><b>T_recover</b> {v}: {self.reason}</p>"


def t_recover(
    requests: pl.DataFrame,
    sla_check: SlaCheck,
    *,
    overloaded_steps: Iterable[int] | None = None,
    hold_s: float = 30.0,
    rolling_s: float = 10.0,
    tick_s: float = 1.0,
) -> RecoveryResult:
    """``T_recover`` for one run.

    Parameters
    ----------
    requests
        Canonical rows of one run: ``step``, ``offered_load``, ``start_s`` and
        ``end_s`` (or ``latency_ms``), plus whatever ``sla_check`` reads.
    sla_check
        ``frame -> bool``: True when the SLA holds over the requests in ``frame``.
    overloaded_steps
        Steps that count as overloaded; default: steps whose whole set of requests
        fails ``sla_check``.
    hold_s, rolling_s, tick_s
        Hold window, rolling-window length and tick, seconds.
    """
    if min(hold_s, rolling_s, tick_s) <= 0:
        raise ParameterError("hold_s, rolling_s and tick_s must be > 0 seconds")
    need = ["step", "offered_load", "start_s"]
    missing = [c for c in need if c not in requests.columns]
    if missing:
        raise SchemaError(f"T_recover needs column(s) {missing}; found {requests.columns}")
    if "run_id" in requests.columns and requests["run_id"].n_unique() > 1:
        raise ParameterError("t_recover takes one run; split the trace by run_id first")
    if requests["start_s"].null_count() == requests.height:
        return RecoveryResult(None, "none", "the trace has no per-request times: T_recover cannot be measured")
    end = pl.col("end_s") if "end_s" in requests.columns else pl.lit(None, dtype=pl.Float64)
    if "latency_ms" in requests.columns:
        end = end.fill_null(pl.col("start_s") + pl.col("latency_ms") / 1000.0)
    frame = requests.filter(pl.col("start_s").is_not_null()).with_columns(end.alias("_end"))
    if frame["_end"].null_count() == frame.height:
        return RecoveryResult(None, "none", "requests have start times but no end times or latencies")
    steps = (
        frame.group_by("step")
        .agg(pl.col("offered_load").first(), pl.col("start_s").min().alias("t0"), pl.col("start_s").max().alias("t1"))
        .sort("t0")
    )
    if overloaded_steps is None:
        over = {s for s in steps["step"].to_list() if not sla_check(frame.filter(pl.col("step") == s))}
    else:
        over = set(overloaded_steps)
    rows = steps.rows(named=True)
    drops = [
        (a, b)
        for a, b in zip(rows, rows[1:], strict=False)
        if a["step"] in over and b["offered_load"] < a["offered_load"]
    ]
    if not drops:
        return RecoveryResult(None, "none", "no drop from an overloaded step to a lower load in this run")
    ends = frame.filter(pl.col("_end").is_not_null()).sort("_end")
    t_end = ends["_end"].to_numpy()
    details = []
    for a, b in drops:
        t_drop = float(b["t0"])
        # the lower step ends when the next step starts (or at its last request start)
        later = [r["t0"] for r in rows if r["t0"] > b["t0"]]
        t_stop = float(later[0]) if later else float(b["t1"])
        span = t_stop - t_drop
        scale = min(1.0, WINDOW_SHARE * span / (rolling_s + hold_s)) if span > 0 else 0.0
        roll, hold = rolling_s * scale, hold_s * scale
        d = {
            "from_step": a["step"],
            "to_step": b["step"],
            "from_load": a["offered_load"],
            "to_load": b["offered_load"],
            "t_drop_s": t_drop,
            "step_s": span,
            "rolling_s": roll,
            "hold_s": hold,
        }
        if roll < min(MIN_ROLLING_S, rolling_s) or hold < min(MIN_HOLD_S, hold_s):
            details.append(Drop(**d, value_s=None, censored="too_short"))
            continue
        ticks = np.arange(t_drop, t_stop + 1e-9, tick_s)
        ok = np.empty(ticks.size, dtype=bool)
        for k, tau in enumerate(ticks):
            lo, hi = np.searchsorted(t_end, [tau - roll, tau], side="right")
            ok[k] = bool(sla_check(ends.slice(int(lo), int(hi - lo))))
        need_ticks = int(round(hold / tick_s))
        found = None
        run = 0
        for k in range(ok.size):
            run = run + 1 if ok[k] else 0
            if run > need_ticks:
                found = ticks[k - need_ticks]
                break
        if found is None:
            details.append(Drop(**d, value_s=float(span), censored="above"))
        else:
            details.append(Drop(**d, value_s=float(found - t_drop), censored="none"))
    told = [d for d in details if d.censored != "too_short"]
    if not told:
        need = 2 * (min(MIN_ROLLING_S, rolling_s) + min(MIN_HOLD_S, hold_s))
        short = max(details, key=lambda d: d.step_s)
        return RecoveryResult(
            None, "too_short",
            f"the lower step after the overload ({short.step_s:.1f} s, step {short.to_step}) is too short to "
            f"tell: a rolling window and hold need a lower step of at least {need:g} s",
            details,
        )
    worst = max(told, key=lambda d: (d.censored == "above", d.value_s))
    scaled = "" if worst.rolling_s == rolling_s else (
        f" (windows scaled to the {worst.step_s:.0f} s step from {rolling_s:g} s + {hold_s:g} s)")
    if worst.censored == "above":
        reason = (
            f"not back inside the SLA for {worst.hold_s:g} s before step {worst.to_step} ended: "
            f"T_recover > {worst.value_s:.1f} s{scaled}"
        )
    else:
        reason = (
            f"rolling {worst.rolling_s:g} s window back inside the SLA and held for {worst.hold_s:g} s, "
            f"{worst.value_s:.1f} s after dropping from step {worst.from_step} to {worst.to_step}{scaled}"
        )
    if len(told) < len(details):
        reason += f"; {len(details) - len(told)} other drop(s) too short to tell"
    return RecoveryResult(float(worst.value_s), worst.censored, reason, details)  # type: ignore[arg-type]
