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
  ``μ`` = the load where its mean time in system doubles. Without such a rise ``μ`` is
  taken ``RHO_FALLBACK_MARGIN`` above the CI's top.
* **Step duration** = warm-up ``WARMUP_TAUS · τ`` (discarded) + measurement
  ``max(MEASURE_TAUS · τ, MIN_REQUESTS / x)`` (enough requests for a P99 with room:
  368 are needed, docs/limits.md); then, when a **budget** is set (default: 2 × the first
  test's total step time), water-filled into it: a step that needs less keeps what it
  needs, the others share the rest equally (rounded down to 10 s).
* **Expected resolution**: the spacing of the loads relative to the CI's centre (the
  follow-up's bracket), which is what the pooled estimate's widened CI is at worst.

Writers (:data:`WRITERS`) render the plan as vLLM ``vllm bench serve`` command lines, a
GuideLLM scenario per load, AIPerf commands, a Locust file with a ``LoadTestShape``, a k6
script with a ``scenarios`` block, or a CSV of (load, duration). ``tests/limits/test_followup.py``
checks each against the tool's own parser where the tool installs here.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bearing_lib.common.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult

N_LOADS = 4
RHO_MAX = 0.97
RHO_FALLBACK_MARGIN = 0.10
KNEE = 2.0
WARMUP_TAUS = 3.0
MEASURE_TAUS = 10.0
MIN_REQUESTS = 1000
MIN_STEP_S = 60.0
BUDGET_FACTOR = 2.0
TOOLS = ("vllm", "guidellm", "aiperf", "locust", "k6", "csv")


@dataclass
class FollowUpStep:
    load: float
    duration_s: float
    warmup_s: float
    relaxation_s: float
    rho: float
    expected_requests: int


@dataclass
class FollowUp:
    """The follow-up test for one mix (a JSON-able plan; :meth:`to_dict`)."""

    run_id: str
    mix: str
    unit: str
    steps: list[FollowUpStep]
    repeats: int
    model: dict[str, object]
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
            "order": "ascending, one continuous run per repeat",
            "steps": [s.__dict__ for s in self.steps], "total_s": self.total_s, "first_test_s": self.first_test_s,
            "budget_s": self.budget_s, "scaled": self.scaled, "model": self.model,
            "expected_resolution": self.expected_resolution, "notes": self.notes,
        }


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
    elif lo is None or hi is None:
        lo = bracket[0] if bracket[0] is not None else (0.8 * value if value else None)
        hi = bracket[1] if bracket[1] is not None else (1.2 * value if value else None)
    if lo is None or hi is None or not hi > lo > 0:
        raise ParameterError(f"{run}/{mix}: the limits give no range to design a follow-up in "
                             f"(value {value}, 95% CI {ci}, bracket {bracket}, censored {cens})")
    if unit != "rps":
        notes.append(f"offered load unit {unit!r}: the durations assume a request rate; check them")
    loads = [float(x) for x in np.linspace(lo, hi, n_loads)]
    w0, mu = fit_capacity(steps)
    if mu is None or w0 is None:
        mu = hi * (1 + RHO_FALLBACK_MARGIN)
        w0 = w0 or 1.0
        source = (f"fallback: capacity taken {RHO_FALLBACK_MARGIN:.0%} above the CI's top (the first test's "
                  f"mean time in system never reached {KNEE:g}x its light-load value)")
    else:
        source = (f"calibrated on the first test: W0 = median light-load time in system; mu from the load where "
                  f"it reaches {KNEE:g} x W0 (taken as the capacity: a batching server's latency is flat until "
                  "near it)")
    model = {"name": "M/G/1-style relaxation", "W(x)": "W0 / (1 - x / mu)", "tau(x)": "W0 / (1 - rho)^2",
             "W0_s": w0, "mu": mu, "rho_max": RHO_MAX, "source": source,
             "warmup": f"{WARMUP_TAUS:g} tau", "measurement": f"max({MEASURE_TAUS:g} tau, {MIN_REQUESTS} requests)",
             "budget": "durations water-filled: a step needing less keeps it, the others share the rest equally"}
    if first_test_s is None:
        durs = [float(s["duration_s"]) for s in steps if s.get("duration_s")]
        # the steady windows are ~80 % of each step (docs/limits.md): scale back to the step length
        first_test_s = sum(durs) / 0.8 if durs else None
    if budget_s is None and first_test_s:
        budget_s = BUDGET_FACTOR * first_test_s
    planned = []
    for x in loads:
        rho = min(x / mu, RHO_MAX)
        tau = w0 / (1.0 - rho) ** 2
        warm = WARMUP_TAUS * tau
        meas = max(MEASURE_TAUS * tau, MIN_REQUESTS / x)
        planned.append([x, max(MIN_STEP_S, warm + meas), warm, tau, rho])
    wants = [p[1] for p in planned]
    total = repeats * sum(wants)
    scaled = 1.0
    durs = wants
    if budget_s and total > budget_s:
        durs = _water_fill(wants, budget_s / repeats)
        scaled = sum(durs) * repeats / total
        notes.append(f"durations cut to fit the budget of {budget_s:.0f} s (2 × the first test); the model asks "
                     f"for {total:.0f} s: steps near capacity are shorter than their queue needs to settle")
    out_steps = []
    for (x, _want, warm, tau, rho), d in zip(planned, durs, strict=True):
        dur = float(max(MIN_STEP_S, math.floor(d / 10.0) * 10.0))
        out_steps.append(FollowUpStep(load=x, duration_s=dur, warmup_s=float(min(warm, dur / 4)),
                                      relaxation_s=tau, rho=rho, expected_requests=int(round(x * dur))))
    spacing = (hi - lo) / (n_loads - 1)
    centre = (hi + lo) / 2
    return FollowUp(run_id=run, mix=mix, unit=unit, steps=out_steps, repeats=repeats, model=model,
                    budget_s=budget_s, scaled=scaled, expected_resolution=spacing / centre,
                    first_test_s=first_test_s, notes=notes)


# --------------------------------------------------------------------------------------
# writers: one function per tool, (plan, options) -> file text


@dataclass
class Target:
    """Where the follow-up sends its requests (placeholders the user edits)."""

    base_url: str = "http://localhost:8000"
    model: str = "MODEL"
    input_tokens: int = 512
    output_tokens: int = 128
    seed: int = 0


def _all_steps(plan: FollowUp) -> list[FollowUpStep]:
    return [s for _ in range(plan.repeats) for s in plan.steps]


def _header(plan: FollowUp, comment: str) -> str:
    lines = [f"bearing next: follow-up test for {plan.run_id} / {plan.mix}",
             f"loads ({plan.unit}) ascending: " + ", ".join(f"{s.load:.4g}" for s in plan.steps)
             + f"; repeats {plan.repeats}; total {plan.total_s:.0f} s",
             f"expected resolution after it: ±{plan.expected_resolution:.1%} (the loads' spacing)"]
    lines += plan.notes
    return "".join(f"{comment} {line}\n" for line in lines)


def write_vllm(plan: FollowUp, t: Target) -> str:
    """A shell script: one ``vllm bench serve`` run per step (a fixed Poisson rate, ``--burstiness 1``)."""
    out = ["#!/bin/sh", _header(plan, "#").rstrip("\n"), "set -e"]
    for i, s in enumerate(_all_steps(plan)):
        n = max(1, int(round(s.load * s.duration_s)))
        out.append(
            f"vllm bench serve --backend openai --base-url {t.base_url} --model {t.model} --dataset-name random "
            f"--random-input-len {t.input_tokens} --random-output-len {t.output_tokens} "
            f"--request-rate {s.load:.4f} --burstiness 1.0 --num-prompts {n} --seed {t.seed + i} "
            f"--save-result --result-filename followup_step{i:02d}_{s.load:.4f}rps.json")
    return "\n".join(out) + "\n"


def guidellm_scenarios(plan: FollowUp, t: Target) -> list[dict[str, object]]:
    """One GuideLLM scenario per step (``guidellm benchmark --scenario FILE``): constant rate, max seconds."""
    return [{"target": t.base_url, "model": t.model, "rate_type": "constant", "rate": [round(s.load, 4)],
             "max_seconds": s.duration_s, "random_seed": t.seed + i,
             "data": f"prompt_tokens={t.input_tokens},output_tokens={t.output_tokens}"}
            for i, s in enumerate(_all_steps(plan))]


def write_guidellm(plan: FollowUp, t: Target) -> str:
    """A JSON document: the scenarios and the command line that runs each in turn."""
    sc = guidellm_scenarios(plan, t)
    cmds = [f"guidellm benchmark --target {t.base_url} --rate-type constant --rate {s['rate'][0]} "
            f"--max-seconds {s['max_seconds']:g} --data '{s['data']}' --output-path followup_step{i:02d}.json"
            for i, s in enumerate(sc)]
    return json.dumps({"comment": _header(plan, "").replace("\n ", "\n").strip().splitlines(),
                       "scenarios": sc, "commands": cmds}, indent=2) + "\n"


def write_aiperf(plan: FollowUp, t: Target) -> str:
    """A shell script: one ``aiperf profile`` run per step (fixed request rate and count)."""
    out = ["#!/bin/sh", _header(plan, "#").rstrip("\n"), "set -e"]
    for i, s in enumerate(_all_steps(plan)):
        n = max(1, int(round(s.load * s.duration_s)))
        warm = int(round(s.load * s.warmup_s))
        out.append(f"aiperf profile --model {t.model} --url {t.base_url} --endpoint-type chat --streaming "
                   f"--request-rate {s.load:.4f} --request-count {n} --warmup-request-count {warm} "
                   f"--synthetic-input-tokens-mean {t.input_tokens} --output-tokens-mean {t.output_tokens} "
                   f"--random-seed {t.seed + i} --artifact-dir followup_step{i:02d}")
    return "\n".join(out) + "\n"


def write_locust(plan: FollowUp, t: Target) -> str:
    """A locustfile: users on constant pacing (each starts one request every ``PACING_S``), and a
    ``LoadTestShape`` that holds ``rate × PACING_S`` users per step, ascending."""
    pacing = 20.0
    stages, end = [], 0.0
    for s in _all_steps(plan):
        end += s.duration_s
        stages.append((end, max(1, int(round(s.load * pacing))), round(s.load, 4)))
    stage_text = ",\n".join(f"    ({e:g}, {u}, {r})" for e, u, r in stages)
    return (
        _header(plan, "#")
        + f"""# Run: locust -f THIS_FILE --headless --host {t.base_url}
# Rate = users / PACING_S while a request's latency stays under PACING_S.
from locust import HttpUser, LoadTestShape, constant_pacing, task

PACING_S = {pacing:g}
# (end time s, users, target rate rps), ascending
STAGES = [
{stage_text},
]


class Completion(HttpUser):
    wait_time = constant_pacing(PACING_S)

    @task
    def completion(self):
        self.client.post("/v1/completions", json={{"model": "{t.model}", "prompt": "x " * {t.input_tokens},
                                                   "max_tokens": {t.output_tokens}}})


class FollowUpShape(LoadTestShape):
    def tick(self):
        now = self.get_run_time()
        for end, users, _rate in STAGES:
            if now < end:
                return users, users  # reach the step's users within a second
        return None
"""
    )


def k6_options(plan: FollowUp) -> dict[str, object]:
    """k6 ``options`` with one ``constant-arrival-rate`` scenario per step, started one after another."""
    scenarios: dict[str, object] = {}
    start = 0.0
    for i, s in enumerate(_all_steps(plan)):
        rate = max(1, int(round(s.load * 100)))  # k6 rates are integers: per 100 s keeps 0.01 rps resolution
        vus = max(1, int(math.ceil(s.load * 30)))
        scenarios[f"step{i:02d}"] = {"executor": "constant-arrival-rate", "rate": rate, "timeUnit": "100s",
                                     "duration": f"{s.duration_s:g}s", "startTime": f"{start:g}s",
                                     "preAllocatedVUs": vus, "maxVUs": 4 * vus, "exec": "completion"}
        start += s.duration_s
    return {"scenarios": scenarios}


def write_k6(plan: FollowUp, t: Target) -> str:
    """A k6 script: ``export const options = {scenarios: ...}`` and the request function."""
    body = json.dumps({"model": t.model, "prompt": "x " * 4, "max_tokens": t.output_tokens})
    return (
        _header(plan, "//")
        + "// Run: k6 run THIS_FILE\nimport http from 'k6/http';\n\n"
        + "export const options = " + json.dumps(k6_options(plan), indent=2) + ";\n\n"
        + f"export function completion() {{\n  http.post('{t.base_url}/v1/completions', JSON.stringify({body}), "
        + "{headers: {'Content-Type': 'application/json'}});\n}\n"
    )


def write_csv(plan: FollowUp, t: Target) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["order", "repeat", f"load_{plan.unit}", "duration_s", "warmup_s", "relaxation_s", "rho",
                "expected_requests"])
    k = 0
    for r in range(plan.repeats):
        for s in plan.steps:
            w.writerow([k, r, f"{s.load:.6g}", f"{s.duration_s:g}", f"{s.warmup_s:.1f}", f"{s.relaxation_s:.2f}",
                        f"{s.rho:.3f}", s.expected_requests])
            k += 1
    return buf.getvalue()


WRITERS = {"vllm": write_vllm, "guidellm": write_guidellm, "aiperf": write_aiperf, "locust": write_locust,
           "k6": write_k6, "csv": write_csv}


def tool_of(result: LimitsResult) -> str:
    """The tool the first test used, from the limits' sources (``csv`` when none fits)."""
    for src in result.conditions.sources:
        text = f"{src.format or ''} {src.tool or ''}".lower()
        for name in ("guidellm", "aiperf", "locust", "k6", "vllm"):
            if name in text:
                return name
    return "csv"


__all__ = ["TOOLS", "WRITERS", "FollowUp", "FollowUpStep", "Target", "design_followup", "fit_capacity",
           "guidellm_scenarios", "k6_options", "tool_of"]
