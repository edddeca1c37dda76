"""TEST ORACLE: an event-driven model of a continuous-batching LLM server.

This module is part of the test suite, not of ``bearing_lib``: it produces request
traces whose true capacity is known (``make_truth.py``), so bearing's estimators can be
checked against ground truth. Nothing in ``bearing_lib`` imports it.

Model (one server, FCFS, no preemption)
---------------------------------------
* Requests arrive by a Poisson process (or any given arrival times) and wait in one
  FIFO queue.
* At each iteration boundary the scheduler admits queued requests in order while
  (a) a batch slot is free (``max_num_seqs``), (b) the KV-token budget holds the new
  request's *reserved* tokens (``input + output``; conservative reservation, as an
  engine without preemption must do), and (c) the prefill batch stays within
  ``max_batched_tokens`` uncached tokens (the first admitted request always fits).
  Admission is head-of-line: a request that does not fit blocks those behind it.
* A request whose wait exceeds ``queue_timeout_s`` leaves the queue as ``timeout``
  (``end_s = start_s + queue_timeout_s``, no TTFT). A request that can never fit the
  KV budget on an empty server is ``rejected`` at arrival.
* If anything was admitted, the next iteration is a prefill iteration lasting
  ``prefill_base_ms + prefill_ms_per_token * sum(input - cached)``; running sequences
  wait during it (no chunked prefill). Its end is each admitted request's first token.
* Otherwise the iteration is a decode iteration lasting
  ``decode_base_ms + decode_ms_per_seq * n_running``; every running sequence emits one
  token. A request with ``output_tokens = o`` needs ``o - 1`` decode iterations after
  its prefill and completes at the end of the last one.

Event jumping
-------------
Between events the batch is constant, so decode iterations all last the same time.
The loop jumps straight over ``k`` iterations, where ``k`` is the number of tokens
until the next completion, or the number of iterations until the boundary at which the
next arrival could be admitted (only when a slot is free and the queue is empty), or
until the first boundary after a KV-blocked queue head times out (it then leaves and
the request behind it may fit), so
the cost is a few loop turns per request, not per token. Completions are kept in a heap
keyed by the global iteration number at which they finish.

Output: canonical request rows (see ``bearing_lib.trace``) as a polars frame.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class ServerConfig:
    """Capacity parameters of the simulated server (times in ms unless named ``_s``)."""

    name: str
    max_num_seqs: int
    kv_budget_tokens: int
    max_batched_tokens: int
    prefill_base_ms: float
    prefill_ms_per_token: float
    decode_base_ms: float
    decode_ms_per_seq: float
    queue_timeout_s: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class MixModel:
    """Request-length distribution: lognormal input/output lengths, optional shared prefix.

    ``input_median``/``input_sigma`` parameterise a lognormal clipped to
    ``[input_min, input_max]`` (same for output). With probability ``prefix_hit_prob``
    a request starts with a cached shared prefix of ``prefix_tokens`` (capped at
    ``input - 1`` so at least one token is prefilled).
    """

    name: str
    input_median: float
    input_sigma: float
    input_min: int
    input_max: int
    output_median: float
    output_sigma: float
    output_min: int
    output_max: int
    prefix_tokens: int = 0
    prefix_hit_prob: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` requests: (input_tokens, output_tokens, cached_tokens) as int64 arrays."""
        inp = np.exp(rng.normal(math.log(self.input_median), self.input_sigma, n))
        out = np.exp(rng.normal(math.log(self.output_median), self.output_sigma, n))
        inp = np.clip(np.rint(inp), self.input_min, self.input_max).astype(np.int64)
        out = np.clip(np.rint(out), self.output_min, self.output_max).astype(np.int64)
        hit = rng.random(n) < self.prefix_hit_prob
        cached = np.where(hit, np.minimum(self.prefix_tokens, inp - 1), 0).astype(np.int64)
        return inp, out, cached


def simulate(
    cfg: ServerConfig,
    arrival_s: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray,
) -> dict[str, np.ndarray]:
    """Run the server over given requests (arrivals sorted ascending).

    Returns arrays per request: ``first_token_s`` (NaN when none), ``end_s`` and
    ``status_code`` (0 ok, 1 timeout, 2 rejected).
    """
    arr = np.asarray(arrival_s, dtype=float)
    if arr.size and np.any(np.diff(arr) < 0):
        raise ValueError("arrival times must be sorted ascending")
    n = arr.size
    arr_l = arr.tolist()
    inp_l = np.asarray(input_tokens, dtype=np.int64).tolist()
    out_l = np.asarray(output_tokens, dtype=np.int64).tolist()
    unc_l = (np.asarray(input_tokens, dtype=np.int64) - np.asarray(cached_tokens, dtype=np.int64)).tolist()
    first = [math.nan] * n
    end = [math.nan] * n
    status = [0] * n

    slots = cfg.max_num_seqs
    kv_budget = cfg.kv_budget_tokens
    max_bt = cfg.max_batched_tokens
    timeout = cfg.queue_timeout_s
    pf_base = cfg.prefill_base_ms / 1000.0
    pf_tok = cfg.prefill_ms_per_token / 1000.0
    dc_base = cfg.decode_base_ms / 1000.0
    dc_seq = cfg.decode_ms_per_seq / 1000.0

    queue: deque[int] = deque()
    heap: list[tuple[int, int]] = []  # (finish iteration, request index)
    t = 0.0
    it = 0  # global decode-iteration counter
    nxt = 0  # next arrival not yet queued
    n_run = 0
    kv_used = 0

    while True:
        # queue everything that has arrived by now
        while nxt < n and arr_l[nxt] <= t:
            j = nxt
            nxt += 1
            if inp_l[j] + out_l[j] > kv_budget:
                status[j] = 2
                end[j] = arr_l[j]
            else:
                queue.append(j)
        # admission at this iteration boundary
        admitted: list[int] = []
        batch_tokens = 0
        while queue and n_run < slots:
            j = queue[0]
            if t - arr_l[j] > timeout:
                queue.popleft()
                status[j] = 1
                end[j] = arr_l[j] + timeout
                continue
            need = inp_l[j] + out_l[j]
            if kv_used + need > kv_budget:
                break
            if admitted and batch_tokens + unc_l[j] > max_bt:
                break
            queue.popleft()
            admitted.append(j)
            batch_tokens += unc_l[j]
            n_run += 1
            kv_used += need
        if admitted:
            t += pf_base + pf_tok * batch_tokens
            for j in admitted:
                first[j] = t
                if out_l[j] <= 1:
                    end[j] = t
                    n_run -= 1
                    kv_used -= inp_l[j] + out_l[j]
                else:
                    heapq.heappush(heap, (it + out_l[j] - 1, j))
            continue
        if n_run == 0:
            if nxt >= n:
                break
            t = arr_l[nxt]
            continue
        d = dc_base + dc_seq * n_run
        k = heap[0][0] - it
        if not queue and nxt < n and n_run < slots:
            ka = math.ceil((arr_l[nxt] - t) / d)
            if ka < 1:
                ka = 1
            if ka < k:
                k = ka
        elif queue and n_run < slots:
            # the head is blocked (KV budget); the first boundary after its timeout drops
            # it, and the request behind it may fit then
            kt = math.floor((arr_l[queue[0]] + timeout - t) / d) + 1
            if kt < 1:
                kt = 1
            if kt < k:
                k = kt
        t += k * d
        it += k
        while heap and heap[0][0] <= it:
            _, j = heapq.heappop(heap)
            end[j] = t
            n_run -= 1
            kv_used -= inp_l[j] + out_l[j]

    return {
        "first_token_s": np.asarray(first),
        "end_s": np.asarray(end),
        "status_code": np.asarray(status, dtype=np.int8),
    }


STATUS_NAMES = ("ok", "timeout", "rejected")


def poisson_arrivals(rng: np.random.Generator, rate_rps: float, t0_s: float, t1_s: float) -> np.ndarray:
    """Poisson arrival times in ``[t0_s, t1_s)`` at ``rate_rps``."""
    n = rng.poisson(rate_rps * (t1_s - t0_s))
    return np.sort(rng.uniform(t0_s, t1_s, n))


def stepped_run(
    cfg: ServerConfig,
    mix: MixModel,
    rates_rps: list[float],
    step_s: float,
    seed: int,
    run_id: str = "oracle",
) -> pl.DataFrame:
    """One stepped load test: consecutive steps of ``step_s`` seconds at ``rates_rps``.

    The server state carries over from step to step (as in a real stepped test).
    Returns canonical request rows (times relative to the run start).
    """
    rng = np.random.default_rng(seed)
    times, steps, loads = [], [], []
    for i, r in enumerate(rates_rps):
        a = poisson_arrivals(rng, r, i * step_s, (i + 1) * step_s)
        times.append(a)
        steps.append(np.full(a.size, i, dtype=np.int64))
        loads.append(np.full(a.size, float(r)))
    arr = np.concatenate(times)
    inp, out, cached = mix.draw(rng, arr.size)
    res = simulate(cfg, arr, inp, out, cached)
    return to_frame(arr, inp, out, cached, res, run_id=run_id, step=np.concatenate(steps), load=np.concatenate(loads))


def to_frame(
    arrival_s: np.ndarray,
    inp: np.ndarray,
    out: np.ndarray,
    cached: np.ndarray,
    res: dict[str, np.ndarray],
    *,
    run_id: str,
    step: np.ndarray,
    load: np.ndarray,
) -> pl.DataFrame:
    """Canonical request rows from a simulation result."""
    ok = res["status_code"] == 0
    ttft_ms = np.where(ok, (res["first_token_s"] - arrival_s) * 1000.0, np.nan)
    lat_ms = (res["end_s"] - arrival_s) * 1000.0
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(ok & (out > 1), (res["end_s"] - res["first_token_s"]) * 1000.0 / (out - 1), np.nan)
    status = np.asarray(STATUS_NAMES, dtype=object)[res["status_code"]]
    n = arrival_s.size
    return pl.DataFrame(
        {
            "request_id": [f"{run_id}-{i}" for i in range(n)],
            "start_s": arrival_s,
            "end_s": res["end_s"],
            "ttft_ms": ttft_ms,
            "latency_ms": lat_ms,
            "tpot_ms": tpot,
            "itl_ms": tpot,
            "input_tokens": inp,
            "output_tokens": out,
            "cached_tokens": cached,
            "status": status.tolist(),
            "error": [None if s == "ok" else s for s in status.tolist()],
            "model": "oracle-sim",
            "run_id": run_id,
            "step": step,
            "offered_load": load,
            "offered_load_unit": "rps",
        },
        strict=False,
    ).with_columns(pl.col(c).fill_nan(None) for c in ("ttft_ms", "tpot_ms", "itl_ms"))
