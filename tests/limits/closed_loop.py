"""TEST ORACLE: a closed loop of users against a k-slot server, for the completed rate's 95 % CI on a users axis.

Part of the test suite, not of ``bearing_lib``. ``N`` users each send a request, wait for its answer, think for an
exponential time (mean ``think_s``) and send the next; the server serves ``slots`` requests at once, first come first
served, each for an exponential time (mean ``service_s``). This is the closed M/M/k//N queue (the machine-repair
model): its long-run completed rate ``X(N)`` rises with the users and flattens at ``slots / service_s``; a request's
latency (wait + service) grows once the slots are busy. With ``slots = 4``, ``service_s = 1``, ``think_s = 3`` the
knee is at ``N = slots (service_s + think_s) / service_s = 16`` users.

``X(N)`` has a closed form (the birth-death chain of the number of requests at the server, :func:`mmk_closed`); the
latency's 95th percentile has none simple, so the truth of the SLA ``p95(latency) <= T`` is read off long
simulations (:func:`true_limit`). A stepped test is :func:`stepped_test`: steps of ``step_s`` seconds at the users of
``users``, each starting empty with the users' first sends spread over one think time (as AIPerf or LLMPerf ramp
their users), one run; rows in bearing's canonical request schema, load axis ``concurrency``.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import polars as pl

SLOTS, SERVICE_S, THINK_S = 4, 1.0, 3.0


def mmk_closed(n: int, slots: int = SLOTS, service_s: float = SERVICE_S, think_s: float = THINK_S) -> float:
    """The long-run completed rate (req/s) of the closed M/M/k//N queue, exactly: the number ``j`` of requests at
    the server is a birth-death chain, so its stationary law follows ``p_{j+1} = p_j (n - j) λ / (min(j + 1, k) μ)``
    with ``λ = 1/think_s``, ``μ = 1/service_s``; the rate is ``Σ_j p_j min(j, k) μ``.

    >>> round(mmk_closed(1), 6)  # one user: 1 / (1 + 3) a second
    0.25
    """
    lam, mu = 1.0 / think_s, 1.0 / service_s
    p = [1.0]
    for j in range(n):
        p.append(p[-1] * (n - j) * lam / (min(j + 1, slots) * mu))
    z = sum(p)
    return sum(pj / z * min(j, slots) * mu for j, pj in enumerate(p))


def simulate(n_users: int, duration_s: float, rng: np.random.Generator, t0_s: float = 0.0,
             slots: int = SLOTS, service_s: float = SERVICE_S, think_s: float = THINK_S,
             ) -> tuple[np.ndarray, np.ndarray]:
    """One closed loop of ``n_users`` for ``duration_s`` from ``t0_s``: (send times, end times) of the requests
    sent before ``t0_s + duration_s`` (each runs to its end, so the last ones end after it: the tool's drain)."""
    t_end = t0_s + duration_s
    events: list[tuple[float, int, int]] = []  # (time, kind 0 = send / 1 = done, user)
    for u in range(n_users):
        heapq.heappush(events, (t0_s + rng.exponential(think_s), 0, u))
    busy, queue = 0, []
    sent_at = np.full(n_users, np.nan)
    starts, ends = [], []
    while events:
        t, kind, u = heapq.heappop(events)
        if kind == 0:
            if t >= t_end:
                continue  # the step is over: this user sends no more
            sent_at[u] = t
            if busy < slots:
                busy += 1
                heapq.heappush(events, (t + rng.exponential(service_s), 1, u))
            else:
                queue.append(u)
        else:
            starts.append(sent_at[u])
            ends.append(t)
            heapq.heappush(events, (t + rng.exponential(think_s), 0, u))
            if queue:
                v = queue.pop(0)
                heapq.heappush(events, (t + rng.exponential(service_s), 1, v))
            else:
                busy -= 1
    order = np.argsort(starts)
    return np.asarray(starts)[order], np.asarray(ends)[order]


def stepped_test(users: list[int], step_s: float, seed: int, run_id: str = "closed") -> pl.DataFrame:
    """A stepped closed-loop test: one step of ``step_s`` seconds per entry of ``users``, in order, one after the
    other; canonical request rows (latency in ms; TTFT is not modelled)."""
    rng = np.random.default_rng(seed)
    frames = []
    for i, n in enumerate(users):
        s, e = simulate(n, step_s, rng, t0_s=i * step_s * 1.5)  # a rest of half a step between the steps
        frames.append(pl.DataFrame({
            "request_id": [f"{run_id}-{i}-{k}" for k in range(s.size)],
            "start_s": s, "end_s": e, "latency_ms": (e - s) * 1000.0,
            "status": ["ok"] * s.size, "run_id": run_id, "step": i, "offered_load": float(n),
            "offered_load_unit": "concurrency", "model": "closed-loop-sim",
        }))
    return pl.concat(frames)


def true_limit(threshold_s: float, users: range, duration_s: float = 40_000.0, seed: int = 1,
               q: float = 0.95) -> tuple[float, dict[int, float]]:
    """The users at which the latency's share above ``threshold_s`` crosses ``1 - q`` (the SLA
    ``p{100q}(latency) <= threshold_s``), linearly interpolated between the integer users of ``users`` (each a long
    simulation, its first 10 % left out), and each one's share."""
    share = {}
    for n in users:
        s, e = simulate(n, duration_s, np.random.default_rng(seed + n))
        keep = s > 0.1 * duration_s
        share[n] = float(np.mean((e - s)[keep] > threshold_s))
    ns = sorted(share)
    for a, b in zip(ns, ns[1:], strict=False):
        if share[a] <= 1 - q < share[b]:
            return a + (1 - q - share[a]) / (share[b] - share[a]) * (b - a), share
    raise ValueError(f"the share does not cross {1 - q:g} within users {ns[0]}-{ns[-1]}: {share}")


def completed_at(n_star: float) -> float:
    """The true completed rate at (real-valued) users ``n_star``: :func:`mmk_closed` interpolated linearly."""
    lo = math.floor(n_star)
    return mmk_closed(lo) + (n_star - lo) * (mmk_closed(lo + 1) - mmk_closed(lo))
