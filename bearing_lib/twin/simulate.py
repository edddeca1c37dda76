"""The twin's server model, replayed: an event-driven continuous-batching simulation.

Model (one server, FCFS queue, no preemption; docs/twin.md "The model")
-----------------------------------------------------------------------
* A request reserves ``input + output`` KV tokens while it runs; it is admitted at an
  iteration boundary if a batch slot is free (``max_num_seqs``), its reservation fits the
  KV budget (``kv_budget_tokens``) and the prefill batch stays within
  ``max_batched_tokens`` uncached tokens (the first request of a batch always fits).
  Admission is head-of-line. A request larger than the whole KV budget is rejected.
* An iteration that admits requests is a **prefill** iteration of
  ``prefill_base_ms + prefill_ms_per_token × Σ (input − cached)``; its end is the first
  token of every request it admitted. Otherwise it is a **decode** iteration of
  ``decode_base_ms + decode_ms_per_seq × n_running``, one token per running request; a
  request with ``o`` output tokens ends after ``o − 1`` decode iterations.
* A request still queued ``queue_timeout_s`` after its arrival leaves as a timeout.
* A parameter of ``None`` means "no such limit" (unbounded slots, KV or batch; no timeout).
* ``ttft_overhead_ms``: time the client sees outside the engine (network, tokenizer, API
  server), added to every successful request's first token and end; it uses no capacity.

Why hand-written: discrete-event libraries (SimPy, salabim, ciw) schedule one event per
process step, i.e. one per decode iteration and request, which is ~10⁴× the work here: the
batch is constant between arrivals, admissions and completions, so this loop jumps over
``k`` decode iterations at once (every one lasts the same). Completions wait in a heap
(``heapq``) keyed by the decode-iteration count at which they finish. Cost: a few loop
turns per request (bench/bench_twin.py).

This module shares no code with the test suite's oracle simulator; it is written from the
model above.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np

OK, TIMEOUT, REJECTED = 0, 1, 2
STATUS = ("ok", "timeout", "rejected")


@dataclass(frozen=True)
class ServerParams:
    """Point values of the twin's server model (times in ms unless named ``_s``)."""

    prefill_base_ms: float
    prefill_ms_per_token: float
    decode_base_ms: float
    decode_ms_per_seq: float
    max_num_seqs: int | None = None
    kv_budget_tokens: float | None = None
    max_batched_tokens: float | None = None
    queue_timeout_s: float | None = None
    ttft_overhead_ms: float = 0.0  # client-visible time outside the engine (network, tokenizer): added to TTFT and end

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def simulate(
    params: ServerParams,
    arrival_s: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Replay requests (arrival times sorted ascending) through the server model.

    Returns ``first_token_s`` (NaN unless ok), ``end_s`` and ``status`` (0 ok, 1 timeout,
    2 rejected) per request, in input order, and the run's ``peak_running`` (requests
    decoding at once) and ``peak_kv_tokens`` (reserved tokens running at once); per request
    ``kv_held`` / ``slot_held``: it waited at the head of the queue for KV (a slot free) / for a slot.

    >>> p = ServerParams(prefill_base_ms=5, prefill_ms_per_token=0.01, decode_base_ms=10, decode_ms_per_seq=0)
    >>> r = simulate(p, np.array([0.0]), np.array([100]), np.array([3]))
    >>> round(float(r["first_token_s"][0]), 6), round(float(r["end_s"][0]), 6)
    (0.006, 0.026)
    """
    n = int(arrival_s.size)
    arr = np.asarray(arrival_s, dtype=float)
    if n and np.any(np.diff(arr) < 0):
        raise ValueError("arrival_s must be sorted ascending")
    inp = np.asarray(input_tokens, dtype=float)
    out = np.asarray(output_tokens, dtype=float)
    cac = np.zeros(n) if cached_tokens is None else np.minimum(np.asarray(cached_tokens, dtype=float), inp)
    # python lists: scalar access to numpy arrays costs ~10x more in this loop
    a = arr.tolist()
    unc = np.maximum(inp - cac, 0.0).tolist()
    need = (inp + out).tolist()
    nout = np.maximum(out, 1).astype(np.int64).tolist()

    p0, p1 = params.prefill_base_ms / 1000.0, params.prefill_ms_per_token / 1000.0
    d0, d1 = params.decode_base_ms / 1000.0, params.decode_ms_per_seq / 1000.0
    slots = params.max_num_seqs if params.max_num_seqs is not None else math.inf
    budget = params.kv_budget_tokens if params.kv_budget_tokens is not None else math.inf
    mbt = params.max_batched_tokens if params.max_batched_tokens is not None else math.inf
    tmo = params.queue_timeout_s if params.queue_timeout_s is not None else math.inf

    first = [math.nan] * n
    end = [math.nan] * n
    status = [OK] * n
    queue: deque[int] = deque()
    done: list[tuple[int, int]] = []  # (decode-iteration count at which it finishes, request)
    t = 0.0 if n == 0 else a[0]
    it = 0  # decode iterations so far
    nrun = 0
    kv = 0.0
    nxt = 0  # next arrival not yet queued
    peak_run, peak_kv = 0, 0.0
    kv_held = [False] * n  # was held at the head by the KV budget with a slot free
    slot_held = [False] * n  # was held at the head with every slot busy

    while nxt < n or queue or nrun:
        # arrivals up to now join the queue (or are rejected outright)
        while nxt < n and a[nxt] <= t:
            if need[nxt] > budget:
                status[nxt] = REJECTED
                end[nxt] = a[nxt]
            else:
                queue.append(nxt)
            nxt += 1
        # queued requests past their timeout leave (the queue is in arrival order)
        while queue and t - a[queue[0]] > tmo:
            j = queue.popleft()
            status[j] = TIMEOUT
            end[j] = a[j] + tmo
        # admission, head of line
        batch: list[int] = []
        btok = 0.0
        while queue:
            j = queue[0]
            if nrun + len(batch) >= slots:
                slot_held[j] = True
                break
            if kv + need[j] > budget:
                kv_held[j] = True
                break
            if batch and btok + unc[j] > mbt:
                break
            queue.popleft()
            batch.append(j)
            btok += unc[j]
            kv += need[j]
        if batch:
            t += p0 + p1 * btok
            for j in batch:
                first[j] = t
                if nout[j] <= 1:
                    end[j] = t
                    kv -= need[j]
                else:
                    heapq.heappush(done, (it + nout[j] - 1, j))
                    nrun += 1
            if nrun > peak_run:
                peak_run = nrun
            if kv > peak_kv:
                peak_kv = kv
            continue
        if nrun == 0:
            if queue:  # cannot happen: an empty server admits any request that was not rejected
                raise RuntimeError("twin simulation stalled with an empty server")
            if nxt < n:
                t = max(t, a[nxt])
            continue
        # decode: the batch is constant until the next completion, admission chance or timeout
        dur = d0 + d1 * nrun
        k = done[0][0] - it
        if dur > 0:
            if not queue and nxt < n and nrun < slots:
                k = min(k, max(1, math.ceil((a[nxt] - t) / dur)))
            deadline = a[queue[0]] + tmo if queue else (a[nxt] + tmo if nxt < n else math.inf)
            if deadline < math.inf:
                k = min(k, max(1, math.ceil((deadline - t) / dur)))
        k = max(k, 1)
        t += k * dur
        it += k
        while done and done[0][0] <= it:
            fin, j = heapq.heappop(done)
            end[j] = t - (it - fin) * dur
            nrun -= 1
            kv -= need[j]
    oh = params.ttft_overhead_ms / 1000.0
    st = np.asarray(status, dtype=np.int8)
    first_a, end_a = np.asarray(first), np.asarray(end)
    if oh:
        first_a = first_a + oh
        end_a = np.where(st == OK, end_a + oh, end_a)
    return {"first_token_s": first_a, "end_s": end_a, "status": st,
            "peak_running": np.asarray(peak_run), "peak_kv_tokens": np.asarray(peak_kv),
            "kv_held": np.asarray(kv_held), "slot_held": np.asarray(slot_held)}


__all__ = ["OK", "REJECTED", "STATUS", "TIMEOUT", "ServerParams", "simulate"]
