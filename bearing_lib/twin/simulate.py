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
turns per request, compiled by numba (~0.25 µs of CPU per request; the plain-Python loop took ~3.5 µs, and a
prediction's search runs ~100 simulations of up to ~140,000 requests: bench/bench_twin.py,
bench/bench_twin_predict.py). numba is imported and the loop compiled (or loaded from its cache) on the first
simulation of a process.

This module shares no code with the test suite's oracle simulator; it is written from the
model above.
"""

from __future__ import annotations

import heapq
import math
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
        return max(1, int(math.ceil(gap / base))) if base > 0 else 1
    b = base - 0.5 * slope
    k = int(math.ceil((-b + math.sqrt(b * b + 2.0 * slope * gap)) / slope))
    k = max(k, 1)
    while k > 1 and (k - 1) * base + slope * (k - 1) * (k - 2) / 2.0 >= gap:
        k -= 1
    while k * base + slope * k * (k - 1) / 2.0 < gap:
        k += 1
    return k


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
    n = int(np.size(arrival_s))
    arr = np.ascontiguousarray(arrival_s, dtype=np.float64)
    if n and np.any(np.diff(arr) < 0):
        raise ValueError("arrival_s must be sorted ascending")
    if params.kv_policy not in ("reserve", "paged"):
        raise ValueError(f"kv_policy must be 'reserve' or 'paged', got {params.kv_policy!r}")
    inp_a = np.asarray(input_tokens, dtype=np.float64)
    out_a = np.asarray(output_tokens, dtype=np.float64)
    cac = np.zeros(n) if cached_tokens is None else np.minimum(np.asarray(cached_tokens, dtype=np.float64), inp_a)

    def lim(v: float | None) -> float:
        return math.inf if v is None else float(v)

    first, started, end, status, kv_held, slot_held, peak_run, peak_kv, n_pre = _compiled()(
        arr, np.ascontiguousarray(inp_a), np.ascontiguousarray(np.maximum(inp_a - cac, 0.0)),
        np.ascontiguousarray(inp_a + out_a), np.ascontiguousarray(np.maximum(out_a, 1).astype(np.int64)),
        params.prefill_base_ms / 1000.0, params.prefill_ms_per_token / 1000.0, params.decode_base_ms / 1000.0,
        params.decode_ms_per_seq / 1000.0, params.decode_ms_per_kctx / 1e6, lim(params.max_num_seqs),
        lim(params.kv_budget_tokens), lim(params.max_batched_tokens), lim(params.queue_timeout_s),
        lim(params.request_timeout_s), params.kv_policy == "paged")
    if n_pre < 0:  # cannot happen: an empty server admits any request that was not rejected
        raise RuntimeError("twin simulation stalled with an empty server")
    oh = params.ttft_overhead_ms / 1000.0
    if oh:
        first = first + oh
        end = np.where(status == OK, end + oh, end)
    return SimResult(first_token_s=first, end_s=end, status=status, aborted_first_s=started + oh,
                     kv_held=kv_held, slot_held=slot_held, peak_running=int(peak_run),
                     peak_kv_tokens=float(peak_kv), preemptions=int(n_pre))


_KERNEL: list = []
_STEPS = ("_expire_queued", "_new_state", "_preempt")


def _compiled():
    """The event loop compiled by numba on first use (numba is imported only then; ``cache=True``: the machine code
    is kept beside this module, or in numba's user cache, and reloaded by the next process). Its steps (``_STEPS``)
    are compiled with ``inline="always"``: numba inlines them into the loop's IR before the loop is compiled."""
    if not _KERNEL:
        from numba import njit

        global _iters_to_cover
        _iters_to_cover = njit(cache=True, nogil=True)(_iters_to_cover)  # the loop calls it compiled
        for name in _STEPS:
            globals()[name] = njit(inline="always")(globals()[name])
        _KERNEL.append(njit(cache=True, nogil=True)(_event_loop))
    return _KERNEL[0]


# The event loop's set-up and its rare steps (timeouts, preemption): each takes the loop's state it reads and
# returns the scalars it changes (arrays and heaps are changed in place), with the loop's own arithmetic in the loop's
# own order (the numbers are bit-identical). The loop calls a rare step only when it has work to do: a step takes its
# arrays by reference, and each pass over them costs reference counting even when inlined (calling the steps of the
# hot path, admission and the decode jump, on every iteration made a replay 2.5-3x slower).
def _new_state(n):
    """The per-request arrays of the loop: ``first, started, end, status, gen, it0, ver, q, running, kv_held,
    slot_held``. ``started``: first token of a request the deadline aborted after it started; ``gen``: tokens
    generated when last admitted (after its prefill); ``it0``: decode-iteration count at its last admission; ``ver``:
    heap entries of an older version are stale (the request was preempted); ``q``: the queue, a ring buffer (each
    request is in it at most once); ``kv_held``: was held at the head by the KV budget with a slot free;
    ``slot_held``: was held at the head with every slot busy."""
    return (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=np.int8),
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros(max(n, 1), dtype=np.int64), np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_),
            np.zeros(n, dtype=np.bool_))


def _expire_queued(a, first, started, status, end, q, qh, ql, cap, t, tmo, rto):
    """Queued requests past their queue timeout or their request deadline leave: ``(qh, ql)``."""
    # new arrivals are in arrival order; a preempted request at the head has started and does not time out
    while ql > 0 and first[q[qh]] != first[q[qh]] and t - a[q[qh]] > tmo:
        j = q[qh]
        qh = (qh + 1) % cap
        ql -= 1
        status[j] = TIMEOUT
        end[j] = a[j] + tmo
    # the request deadline: queued (also preempted) requests at the head, in arrival order
    while ql > 0 and t - a[q[qh]] >= rto:
        j = q[qh]
        qh = (qh + 1) % cap
        ql -= 1
        status[j] = TIMEOUT
        end[j] = a[j] + rto
        started[j] = first[j]
        first[j] = math.nan
    return qh, ql


def _preempt(stack, running, ver, gen, it0, inp, q, qh, ql, cap, it, budget, kv, ctx, nrun, n_pre):
    """Out of KV for the next token of every running request: preempt the newest (recomputed later), back to the
    queue's head. ``(kv, ctx, nrun, n_pre, qh, ql)``."""
    while nrun > 0 and kv + nrun > budget:
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
        qh = (qh - 1) % cap
        q[qh] = j
        ql += 1
    return kv, ctx, nrun, n_pre, qh, ql


# The loop's state is local variables, compiled by numba (``_compiled``) into one machine-code loop, the steps above
# inlined; the queue is a ring buffer (``q``, head ``qh``, length ``ql``; a preempted request goes back to its head),
# the completion and deadline heaps are lists of tuples (``heapq``).
# With ``NUMBA_DISABLE_JIT=1`` the same source runs as plain Python, with the same numbers (tests/twin/test_jit.py).
def _event_loop(a, inp, unc, need, nout, p0, p1, d0, d1, dc, slots, budget, mbt, tmo, rto, paged):  # noqa: C901
    n = a.size
    timed = tmo < math.inf or rto < math.inf  # a deadline can end a decode jump (a running one is in dl)
    dl = [(0.0, 0.0, 0.0)]  # (deadline, version, request) of running requests (request timeout); typed by its seed
    dl.pop()
    first, started, end, status, gen, it0, ver, q, running, kv_held, slot_held = _new_state(n)
    cap = q.size
    qh = ql = 0  # the queue's head and length
    done = [(0, 0, 0)]  # (decode-iteration count at which it finishes, version, request)
    done.pop()
    stack = [0]  # running requests in admission order (LIFO preemption; finished ones skipped)
    stack.pop()
    batch = [0]
    t = 0.0 if n == 0 else a[0]
    it = 0  # decode iterations so far
    nrun = 0
    kv = 0.0  # KV tokens held under the policy
    ctx = 0.0  # context tokens (input + generated) of the running batch
    nxt = 0  # next arrival not yet queued
    peak_run, peak_kv, n_pre = 0, 0.0, 0  # the running batch's and the KV's peaks; preemptions

    while nxt < n or ql > 0 or nrun > 0:
        # arrivals up to now join the queue (or are rejected outright)
        while nxt < n and a[nxt] <= t:
            if need[nxt] > budget:
                status[nxt] = REJECTED
                end[nxt] = a[nxt]
            else:
                q[(qh + ql) % cap] = nxt
                ql += 1
            nxt += 1
        if ql > 0 and (t - a[q[qh]] > tmo or t - a[q[qh]] >= rto):  # the head may leave (a cheap test first)
            qh, ql = _expire_queued(a, first, started, status, end, q, qh, ql, cap, t, tmo, rto)
        while len(dl) > 0 and (dl[0][1] != ver[int(dl[0][2])] or not running[int(dl[0][2])] or dl[0][0] <= t):
            d, vf, jf = heapq.heappop(dl)
            j = int(jf)
            if vf != ver[j] or not running[j]:
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
        if paged and nrun > 0 and kv + nrun > budget:
            kv, ctx, nrun, n_pre, qh, ql = _preempt(stack, running, ver, gen, it0, inp, q, qh, ql, cap, it, budget,
                                                    kv, ctx, nrun, n_pre)
            preempted = True
        # admission, head of line (none in a step that preempted, as vLLM's scheduler does)
        batch.clear()
        btok = 0.0
        while ql > 0 and not preempted:
            j = q[qh]
            if nrun + len(batch) >= slots:
                slot_held[j] = True
                break
            take = (inp[j] + gen[j] + 1) if paged else need[j]
            if kv + take > budget:
                kv_held[j] = True
                break
            tok = unc[j] + gen[j]  # a preempted request recomputes its generated tokens too
            if len(batch) > 0 and btok + tok > mbt:
                break
            qh = (qh + 1) % cap
            ql -= 1
            batch.append(j)
            btok += tok
            kv += take
        if len(batch) > 0:
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
                        heapq.heappush(dl, (a[j] + rto, float(ver[j]), float(j)))
                    ctx += inp[j] + gen[j]
                    nrun += 1
            peak_run = max(peak_run, nrun)
            peak_kv = max(peak_kv, kv)
            continue
        if nrun == 0:
            if ql > 0:  # cannot happen: an empty server admits any request that was not rejected (said by the caller)
                n_pre = -1
                break
            if nxt < n:
                t = max(t, a[nxt])
            continue
        # decode: the batch is constant until the next completion, admission chance, timeout or KV exhaustion;
        # iteration i of the jump lasts base + slope·i (the context grows by nrun tokens per iteration)
        base = d0 + d1 * nrun + dc * ctx
        slope = dc * nrun
        while len(done) > 0 and done[0][1] != ver[done[0][2]]:
            heapq.heappop(done)
        k = done[0][0] - it
        if base > 0:
            if ql == 0 and nxt < n and nrun < slots:
                k = min(k, _iters_to_cover(a[nxt] - t, base, slope))
            if timed:
                deadline = math.inf
                if ql > 0:
                    h = q[qh]
                    deadline = a[h] + min(tmo if first[h] != first[h] else math.inf, rto)
                elif nxt < n:
                    deadline = a[nxt] + min(tmo, rto)
                if len(dl) > 0 and dl[0][0] < deadline:
                    deadline = dl[0][0]
                if deadline < math.inf:
                    k = min(k, _iters_to_cover(deadline - t, base, slope))
        if paged and budget < math.inf:
            k = min(k, int((budget - kv) // nrun))
        k = max(k, 1)
        t0 = t
        t += k * base + slope * k * (k - 1) / 2.0
        it += k
        kv_add = float(nrun * k)
        ctx += kv_add
        if paged:
            kv += kv_add
            peak_kv = max(peak_kv, kv)
        while len(done) > 0 and done[0][0] <= it:
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
    return first, started, end, status, kv_held, slot_held, peak_run, peak_kv, n_pre


__all__ = ["OK", "REJECTED", "STATUS", "TIMEOUT", "ServerParams", "SimResult", "simulate"]
