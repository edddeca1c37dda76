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
* A request not finished ``request_timeout_s`` after its arrival is **aborted** wherever it is
  (queued, preempted or decoding: a gateway or client deadline; the engine frees its slot and KV
  when the connection closes, as vLLM aborts a request whose client went away): status timeout,
  end at the deadline. It took capacity until then, which a test that drops such requests from
  its results hides.
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
    """Point values of the twin's server model (times in ms unless named ``_s``).

    ``kv_policy``: ``"reserve"`` (a request holds ``input + output`` KV tokens from admission, no
    preemption) or ``"paged"`` (it holds the tokens present, growing by one per decode iteration;
    when the budget runs out the most recently admitted request is preempted and recomputed, LIFO,
    as vLLM does). ``decode_ms_per_kctx``: decode iteration cost per 1,000 context tokens (Σ input +
    generated over the running batch).
    """

    prefill_base_ms: float
    prefill_ms_per_token: float
    decode_base_ms: float
    decode_ms_per_seq: float
    max_num_seqs: int | None = None
    kv_budget_tokens: float | None = None
    max_batched_tokens: float | None = None
    queue_timeout_s: float | None = None
    ttft_overhead_ms: float = 0.0  # client-visible time outside the engine (network, tokenizer): added to TTFT and end
    kv_policy: str = "reserve"
    decode_ms_per_kctx: float = 0.0
    request_timeout_s: float | None = None

    def to_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


@dataclass(frozen=True)
class SimResult:
    """One replay through the server model: per request (in input order) ``first_token_s`` (NaN unless ok),
    ``end_s``, ``status`` (0 ok, 1 timeout, 2 rejected), ``aborted_first_s`` (the first token of a request
    the request timeout aborted after it started, NaN otherwise), ``kv_held`` / ``slot_held`` (it waited at
    the head of the queue for KV with a slot free / for a slot); for the run ``peak_running`` (requests
    decoding at once), ``peak_kv_tokens`` (KV tokens held at once under the policy) and ``preemptions``."""

    first_token_s: np.ndarray
    end_s: np.ndarray
    status: np.ndarray
    aborted_first_s: np.ndarray
    kv_held: np.ndarray
    slot_held: np.ndarray
    peak_running: int
    peak_kv_tokens: float
    preemptions: int


def _iters_to_cover(gap: float, base: float, slope: float) -> int:
    """Smallest k ≥ 1 with Σ_{i<k} (base + slope·i) ≥ gap (iteration durations growing by ``slope``)."""
    if gap <= 0:
        return 1
    if slope <= 0:
        return max(1, math.ceil(gap / base)) if base > 0 else 1
    b = base - 0.5 * slope
    k = math.ceil((-b + math.sqrt(b * b + 2.0 * slope * gap)) / slope)
    k = max(k, 1)
    while k > 1 and (k - 1) * base + slope * (k - 1) * (k - 2) / 2.0 >= gap:
        k -= 1
    while k * base + slope * k * (k - 1) / 2.0 < gap:
        k += 1
    return k


# One function on purpose (docs/interfaces.md "Long functions"): the event loop's state is local variables and
# Python lists, since every replay and every step of a prediction's search runs it over each request; split into
# methods or helpers, each access in the loop would go through an attribute or a call.
def simulate(
    params: ServerParams,
    arrival_s: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
) -> SimResult:
    """Replay requests (arrival times sorted ascending) through the server model: a :class:`SimResult`.

    >>> p = ServerParams(prefill_base_ms=5, prefill_ms_per_token=0.01, decode_base_ms=10, decode_ms_per_seq=0)
    >>> r = simulate(p, np.array([0.0]), np.array([100]), np.array([3]))
    >>> round(float(r.first_token_s[0]), 6), round(float(r.end_s[0]), 6)
    (0.006, 0.026)
    """
    n = int(arrival_s.size)
    arr = np.asarray(arrival_s, dtype=float)
    if n and np.any(np.diff(arr) < 0):
        raise ValueError("arrival_s must be sorted ascending")
    if params.kv_policy not in ("reserve", "paged"):
        raise ValueError(f"kv_policy must be 'reserve' or 'paged', got {params.kv_policy!r}")
    paged = params.kv_policy == "paged"
    inp_a = np.asarray(input_tokens, dtype=float)
    out_a = np.asarray(output_tokens, dtype=float)
    cac = np.zeros(n) if cached_tokens is None else np.minimum(np.asarray(cached_tokens, dtype=float), inp_a)
    # python lists: scalar access to numpy arrays costs ~10x more in this loop
    a = arr.tolist()
    inp = inp_a.tolist()
    unc = np.maximum(inp_a - cac, 0.0).tolist()
    need = (inp_a + out_a).tolist()
    nout = np.maximum(out_a, 1).astype(np.int64).tolist()

    p0, p1 = params.prefill_base_ms / 1000.0, params.prefill_ms_per_token / 1000.0
    d0, d1 = params.decode_base_ms / 1000.0, params.decode_ms_per_seq / 1000.0
    dc = params.decode_ms_per_kctx / 1e6  # s per context token
    slots = params.max_num_seqs if params.max_num_seqs is not None else math.inf
    budget = params.kv_budget_tokens if params.kv_budget_tokens is not None else math.inf
    mbt = params.max_batched_tokens if params.max_batched_tokens is not None else math.inf
    tmo = params.queue_timeout_s if params.queue_timeout_s is not None else math.inf
    rto = params.request_timeout_s if params.request_timeout_s is not None else math.inf
    timed = tmo < math.inf or rto < math.inf  # a deadline can end a decode jump (a running one is in dl)
    dl: list[tuple[float, int, int]] = []  # (deadline, version, request) of running requests (request timeout)

    first = [math.nan] * n
    started = [math.nan] * n  # first token of a request the deadline aborted after it started
    end = [math.nan] * n
    status = [OK] * n
    gen = [0] * n  # tokens generated when last admitted (after its prefill)
    it0 = [0] * n  # decode-iteration count at its last admission
    ver = [0] * n  # heap entries of an older version are stale (the request was preempted)
    queue: deque[int] = deque()
    done: list[tuple[int, int, int]] = []  # (decode-iteration count at which it finishes, version, request)
    stack: list[int] = []  # running requests in admission order (LIFO preemption; finished ones skipped)
    running = [False] * n
    t = 0.0 if n == 0 else a[0]
    it = 0  # decode iterations so far
    nrun = 0
    kv = 0.0  # KV tokens held under the policy
    ctx = 0.0  # context tokens (input + generated) of the running batch
    nxt = 0  # next arrival not yet queued
    peak_run, peak_kv, n_pre = 0, 0.0, 0
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
        # queued requests past their timeout leave (new arrivals are in arrival order; a preempted
        # request at the head has started and does not time out)
        while queue and first[queue[0]] != first[queue[0]] and t - a[queue[0]] > tmo:
            j = queue.popleft()
            status[j] = TIMEOUT
            end[j] = a[j] + tmo
        # the request deadline: queued (also preempted) requests at the head, in arrival order, and running ones
        while queue and t - a[queue[0]] >= rto:
            j = queue.popleft()
            status[j] = TIMEOUT
            end[j] = a[j] + rto
            started[j] = first[j]
            first[j] = math.nan
        while dl and (dl[0][1] != ver[dl[0][2]] or not running[dl[0][2]] or dl[0][0] <= t):
            d, v, j = heapq.heappop(dl)
            if v != ver[j] or not running[j]:
                continue
            g = gen[j] + it - it0[j]
            held = inp[j] + g
            kv -= held if paged else need[j]
            ctx -= held
            running[j] = False
            ver[j] += 1
            nrun -= 1
            status[j] = TIMEOUT
            end[j] = d
            started[j] = first[j]
            first[j] = math.nan
        preempted = False
        if paged and nrun and kv + nrun > budget:
            # out of KV for the next token of every running request: preempt the newest (recompute later)
            while nrun and kv + nrun > budget:
                j = stack.pop()
                if not running[j]:
                    continue
                g = gen[j] + it - it0[j]
                held = inp[j] + g
                kv -= held
                ctx -= held
                running[j] = False
                ver[j] += 1
                gen[j] = g
                nrun -= 1
                n_pre += 1
                queue.appendleft(j)
                preempted = True
        # admission, head of line (none in a step that preempted, as vLLM's scheduler does)
        batch: list[int] = []
        btok = 0.0
        while queue and not preempted:
            j = queue[0]
            if nrun + len(batch) >= slots:
                slot_held[j] = True
                break
            take = (inp[j] + gen[j] + 1) if paged else need[j]
            if kv + take > budget:
                kv_held[j] = True
                break
            tok = unc[j] + gen[j]  # a preempted request recomputes its generated tokens too
            if batch and btok + tok > mbt:
                break
            queue.popleft()
            batch.append(j)
            btok += tok
            kv += take
        if batch:
            t += p0 + p1 * btok
            for j in batch:
                if first[j] != first[j]:
                    first[j] = t
                gen[j] += 1
                if gen[j] >= nout[j]:
                    end[j] = t
                    kv -= (inp[j] + gen[j]) if paged else need[j]
                else:
                    it0[j] = it
                    heapq.heappush(done, (it + nout[j] - gen[j], ver[j], j))
                    running[j] = True
                    stack.append(j)
                    if rto < math.inf:
                        heapq.heappush(dl, (a[j] + rto, ver[j], j))
                    ctx += inp[j] + gen[j]
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
        # decode: the batch is constant until the next completion, admission chance, timeout or KV exhaustion;
        # iteration i of the jump lasts base + slope·i (the context grows by nrun tokens per iteration)
        base = d0 + d1 * nrun + dc * ctx
        slope = dc * nrun
        while done and done[0][1] != ver[done[0][2]]:
            heapq.heappop(done)
        k = done[0][0] - it
        if base > 0:
            # (the iterations to cover a gap are inlined for a constant iteration, slope 0: the common case,
            # the same arithmetic as _iters_to_cover without a call per event)
            if not queue and nxt < n and nrun < slots:
                gap = a[nxt] - t
                kk = (1 if gap <= 0 else math.ceil(gap / base)) if slope <= 0 else _iters_to_cover(gap, base, slope)
                if kk < k:
                    k = kk
            if timed:
                deadline = (a[queue[0]] + min(tmo if first[queue[0]] != first[queue[0]] else math.inf, rto)) \
                    if queue else (a[nxt] + min(tmo, rto) if nxt < n else math.inf)
                if dl and dl[0][0] < deadline:
                    deadline = dl[0][0]
                if deadline < math.inf:
                    kk = _iters_to_cover(deadline - t, base, slope)
                    if kk < k:
                        k = kk
        if paged and budget < math.inf:
            kk = int((budget - kv) // nrun)
            if kk < k:
                k = kk
        if k < 1:
            k = 1
        t0 = t
        t += k * base + slope * k * (k - 1) / 2.0
        it += k
        kv_add = float(nrun * k)
        ctx += kv_add
        if paged:
            kv += kv_add
            if kv > peak_kv:
                peak_kv = kv
        while done and done[0][0] <= it:
            fin, v, j = heapq.heappop(done)
            if v != ver[j]:
                continue
            m = fin - (it - k)
            end[j] = t0 + m * base + slope * m * (m - 1) / 2.0
            nrun -= 1
            running[j] = False
            held = inp[j] + nout[j]
            ctx -= held
            # the context also grew by the iterations after it finished inside this jump
            ctx -= it - fin
            kv -= (held + it - fin) if paged else need[j]
    oh = params.ttft_overhead_ms / 1000.0
    st = np.asarray(status, dtype=np.int8)
    first_a, end_a = np.asarray(first), np.asarray(end)
    if oh:
        first_a = first_a + oh
        end_a = np.where(st == OK, end_a + oh, end_a)
    return SimResult(first_token_s=first_a, end_s=end_a, status=st, aborted_first_s=np.asarray(started) + oh,
                     kv_held=np.asarray(kv_held), slot_held=np.asarray(slot_held), peak_running=int(peak_run),
                     peak_kv_tokens=float(peak_kv), preemptions=int(n_pre))


__all__ = ["OK", "REJECTED", "STATUS", "TIMEOUT", "ServerParams", "SimResult", "simulate"]
