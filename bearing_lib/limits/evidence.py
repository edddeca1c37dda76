"""What each step of a load test says about each SLA clause, as the model's evidence (``limits.model``).

* **A request trace**: per clause, ``k`` requests that count against it of ``n`` that can
  (``limits.pooled.count_columns``): an exact count; with ``u`` requests of unknown outcome (cancelled, or
  the tool stopped waiting for them) between ``k`` and ``k + u`` of ``n + u`` (a survivor-only error rate of a
  step where most requests were never collected is not its failure share).
* **A load-point table** (a tool's per-load summary): a percentile clause ``pQ(m) <= T`` is
  bracketed by the reported percentiles of ``m``: a reported ``P_q`` above ``T`` means more
  than ``1 − q`` of the requests exceed ``T``; one at or below ``T`` means at most ``1 − q`` do; a
  reported maximum at or below ``T`` means none does. With the request count ``n`` the share
  bounds become ranks (``k`` between ``⌊n·lo⌋`` and ``⌈n·hi⌉``); without it they are taken as the
  step's exact shares (an assumption, said in the result). An error-rate clause reads the
  reported error rate and request count (an exact count).
* **Continuous stepped runs**: a step's queue starts from the state the step before it left, so
  a short step just above the limit may still read a low share. When the steps ran one after
  the other in ascending load (``t_first_s`` increasing with load, each starting within about two
  steady windows of the one before), a step's evidence is placed anywhere between the previous
  step's load and its own (``Evidence.x_from``); separate runs per load (a vLLM sweep, a
  load-point table) are not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bearing_lib.limits.curves import QUANTILES
from bearing_lib.limits.model import Evidence
from bearing_lib.limits.sla import Clause

LAG_S = 300.0
"""How long a step's queue may take to settle after a load rise, in seconds: near capacity a queue takes
minutes to build (docs/oracle.md, "Why": 120 s windows at 1.05x the limit often pass), so a step's evidence
may lie up to ``min(1, LAG_S / steady window)`` of the way back to the previous load. Calibrated on the
oracle's 120 s and 1,200 s steps (docs/oracle.md); a server whose queue settles in seconds gets a wider
interval than it needs (an M/M/1 queue at 10 rps: tests/limits)."""

POOL_STEP_OFFSET = 100_000
"""Pooled runs number their steps ``run index × POOL_STEP_OFFSET + step`` (``limits.fit``)."""


def _continuity(steps: Sequence[dict]) -> dict[int, float]:
    """``{step: load of the step run just before it}`` for steps of a continuous ascending run."""
    timed = [s for s in steps if s["row"].get("t_first_s") is not None and s["x"] is not None
             and math.isfinite(s["x"])]
    # pooled runs number their steps in blocks of POOL_STEP_OFFSET: a step follows the one before it in ITS run
    timed.sort(key=lambda s: (int(s["row"]["step"]) // POOL_STEP_OFFSET, float(s["row"]["t_first_s"])))
    out: dict[int, float] = {}
    for prev, cur in zip(timed, timed[1:], strict=False):
        if int(prev["row"]["step"]) // POOL_STEP_OFFSET != int(cur["row"]["step"]) // POOL_STEP_OFFSET:
            continue
        gap = float(cur["row"]["t_first_s"]) - float(prev["row"]["t_first_s"])
        d = prev["row"].get("duration_s")
        if d is None or not d > 0 or cur["x"] <= prev["x"]:
            continue
        if gap <= 2.0 * float(d) + 10.0:
            out[int(cur["row"]["step"])] = float(prev["x"])
    return out


def trace_evidence(pool: Sequence[dict], clauses: Sequence[Clause]) -> dict[str, list[Evidence]]:
    """Per clause text, the exact counts of every usable step of a request trace (``pool``)."""
    before = _continuity(pool)
    out: dict[str, list[Evidence]] = {c.text: [] for c in clauses}
    for j in pool:
        row = j["row"]
        for i, c in enumerate(clauses):
            n, k = row.get(f"_pn_{i}"), row.get(f"_pk_{i}")
            if not n:
                continue
            d = row.get("duration_s")
            lag = min(1.0, LAG_S / float(d)) if d else 1.0
            # requests of unknown outcome (the tool stopped waiting, or cancelled them) may have been bad or not:
            # the count is known to lie between the bad ones seen and those plus the unknown ones
            u = float(row.get("n_unknown") or 0)
            k = float(k or 0)
            out[c.text].append(Evidence(x=float(j["x"]), n=float(n) + u, k_lo=k, k_hi=k + u,
                                        x_from=before.get(int(row["step"])), lag=lag))
    return out


def _percentile_evidence(c: Clause, row: dict, x: float) -> Evidence | None:
    lo, hi = 0.0, 1.0
    known = False
    for name, q in QUANTILES.items():
        v = row.get(f"{c.metric}_{name}")
        # a percentile the tool reported over few requests is still a statement about ranks of those requests
        if v is None or not math.isfinite(v):
            continue
        known = True
        over = v >= c.threshold if c.strict else v > c.threshold
        if over:
            lo = max(lo, 1.0 - q)
        else:
            hi = min(hi, 1.0 - q)
    mx = row.get(f"{c.metric}_max")
    if mx is not None and math.isfinite(mx):
        known = True
        if not (mx >= c.threshold if c.strict else mx > c.threshold):
            hi = 0.0
    if not known or lo > hi:
        return None
    n = row.get("n_ok") or row.get("n_requests")
    if n:
        n = float(n)
        return Evidence(x=x, n=n, k_lo=math.floor(n * lo), k_hi=min(math.ceil(n * hi), n))
    return Evidence(x=x, s_lo=lo, s_hi=hi)


def table_evidence(steps: Sequence[dict], clauses: Sequence[Clause]) -> tuple[dict[str, list[Evidence]], bool]:
    """Per clause text, what each step of a load-point table implies; and whether any step lacked ``n``."""
    out: dict[str, list[Evidence]] = {c.text: [] for c in clauses}
    assumed = False
    for j in steps:
        row, x = j["row"], j["x"]
        for c in clauses:
            ev: Evidence | None = None
            if c.kind == "percentile":
                ev = _percentile_evidence(c, row, float(x))
                assumed |= ev is not None and ev.n is None
            elif c.kind == "error_rate":
                err, n = row.get("error_rate"), row.get("n_requests")
                if err is not None and n:
                    k = round(float(err) * float(n))
                    ev = Evidence(x=float(x), n=float(n), k_lo=k, k_hi=k)
            if ev is not None:
                out[c.text].append(ev)
    return out, assumed


__all__ = ["LAG_S", "table_evidence", "trace_evidence"]
