"""The follow-up test: which loads to run next, for how long, and as a file the user's own tool runs.

From one mix of a limits document (docs/interfaces.md §4) :func:`design_followup` builds a
:class:`FollowUp`:

* **Loads**: ``n_loads`` (default 4) evenly spaced across the reported 95 % CI (both ends
  included), run in **ascending** order in one continuous run (a lower load after a failing
  one would be a recovery step, which bearing leaves out of the limit).
* **Queue model** (M/G/1-style, stated in the plan): the mean time in system grows as
  ``W(x) = W0 / (1 − x / μ)``; the queue's **relaxation time** at load ``x`` is
  ``τ(x) = W0 / (1 − ρ)²`` with ``ρ = min(x / μ, RHO_MAX)`` (the M/G/1 ``1 / (μ (1 − ρ)²)``
  scale with the light-load service time ``W0`` as the time unit): the time a queue needs
  to settle at a new load grows with the square of the inverse distance to capacity.
  Calibrated on the first test (:func:`fit_capacity`): ``W0`` from its light-load steps,
  ``μ`` = the load where its mean time in system doubles. Where the steps show the server
  **saturated** (:func:`measured_saturation`: the limit's ``q_ult.saturated_rps``, else the
  highest completed rate of a step flagged ``saturated``, else of a step meeting the same rule,
  ``curves.is_saturated``), that throughput caps ``μ``, or is ``μ`` when the time in system
  never doubled. Without either ``μ`` is taken ``RHO_FALLBACK_MARGIN`` above the CI's top.
  ``model.source`` says which was used.
* **Step duration** = warm-up ``WARMUP_TAUS · τ`` (discarded) + measurement
  ``max(MEASURE_TAUS · τ, MIN_REQUESTS / x)`` (enough requests for a P99 with room:
  368 are needed, docs/limits.md); then, when a **budget** is set (default: 2 × the first
  test's total step time), water-filled into it: a step that needs less keeps what it
  needs, the others share the rest equally (rounded down to 10 s).
* **Expected resolution**: the spacing of the loads relative to the CI's centre (the
  follow-up's bracket), which is what the pooled estimate's widened CI is at worst.

Whether a test resolves its limit finely enough to need none (:func:`resolution_of`: the 95 % CI within
``RESOLUTION_TOL`` of the value on both sides) and the follow-up attached to a coarse one
(:func:`attach_followup`) are decided here too, as ``fit_limits`` assembles each limit.

The writers that render the plan in the first test's own tool, with the workload measured from
the first test's own file, are in :mod:`bearing_lib.limits.nexttools`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bearing_lib.common.errors import BearingError, ParameterError
from bearing_lib.common.schema import NotAvailable
from bearing_lib.limits.curves import (
    BELOW_OFFERED_RATIO,
    SATURATION_LATENCY_RATIO,
    central_latency_s,
    is_saturated,
    rate_at,
)
from bearing_lib.limits.result import FOLLOWUP_ORDER, FollowUpStep, FollowUpSummary, Resolution

if TYPE_CHECKING:  # annotations only: `bearing next` reads a limits document and needs neither at run time
    from bearing_lib.data.mixes import Mix
    from bearing_lib.limits.judging import JudgedStep

N_LOADS = 4
RHO_MAX = 0.97
RHO_FALLBACK_MARGIN = 0.10
KNEE = 2.0
WARMUP_TAUS = 3.0
MEASURE_TAUS = 10.0
MIN_REQUESTS = 1000
MIN_STEP_S = 60.0
BUDGET_FACTOR = 2.0
RESOLUTION_TOL = 0.10
"""A limit is coarse when its 95 % CI reaches more than this (relative) from its value on either side."""
RESOLUTION_RERUN_LOADS = 4
OPEN_RERUN_FACTOR = 1.2
"""With a CI open above, the loads to re-run reach this multiple of the value."""


@dataclass(frozen=True)
class FollowUpModel:
    """The queue model the durations come from, calibrated on the first test (the module's "Queue model")."""

    w0_s: float
    """``W0``: the light-load time in system (s)."""
    mu: float
    """``mu``: the capacity the relaxation time is measured against (the offered-load unit)."""
    mu_basis: str
    """``doubling``, ``doubling capped by saturation``, ``saturation`` or ``fallback``."""
    saturated_rps: float | None
    source: str
    """How ``mu`` was found, in words."""
    name: str = "M/G/1-style relaxation"
    w_formula: str = "W0 / (1 - x / mu)"
    tau_formula: str = "W0 / (1 - rho)^2"
    rho_max: float = RHO_MAX
    warmup: str = f"{WARMUP_TAUS:g} tau"
    measurement: str = f"max({MEASURE_TAUS:g} tau, {MIN_REQUESTS} requests)"
    budget: str = "durations water-filled: a step needing less keeps it, the others share the rest equally"

    def to_dict(self) -> dict[str, object]:
        """The ``model`` of ``bearing next --json`` (keys ``W(x)``, ``tau(x)``, ``W0_s`` as written there)."""
        return {"name": self.name, "W(x)": self.w_formula, "tau(x)": self.tau_formula, "W0_s": self.w0_s,
                "mu": self.mu, "mu_basis": self.mu_basis, "saturated_rps": self.saturated_rps,
                "rho_max": self.rho_max, "source": self.source, "warmup": self.warmup,
                "measurement": self.measurement, "budget": self.budget}


@dataclass
class FollowUp:
    """The follow-up test for one mix (a JSON-able plan; :meth:`to_dict`)."""

    run_id: str
    mix: str
    unit: str
    steps: list[FollowUpStep]
    repeats: int
    model: FollowUpModel
    budget_s: float | None
    scaled: float
    expected_resolution: float
    first_test_s: float | None
    notes: list[str] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return self.repeats * sum(s.duration_s for s in self.steps)

    def to_dict(self) -> dict[str, object]:
        return {
            "run_id": self.run_id, "mix": self.mix, "unit": self.unit, "repeats": self.repeats,
            "order": FOLLOWUP_ORDER,
            "steps": [s.__dict__ for s in self.steps], "total_s": self.total_s, "first_test_s": self.first_test_s,
            "budget_s": self.budget_s, "scaled": self.scaled, "model": self.model.to_dict(),
            "expected_resolution": self.expected_resolution, "notes": self.notes,
        }

    def summary(self) -> FollowUpSummary:
        """The part the limits JSON keeps in ``q_ult.resolution.followup``."""
        return FollowUpSummary(steps=list(self.steps), total_s=self.total_s, budget_s=self.budget_s,
                               expected_resolution=self.expected_resolution, order=FOLLOWUP_ORDER,
                               repeats=self.repeats, model=self.model.name)


def _ceil10(x: float) -> float:
    return float(math.ceil(x / 10.0) * 10.0)


def fit_capacity(steps: list[Mapping[str, object]]) -> tuple[float | None, float | None]:
    """``(W0_s, μ)`` from the first test's own latency growth (None when not fittable).

    ``W(x)`` is each step's mean time in system (Little: ``concurrency_mean / throughput``).
    ``W0`` is its median over the lowest third of the loads (the service time at light load);
    the capacity ``μ`` is the load where ``W`` first reaches ``KNEE × W0``, linearly
    interpolated between the two steps around it. A single M/M/1 server doubles its ``W`` at
    half its capacity, but a batching inference server's latency stays nearly flat until it
    is close to capacity (a global ``1/W`` line put ``μ`` at about 3× the oracle's true limit),
    so the doubling point is taken as the capacity itself.
    """
    pts = []
    for s in steps:
        x, c, t = s.get("load_axis"), s.get("concurrency_mean"), s.get("throughput_rps")
        if x is None or c is None or not t or s.get("recovery_step") or not math.isfinite(float(x)):
            continue
        if float(c) <= 0 or "generator_behind" in (s.get("flags") or []):
            continue
        pts.append((float(x), float(c) / float(t)))
    pts.sort()
    if len(pts) < 3:
        return None, None
    low = [w for _, w in pts[: max(1, len(pts) // 3)]]
    w0 = float(np.median(low))
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if y1 >= KNEE * w0 > y0:
            knee = x0 + (KNEE * w0 - y0) / (y1 - y0) * (x1 - x0)
            return w0, knee
    return w0, None


@dataclass(frozen=True)
class MeasuredSaturation:
    """The highest rate a first test's server completed while saturated: the follow-up's capacity ``μ`` at most.

    ``source`` is ``"limit"`` (the limit's ``q_ult.saturated_rps``, the cap ``curves.saturation_cap`` put on it),
    ``"flag"`` (the highest ``throughput_rps`` of a step flagged ``saturated``) or ``"rule"`` (of a step meeting
    ``curves.is_saturated`` on its own numbers: a timed step, which the limit does not flag); ``steps`` are the
    saturated steps.
    """

    rps: float
    source: str
    steps: tuple[int, ...]

    def describe(self) -> str:
        which = {"limit": "the limit's saturated_rps (the throughput it is capped at)",
                 "flag": "the highest completed rate of a step flagged saturated",
                 "rule": "the highest completed rate of a step that saturated the server (completions below "
                         f"{BELOW_OFFERED_RATIO:.0%} of the offered rate, typical request >= "
                         f"{SATURATION_LATENCY_RATIO:g}x the lowest step's latency)"}[self.source]
        shown = f" (step {', '.join(str(x) for x in self.steps)})" if self.steps else ""
        return f"{self.rps:.4g} rps, {which}{shown}"


def _finite(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def measured_saturation(mix_doc: Mapping[str, object]) -> MeasuredSaturation | None:
    """The saturation a mix's first test measured (None when its steps do not show one, or the unit is not rps).

    In order: the limit's ``q_ult.saturated_rps``; the highest ``throughput_rps`` of the steps flagged
    ``saturated`` (untimed traces and load-point tables); else the highest of the steps that meet the same rule
    (``curves.is_saturated``: completed rate below 70 % of the offered rate and the step's median latency, else
    its mean, at least 3 × the lowest step's), for timed steps, which the limit leaves unflagged.
    """
    q = mix_doc.get("q_ult") or {}
    if (q.get("unit") or "load") != "rps":
        return None
    steps = [s for s in (mix_doc.get("steps") or []) if not s.get("recovery_step")
             and "generator_behind" not in (s.get("flags") or [])]
    flagged = [s for s in steps if "saturated" in (s.get("flags") or []) and _finite(s.get("throughput_rps"))]
    cap = _finite(q.get("saturated_rps"))
    if cap is not None and cap > 0:
        return MeasuredSaturation(cap, "limit", tuple(int(s["step"]) for s in flagged))
    if flagged:
        best = max(flagged, key=lambda s: float(s["throughput_rps"]))
        return MeasuredSaturation(float(best["throughput_rps"]), "flag", tuple(int(s["step"]) for s in flagged))
    lat = {}
    for s in steps:
        st = s.get("stats") or {}
        v = central_latency_s(_finite(st.get("latency_ms_p50")), _finite(st.get("latency_ms_mean")))
        if v is not None and v > 0:
            lat[int(s["step"])] = v
    if not lat:
        return None
    l0 = min(lat.values())
    sat = [s for s in steps if int(s["step"]) in lat and _finite(s.get("throughput_rps"))
           and is_saturated(_finite(s.get("load_axis")), "rps", float(s["throughput_rps"]), lat[int(s["step"])], l0)]
    if not sat:
        return None
    best = max(sat, key=lambda s: float(s["throughput_rps"]))
    return MeasuredSaturation(float(best["throughput_rps"]), "rule", tuple(int(s["step"]) for s in sat))


def _rate_at(x: float, unit: str, steps: list[Mapping[str, object]]) -> float:
    """The request rate a step at load ``x`` completes: ``x`` itself on an rps axis (the schedule sends it); on
    another (concurrency: users, streams) the first test's completed rates read at ``x`` by the fit's rule
    (:func:`curves.rate_at`: interpolated, scaled below the lowest step, held above the highest; steps that completed
    nothing are left out here, as a rate of 0 would ask for an endless step), as a closed loop
    of ``c`` users sends what the server completes, not ``c`` a second (AIPerf's 213-concurrency step of 2,240 s
    was said to send 477,680 requests where the server completes about 17.7 a second; round 22). ``x`` where no
    step gives a rate."""
    if unit == "rps":
        return x
    pts = [(a, b) for s in steps
           if not s.get("recovery_step") and (a := _finite(s.get("load_axis"))) is not None and a > 0
           and (b := _finite(s.get("throughput_rps"))) is not None and b > 0]
    if not pts:
        return x
    # the fit's rule, repeats at one load their mean (curves.rate_at, via repeat_means)
    got = rate_at(x, np.array([a for a, _ in pts]), np.array([b for _, b in pts]), unit)
    return x if got is None else got


def _water_fill(wants: list[float], budget: float) -> list[float]:
    """Durations ``min(want, level)`` summing to ``budget`` (the steps that need less keep what they need)."""
    if sum(wants) <= budget:
        return list(wants)
    order = sorted(wants)
    left, n = budget, len(order)
    level = budget / n
    for k, wv in enumerate(order):
        level = left / (n - k)
        if wv >= level:
            break
        left -= wv
    return [min(wv, level) for wv in wants]


def design_followup(mix_doc: Mapping[str, object], *, n_loads: int = N_LOADS, repeats: int = 1,
                    budget_s: float | None = None, first_test_s: float | None = None) -> FollowUp:
    """The follow-up test of one mix entry of a limits document (``doc["mixes"][k]``).

    ``budget_s`` caps the follow-up's total time (default ``BUDGET_FACTOR`` × the first
    test's summed step durations; 0 = no cap).
    """
    if n_loads < 2:
        raise ParameterError(f"--loads must be at least 2, got {n_loads}")
    if repeats < 1:
        raise ParameterError(f"--repeats must be at least 1, got {repeats}")
    q = mix_doc.get("q_ult") or {}
    run, mix = str(mix_doc.get("run_id")), str((mix_doc.get("mix") or {}).get("name", "all"))
    unit = q.get("unit") or "load"
    ci = list(q.get("ci95") or [None, None])
    bracket = list(q.get("bracket") or [None, None])
    value = q.get("value")
    steps = list(mix_doc.get("steps") or [])
    notes: list[str] = []
    cens = q.get("censored")
    lo, hi = ci
    if cens == "above" and value is not None:
        lo, hi = float(value), 1.5 * float(value)
        notes.append(f"the first test never failed: the follow-up extends upwards from {value:g} {unit}")
    elif cens == "below" and value is not None:
        lo, hi = 0.5 * float(value), float(value)
        notes.append(f"the first test failed at its lowest load: the follow-up extends downwards from {value:g}")
    elif lo is None and hi is None:  # no interval at all: the bracket, else 0.8-1.2 x the value
        lo = bracket[0] if bracket[0] is not None else (0.8 * value if value else None)
        hi = bracket[1] if bracket[1] is not None else (1.2 * value if value else None)
    elif (lo is None or hi is None) and value:
        # a CI open at one end keeps its other end; the open one reaches 1.2 x the value up or value / 1.2 down, as
        # the resolution's suggested loads do (resolution_of), so the note and the plan name the same range
        lo = float(lo) if lo is not None else float(value) / OPEN_RERUN_FACTOR
        hi = float(hi) if hi is not None else OPEN_RERUN_FACTOR * float(value)
    if lo is None or hi is None or not hi > lo > 0:
        raise ParameterError(f"{run}/{mix}: the limits give no range to design a follow-up in "
                             f"(value {value}, 95% CI {ci}, bracket {bracket}, censored {cens})")
    if unit != "rps":
        notes.append(f"offered load unit {unit!r}: the durations assume a request rate; check them")
    loads = [float(x) for x in np.linspace(lo, hi, n_loads)]
    w0, mu = fit_capacity(steps)
    sat = measured_saturation(mix_doc)
    doubling = (f"W0 = median light-load time in system; mu from the load where it reaches {KNEE:g} x W0 (taken "
                "as the capacity: a batching server's latency is flat until near it)")
    if mu is not None and w0 is not None and sat is not None and sat.rps < mu:
        source = (f"calibrated on the first test: {doubling}, {mu:.4g} rps, capped at the measured saturation: "
                  f"{sat.describe()}")
        basis, mu = "doubling capped by saturation", sat.rps
    elif mu is not None and w0 is not None:
        source = f"calibrated on the first test: {doubling}" + (
            f"; the measured saturation ({sat.describe()}) lies above it" if sat is not None else "")
        basis = "doubling"
    elif sat is not None:
        w0 = w0 or 1.0
        source = (f"measured saturation: {sat.describe()} (the first test's mean time in system never reached "
                  f"{KNEE:g}x its light-load value)")
        basis, mu = "saturation", sat.rps
    else:
        mu = hi * (1 + RHO_FALLBACK_MARGIN)
        w0 = w0 or 1.0
        source = (f"fallback: capacity taken {RHO_FALLBACK_MARGIN:.0%} above the CI's top (the first test's "
                  f"mean time in system never reached {KNEE:g}x its light-load value, and no step saturated "
                  "the server)")
        basis = "fallback"
    if sat is not None and hi > 1.01 * sat.rps:
        notes.append(f"loads above {sat.rps:.4g} rps lie beyond what the server completed while saturated "
                     "(model.source): their queue grows for as long as the step lasts")
    model = FollowUpModel(w0_s=w0, mu=mu, mu_basis=basis, saturated_rps=sat.rps if sat is not None else None,
                          source=source)
    if first_test_s is None:
        durs = [float(s["duration_s"]) for s in steps if s.get("duration_s")]
        # the steady windows are ~80 % of each step (docs/limits.md): scale back to the step length
        first_test_s = sum(durs) / 0.8 if durs else None
    budget_given = budget_s is not None
    if budget_s is None and first_test_s:
        budget_s = BUDGET_FACTOR * first_test_s
    planned = []
    for x in loads:
        rho = min(x / mu, RHO_MAX)
        tau = w0 / (1.0 - rho) ** 2
        warm = WARMUP_TAUS * tau
        # MIN_REQUESTS at the rate the step completes (on a concurrency axis not x a second: review finding)
        meas = max(MEASURE_TAUS * tau, MIN_REQUESTS / _rate_at(x, unit, steps))
        planned.append([x, max(MIN_STEP_S, warm + meas), warm, tau, rho])
    wants = [p[1] for p in planned]
    total = repeats * sum(wants)
    scaled = 1.0
    durs = wants
    if budget_s and total > budget_s:
        durs = _water_fill(wants, budget_s / repeats)
        scaled = sum(durs) * repeats / total
        whose = "given" if budget_given else f"{BUDGET_FACTOR:g} × the first test"
        notes.append(f"durations cut to fit the budget of {budget_s:.0f} s ({whose}); the model asks "
                     f"for {total:.0f} s: steps near capacity are shorter than their queue needs to settle")
    out_steps = []
    for (x, _want, warm, tau, rho), d in zip(planned, durs, strict=True):
        dur = float(max(MIN_STEP_S, math.floor(d / 10.0) * 10.0))
        out_steps.append(FollowUpStep(load=x, duration_s=dur, warmup_s=float(min(warm, dur / 4)),
                                      relaxation_s=tau, rho=rho,
                                      expected_requests=int(round(_rate_at(x, unit, steps) * dur))))
    planned_total = repeats * sum(st.duration_s for st in out_steps)
    if budget_s and planned_total > budget_s:
        # no step is shorter than MIN_STEP_S (a shorter step cannot settle and judge a percentile), so a
        # small budget is exceeded: say so rather than claim the plan fits it
        notes.append(f"the plan takes {planned_total:.0f} s, over the budget of {budget_s:.0f} s: no step is "
                     f"shorter than {MIN_STEP_S:.0f} s")
    spacing = (hi - lo) / (n_loads - 1)
    centre = (hi + lo) / 2
    return FollowUp(run_id=run, mix=mix, unit=unit, steps=out_steps, repeats=repeats, model=model,
                    budget_s=budget_s, scaled=scaled, expected_resolution=spacing / centre,
                    first_test_s=first_test_s, notes=notes)


def is_coarse(mix_doc: Mapping[str, object], tolerance: float = RESOLUTION_TOL) -> bool:
    """Whether a mix's limit calls for a follow-up: coarse by ``q_ult.resolution.coarse``, censored
    (``above``, ``below``, ``not_monotone``), or, where the limit carries no resolution (a
    load-point table's model interval), a 95 % CI reaching more than ``tolerance`` (±10 %) from the value.
    """
    q = mix_doc.get("q_ult") or {}
    if q.get("censored") in ("above", "below", "not_monotone"):
        return True
    res = q.get("resolution")
    if res:
        return bool(res.get("coarse"))
    value = q.get("value")
    lo, hi = (list(q.get("ci95") or [None, None]) + [None, None])[:2]
    if value is None or not float(value) > 0:
        return False
    if lo is None or hi is None:
        return True  # an interval open at one end is as coarse as it gets
    return max(float(value) - float(lo), float(hi) - float(value)) / float(value) > tolerance


def attach_followup(run_id: str, mix: Mix, q_ult: dict, steps: list[dict],
                    notes: list[str]) -> FollowUpSummary | NotAvailable:
    """The follow-up test that would resolve a coarse limit (``bearing_lib.limits.followup``), for
    ``q_ult.resolution.followup``, and as a note (the report lists a mix's notes)."""
    try:
        plan = design_followup({"run_id": run_id, "mix": {"name": mix.name}, "q_ult": q_ult, "steps": steps})
    except BearingError as exc:
        return NotAvailable(str(exc))
    loads = ", ".join(f"{s.load:.4g}" for s in plan.steps)
    durs = ", ".join(f"{s.duration_s:g}" for s in plan.steps)
    notes.append(f"follow-up test: loads {loads} {plan.unit} in ascending order, steps of {durs} s (total "
                 f"{plan.total_s:.0f} s), then pool both runs; expected resolution ±{plan.expected_resolution:.0%}. "
                 "`bearing next LIMITS.json --out FILE` writes it for your load-test tool")
    return plan.summary()


def resolution_of(value: float | None, ci: list[float | None], censored: str,
                  det: list[JudgedStep]) -> Resolution | None:
    """How finely this test resolves the limit: the 95 % CI relative to the point estimate.

    ``coarse`` when either side of the CI lies more than :data:`RESOLUTION_TOL` from the
    estimate, or is open; the statement then says why and what to re-run. None without an interior
    estimate, or with a CI open at both ends.
    """
    lo, hi = ci
    if censored != "none" or value is None or not value > 0 or (lo is None and hi is None):
        return None
    # a CI open above (no judged failure above the limit: the steps there only kept rising) or below (the model's
    # posterior reaching below the loads tested) is as coarse as it gets; the loads to re-run reach 1.2x the value
    # (or down to it divided by 1.2), as bearing next's follow-up does without that end
    top = hi if hi is not None else OPEN_RERUN_FACTOR * value
    bottom = lo if lo is not None else value / OPEN_RERUN_FACTOR
    below = None if lo is None else lo / value - 1.0
    above = None if hi is None else hi / value - 1.0
    coarse = below is None or below < -RESOLUTION_TOL or above is None or above > RESOLUTION_TOL
    # a step with per-request times is judged on its steady window (duration_s); a tool's summary has no window:
    # its duration_s is the tool's own (vLLM's includes the drain), so the time under load is the span its rate
    # divides by (rate_span_s: the send window, or the duration less the unloaded latency)
    untimed = [("no_times" in j.row.flags or "no_ci" in j.row.flags) for j in det]  # no_ci: a load-point table
    durations = [float(s) for j, u in zip(det, untimed, strict=True)
                 if (s := (j.row.rate_span_s or j.row.duration_s if u else j.row.duration_s))]
    step_s = float(np.median(durations)) if durations else None
    what = (" (steady window)" if not any(untimed) else " under load (drain excluded)"
            if all(untimed) else " (steady window, or under load for a tool's summary)")
    suggested = [float(x) for x in np.linspace(bottom, top, RESOLUTION_RERUN_LOADS)]
    if below is not None and above is not None:
        span = f"{below:+.0%} / {above:+.0%} (95% CI {lo:.4g}–{hi:.4g})"
    elif above is None:
        span = f"{below:+.0%} / open above (95% CI from {lo:.4g}: no step above it failed a clause)"
    else:
        span = f"open below / {above:+.0%} (95% CI up to {hi:.4g}: its lower end lies below the loads tested)"
    statement = (
        f"this test resolves the limit to {span}: "
        "near a queue's capacity a step of "
        + (f"{step_s:.0f} s{what}" if step_s is not None else "this length")
        + " passes or fails partly by chance (queue build-ups outlast it), so the last passing step may "
        "already lie above the sustained limit; to narrow the range, re-run loads spread across the CI "
        f"with longer steps (e.g. {', '.join(f'{x:.3g}' for x in suggested)}), or repeat them"
    )
    return Resolution(ci_relative=(None if below is None else float(below), None if above is None else float(above)),
                      tolerance=RESOLUTION_TOL,
                      coarse=bool(coarse), steady_window_s=step_s, suggested_loads=suggested, statement=statement)


__all__ = ["OPEN_RERUN_FACTOR", "RESOLUTION_RERUN_LOADS", "RESOLUTION_TOL", "FollowUp", "FollowUpModel", "FollowUpStep",
           "MeasuredSaturation", "attach_followup", "design_followup", "fit_capacity", "is_coarse",
           "measured_saturation", "resolution_of"]
