"""Every aggregate of a traffic profile in ONE streaming read of a Parquet dataset (embedded engine).

The embedded engine used to run one polars query per partial table (facts, per minute, per
second, hour x mix, three token value-count tables) and a further read and sort of the start
times for the gaps: seven reads of the data and seven hash group-bys over every request.
Here the dataset is read once, batch by batch (polars' streaming engine decodes the next
batches while this process aggregates the current one), and each batch adds to dense count
arrays with ``numpy.bincount``: bin keys are small integers (minutes, seconds, hours x mixes,
token values), so counting needs no hashing and no sort. Memory: one batch, the count
arrays (one slot per second of the span, per token value) and the start times for the gaps
(8 bytes per request, as before).

The partial tables it returns have the shape and the values of :func:`bearing_lib.traffic.dataset._counts`
(the keys are computed per request with the same float expression, ``floor((start_s - origin) / bin)``,
so a request lands in the same bin), which the rest of ``profile_dataset`` combines as before.
Token sums are accumulated exactly (int64 per batch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.data.engine import ParquetDataset
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.trace import STATUSES
from bearing_lib.traffic.binning import FINE_RESOLUTION_S, TimestampResolution, resolution_from_gaps

#: rows per batch of the streaming read
BATCH_ROWS = 1 << 20
#: token values above this are counted with a sort instead of a dense array
DENSE_TOKEN_LIMIT = 1 << 24
MIX_COLUMNS = ["start_s", "input_tokens", "output_tokens", "cached_tokens"]
TOKENS = ("input_tokens", "output_tokens", "cached_tokens")


class _Dense:
    """Integer counts (or int64 sums) on a growing window of integer keys.

    :meth:`add` takes keys relative to ``lo`` (non-negative, computed by polars, whose allocator
    reuses its buffers: fresh numpy temporaries of the batch's size cost page faults on the VM)."""

    def __init__(self, n_cols: int = 1) -> None:
        self.lo: int | None = None
        self.arr = np.zeros((n_cols, 0), dtype=np.int64)

    def _fit(self, lo: int, hi: int) -> None:
        if self.lo is None:
            self.lo, self.arr = lo, np.zeros((self.arr.shape[0], hi - lo + 1), dtype=np.int64)
        elif lo < self.lo or hi >= self.lo + self.arr.shape[1]:
            new_lo = min(lo, self.lo)
            new_hi = max(hi, self.lo + self.arr.shape[1] - 1)
            grown = np.zeros((self.arr.shape[0], new_hi - new_lo + 1), dtype=np.int64)
            grown[:, self.lo - new_lo:self.lo - new_lo + self.arr.shape[1]] = self.arr
            self.lo, self.arr = new_lo, grown

    def add(self, i: int, rel: np.ndarray, lo: int, hi: int, weights: np.ndarray | None = None) -> None:
        """Add to column ``i`` the counts of keys ``rel + lo`` (``lo..hi``), or the sums of ``weights``
        (float64 holding integers: exact while a batch's sums stay below 2**53, checked by the caller)."""
        if rel.size == 0:
            return
        self._fit(lo, hi)
        off = lo - self.lo
        c = np.bincount(rel, weights=weights, minlength=hi - lo + 1)
        self.arr[i, off:off + c.size] += c if weights is None else c.astype(np.int64)

    def table(self, names: list[str], *, nonzero: int | None = 0) -> pl.DataFrame:
        if self.lo is None:
            return pl.DataFrame(schema={"k": pl.Int64, **{c: pl.Int64 for c in names}})
        keep = np.ones(self.arr.shape[1], dtype=bool) if nonzero is None else self.arr[nonzero] > 0
        return pl.DataFrame({"k": np.arange(self.lo, self.lo + self.arr.shape[1], dtype=np.int64)[keep],
                             **{c: self.arr[i][keep] for i, c in enumerate(names)}})


class _ValueCounts:
    """value -> count of non-negative integer token counts (dense below DENSE_TOKEN_LIMIT)."""

    def __init__(self) -> None:
        self.dense = np.zeros(0, dtype=np.int64)
        self.sparse: list[pl.DataFrame] = []

    def add(self, v: np.ndarray) -> None:
        if v.size == 0:
            return
        lo, hi = int(v.min()), int(v.max())
        if lo < 0 or hi >= DENSE_TOKEN_LIMIT:
            s = pl.Series("v", v)
            self.sparse.append(s.value_counts(name="n").with_columns(pl.col("n").cast(pl.Int64)))
            return
        c = np.bincount(v, minlength=self.dense.size)
        if c.size > self.dense.size:
            c[:self.dense.size] += self.dense
            self.dense = c.astype(np.int64)
        else:
            self.dense += c

    def table(self) -> pl.DataFrame:
        nz = np.flatnonzero(self.dense)
        out = pl.DataFrame({"v": nz.astype(np.int64), "n": self.dense[nz]})
        if self.sparse:
            out = pl.concat([out, *self.sparse]).group_by("v").agg(pl.col("n").sum())
        return out


@dataclass
class OnePass:
    """The partial tables of one read (see module docstring) and the sorted start times."""

    facts: pl.DataFrame
    minute: pl.DataFrame
    second: pl.DataFrame
    mix_hour: pl.DataFrame
    seq: list[pl.DataFrame]
    starts: np.ndarray  # sorted start times (for the gaps)


def _mix_code(spec: MixSpec) -> pl.Expr:
    """The mix of each request as an integer (``len(spec.mixes)`` = other): ``MixSpec.assign`` on the
    columns ``mix_hour_partials`` selects."""
    expr: pl.Expr = pl.lit(len(spec.mixes), pl.Int32)
    for i in reversed(range(len(spec.mixes))):
        expr = pl.when(spec.mixes[i].expr(MIX_COLUMNS)).then(pl.lit(i, pl.Int32)).otherwise(expr)
    return expr


def one_pass(ds: ParquetDataset, columns: list[str], *, origin: float, spec: MixSpec, bad_statuses: tuple[str, ...],
             progress: Callable[[int], None] | None = None) -> OnePass:
    """Read ``ds`` once (``columns``: the profile's) and aggregate every partial table."""
    s = pl.col("start_s")
    st = pl.col("status")
    # the status as a small code, decoded once per batch (unknown text: -1; null stays apart via is_not_null)
    code = st.replace_strict(list(STATUSES), list(range(len(STATUSES))), default=-1, return_dtype=pl.Int8)
    bad_codes = [STATUSES.index(x) for x in bad_statuses if x in STATUSES]
    km = ((s - origin) / 60.0).floor().cast(pl.Int64)
    ks = (s - origin).floor().cast(pl.Int64)
    hm = ((s - origin) / 3600.0).floor().cast(pl.Int64) * (len(spec.mixes) + 1) + _mix_code(spec)
    per_row = [
        s, km.alias("km"), ks.alias("ks"), hm.alias("hm"),
        pl.col("input_tokens").fill_null(0).cast(pl.Float64).alias("in0"),
        pl.col("output_tokens").fill_null(0).cast(pl.Float64).alias("out0"),
    ]
    token_max = [pl.col(c).abs().max().alias(c) for c in ("input_tokens", "output_tokens")]
    minute_status = [  # the minutes of requests without a status (usually none) and of bad ones (about 1 %)
        km.filter(st.is_null()).alias("null_k"),
        km.filter(code.is_in(bad_codes)).alias("bad_k"),
    ]
    tokens = [(pl.col("input_tokens") + pl.col("output_tokens")).alias("total"), "input_tokens", "output_tokens"]
    facts_exprs = [
        pl.len().cast(pl.Int64).alias("n"),
        s.min().alias("t_min"),
        s.max().alias("t_max"),
        s.null_count().cast(pl.Int64).alias("null_start_s"),
        pl.col("step").is_not_null().sum().cast(pl.Int64).alias("n_step"),
        *[pl.col(c).null_count().cast(pl.Int64).alias(f"null_{c}") for c in (*TOKENS, "status")],
        *[(pl.col(c) < 0).sum().cast(pl.Int64).alias(f"neg_{c}") for c in TOKENS],
        (st.is_not_null() & (code < 0)).sum().cast(pl.Int64).alias("bad_status"),
    ]
    minute, second, mixh = _Dense(5), _Dense(1), _Dense(1)
    seq = [_ValueCounts(), _ValueCounts(), _ValueCounts()]
    facts: list[pl.DataFrame] = []
    total = ds.n_rows()
    starts = np.empty(total if total is not None else 0, dtype=np.float64)
    n_starts = 0
    n_mix = len(spec.mixes) + 1
    lf = ds.scan(columns)
    for batch in lf.collect_batches(chunk_size=BATCH_ROWS, engine="streaming"):
        f = batch.select(facts_exprs)
        facts.append(f)
        nulls = f.row(0, named=True)
        # a missing start is refused from the facts; copy the batch only when it has one
        timed = batch.filter(s.is_not_null()) if nulls["null_start_s"] else batch
        if timed.height == 0:
            continue
        b = timed.select(per_row)
        mx = timed.select(token_max).row(0)
        m = b.height
        if max(mx[0] or 0, mx[1] or 0) * m >= 2**53:
            raise OverflowError("token sums beyond 2**53 in one batch of the profile")
        kmv = b["km"].to_numpy()
        klo, khi = int(kmv.min()), int(kmv.max())
        km_rel = kmv - klo
        minute.add(0, km_rel, klo, khi)
        minute.add(1, km_rel, klo, khi, b["in0"].to_numpy())
        minute.add(2, km_rel, klo, khi, b["out0"].to_numpy())
        minute.add(3, km_rel, klo, khi)
        null_k = timed.select(minute_status[0])[:, 0].to_numpy() if nulls["null_status"] else np.zeros(0, np.int64)
        bad_k = timed.select(minute_status[1])[:, 0].to_numpy()
        if null_k.size:  # requests with a status = all but those without
            minute.arr[3, klo - minute.lo:khi - minute.lo + 1] -= np.bincount(null_k - klo, minlength=khi - klo + 1)
        minute.add(4, bad_k - klo, klo, khi)
        for dense, col in ((second, "ks"), (mixh, "hm")):
            v = b[col].to_numpy()
            lo, hi = int(v.min()), int(v.max())
            dense.add(0, v - lo, lo, hi)
        both = timed.select(tokens)
        if nulls["null_input_tokens"] or nulls["null_output_tokens"]:
            both = both.drop_nulls()
        for vc, col in zip(seq, ("total", "input_tokens", "output_tokens"), strict=True):
            vc.add(both[col].to_numpy())
        if n_starts + m > starts.size:  # more rows than the footers said (or no footer count)
            starts = np.concatenate([starts[:n_starts], np.empty(max(m, n_starts), dtype=np.float64)])
        starts[n_starts:n_starts + m] = b["start_s"].to_numpy()
        n_starts += m
        if progress is not None:
            progress(batch.height)
    if not facts:  # no batch at all (an empty dataset): the facts of nothing, for the checks
        facts.append(lf.select(facts_exprs).collect())
    minute_t = minute.table(["requests", "input_tokens", "output_tokens", "n", "bad"])
    second_t = second.table(["requests"])
    mk = mixh.table(["n_requests"])
    names = [*spec.names(), "other"]
    mix_t = pl.DataFrame({
        "h": (mk["k"].to_numpy() // n_mix).astype(float),
        "mix": [names[i] for i in (mk["k"].to_numpy() % n_mix)],
        "n_requests": mk["n_requests"],
    }, schema={"h": pl.Float64, "mix": pl.String, "n_requests": pl.Int64})
    all_starts = starts[:n_starts]
    if n_starts > 1 and not pl.Series(all_starts).is_sorted():
        all_starts.sort(kind="stable")
    return OnePass(pl.concat(facts), minute_t, second_t, mix_t,
                   [vc.table() for vc in seq], all_starts)


def gap_summary(starts: np.ndarray, n_requests: int) -> tuple[TimestampResolution, int, float | None]:
    """(timestamp grid, number of gaps, inter-arrival CV) of sorted start times, computed in place in
    ``starts`` (which it overwrites: no temporaries of the trace's size, each of which costs page faults).

    The arithmetic is the in-memory path's term for term: the gaps ``np.diff``, the grid from the
    positive gaps (:func:`resolution_from_gaps`), the CV ``std(ddof=1) / mean`` as numpy computes it
    (sum / n; then the sum of squared deviations / (n - 1))."""
    n = starts.size
    if n < 2:
        return resolution_from_gaps(n_requests, np.zeros(0)), 0, None
    g = starts[:-1]
    block = 1 << 20
    for i in range(0, n - 1, block):  # g[i] = starts[i + 1] - starts[i], block by block (reads ahead of writes)
        j = min(i + block, n - 1)
        g[i:j] = starts[i + 1:j + 1] - starts[i:j]
    n_pos = int(np.count_nonzero(g))  # sorted: every gap >= 0
    if n_pos == 0:
        res = resolution_from_gaps(n_requests, np.zeros(0))
    else:
        dmin = float(np.min(g, where=g > 0, initial=np.inf))
        if dmin >= FINE_RESOLUTION_S and n_pos >= 10:
            res = resolution_from_gaps(n_requests, g[g > 0])
        else:
            res = TimestampResolution(n_requests, n_pos + 1, dmin, None, None)
    n_gaps = int(g.size)
    if n_gaps < 2:
        return res, n_gaps, None
    mean = np.add.reduce(g) / n_gaps
    if mean <= 0:
        return res, n_gaps, None
    np.subtract(g, mean, out=g)
    np.multiply(g, g, out=g)
    std = np.sqrt(np.add.reduce(g) / (n_gaps - 1))
    return res, n_gaps, float(std / mean)


__all__ = ["BATCH_ROWS", "OnePass", "gap_summary", "one_pass"]
