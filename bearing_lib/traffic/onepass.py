"""Every aggregate of a traffic profile in ONE streaming read of a Parquet dataset (embedded engine).

The embedded engine used to run one polars query per partial table (facts, per minute, per
second, hour x mix, three token value-count tables) and a further read and sort of the start
times for the gaps: seven reads of the data and seven hash group-bys over every request.
Here the dataset is read once, in slices of :data:`BATCH_ROWS` rows; the per-request
expressions (bin keys, mix, status lookups, token sums) run inside polars' query on each
slice, and each batch adds to dense count arrays with ``numpy.bincount``: bin keys are small
integers (minutes, seconds, hours x mixes, token values), so counting needs no hashing and no
sort. Memory: one batch, the count arrays (one slot per second of the span, per token value)
and the start times for the gaps (8 bytes per request, as before). (``collect_batches``, polars'
batch iterator, was tried first: its engine ran ahead of the consumer and held ~0.5 GB more.)

The partial tables it returns have the shape and the values of :func:`bearing_lib.traffic.dataset._counts`
(the keys are computed per request with the same float expression, ``floor((start_s - origin) / bin)``,
so a request lands in the same bin), which the rest of ``profile_dataset`` combines as before.
Token sums are exact integers (float64 bincount per batch, refused beyond 2**53, then int64).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.data.engine import ParquetDataset
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.trace import OUTCOME_UNKNOWN, STATUSES
from bearing_lib.traffic.binning import FINE_RESOLUTION_S, TimestampResolution, resolution_from_gaps, resolution_of

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

    def add(self, i: int | tuple[int, ...], rel: np.ndarray, lo: int, hi: int,
            weights: np.ndarray | None = None) -> None:
        """Add to column ``i`` (or to each of the columns ``i``) the counts of keys ``rel + lo`` (``lo..hi``), or
        the sums of ``weights`` (float64 holding integers: exact while a batch's sums stay below 2**53, checked by
        the caller)."""
        if rel.size == 0:
            return
        self._fit(lo, hi)
        off = lo - self.lo
        c = np.bincount(rel, weights=weights, minlength=hi - lo + 1)
        if weights is not None:
            c = c.astype(np.int64)
        for col in (i,) if isinstance(i, int) else i:
            self.arr[col, off:off + c.size] += c

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


def _batches(lf: pl.LazyFrame, total: int | None):  # noqa: ANN202 - an iterator of DataFrames
    """The query's rows in batches of :data:`BATCH_ROWS`: a slice of the scan per batch when the row count
    is known (the Parquet reader then decodes only the row groups of the slice, and memory holds one
    batch), else polars' batch iterator (whose engine may run ahead of the consumer)."""
    if total is None:
        yield from lf.collect_batches(chunk_size=BATCH_ROWS, engine="streaming")
        return
    for off in range(0, max(total, 1), BATCH_ROWS):
        yield lf.slice(off, BATCH_ROWS).collect(engine="streaming")


def one_pass(ds: ParquetDataset, columns: list[str], *, origin: float, spec: MixSpec, bad_statuses: tuple[str, ...],
             progress: Callable[[int], None] | None = None) -> OnePass:
    """Read ``ds`` once (``columns``: the profile's) and aggregate every partial table.

    The per-request expressions (bin keys, the mix, the status code, token sums) run inside the
    streaming query, in polars' threads while the file is decoded; this process then only counts
    the batches' columns with numpy (zero-copy views)."""
    s = pl.col("start_s")
    st = pl.col("status")
    inp, out = pl.col("input_tokens"), pl.col("output_tokens")
    n_mix = len(spec.mixes) + 1
    no_outcome = [x for x in OUTCOME_UNKNOWN if x not in bad_statuses]
    per_row = [
        s,
        ((s - origin) / 60.0).floor().cast(pl.Int64).alias("km"),
        (s - origin).floor().cast(pl.Int64).alias("ks"),
        (((s - origin) / 3600.0).floor().cast(pl.Int64) * n_mix + _mix_code(spec)).alias("hm"),
        inp.fill_null(0).cast(pl.Float64).alias("in0"),
        out.fill_null(0).cast(pl.Float64).alias("out0"),
        (inp + out).alias("total"), inp, out, pl.col("cached_tokens"),
        # two set lookups on the status text (cheaper than mapping it to a code): known, and bad
        st.is_in(list(STATUSES)).fill_null(False).alias("known"),
        st.is_in(list(bad_statuses)).fill_null(False).alias("bad"),
        st.is_null().alias("no_status"),
        # cancelled / unknown (unless counted bad): neither good nor bad, out of the budget's ratio
        st.is_in(no_outcome).fill_null(False).alias("neutral"),
        pl.col("step").is_not_null().alias("has_step"),
    ]
    minute, second, mixh = _Dense(5), _Dense(1), _Dense(1)
    seq = [_ValueCounts(), _ValueCounts(), _ValueCounts()]
    facts: list[dict[str, object]] = []
    total = ds.n_rows()
    starts = np.empty(total if total is not None else 0, dtype=np.float64)
    n_starts = 0
    # reused for the relative keys of every batch (fresh numpy buffers of a batch's size cost page faults)
    scratch = np.empty(BATCH_ROWS, dtype=np.int64)
    lf = ds.scan(columns)
    for b in _batches(lf.select(per_row), total):
        b = b.rechunk()  # one chunk per column: to_numpy() is then a view, not a copy
        no_status = b["no_status"].to_numpy()
        n_no_status = int(np.count_nonzero(no_status))
        known = b["known"].to_numpy()
        f = {"n": b.height, "t_min": b["start_s"].min(), "t_max": b["start_s"].max(),
             "null_start_s": b["start_s"].null_count(), "n_step": int(np.count_nonzero(b["has_step"].to_numpy()))}
        for c in (*TOKENS, "status"):
            f[f"null_{c}"] = n_no_status if c == "status" else b[c].null_count()
        for c in TOKENS:
            lo = b[c].min()
            f[f"neg_{c}"] = int((b[c] < 0).sum()) if lo is not None and lo < 0 else 0
        f["bad_status"] = b.height - int(np.count_nonzero(known)) - n_no_status
        f["no_outcome"] = int(np.count_nonzero(b["neutral"].to_numpy()))
        facts.append(f)
        if f["null_start_s"]:  # a missing start is refused from the facts; count the others
            b = b.filter(s.is_not_null())
            no_status = b["no_status"].to_numpy()
        m = b.height
        if m == 0:
            continue
        if max(abs(b["input_tokens"].max() or 0), abs(b["input_tokens"].min() or 0),
               abs(b["output_tokens"].max() or 0), abs(b["output_tokens"].min() or 0)) * m >= 2**53:
            raise OverflowError("token sums beyond 2**53 in one batch of the profile")
        kmv = b["km"].to_numpy()
        klo, khi = int(kmv.min()), int(kmv.max())
        if scratch.size < m:
            scratch = np.empty(m, dtype=np.int64)
        km_rel = np.subtract(kmv, klo, out=scratch[:m])
        minute.add((0, 3), km_rel, klo, khi)  # requests, and (less those out of the ratio, below) outcomes
        minute.add(1, km_rel, klo, khi, b["in0"].to_numpy())
        minute.add(2, km_rel, klo, khi, b["out0"].to_numpy())
        out_of_ratio = no_status | b["neutral"].to_numpy()
        if out_of_ratio.any():  # requests with an outcome = all but those without status or with no outcome
            c = np.bincount(km_rel[out_of_ratio], minlength=khi - klo + 1)
            minute.arr[3, klo - minute.lo:klo - minute.lo + c.size] -= c
        minute.add(4, km_rel[b["bad"].to_numpy()], klo, khi)
        for dense, col in ((second, "ks"), (mixh, "hm")):
            v = b[col].to_numpy()
            lo, hi = int(v.min()), int(v.max())
            dense.add(0, np.subtract(v, lo, out=scratch[:m]), lo, hi)  # km_rel is no longer needed
        tok = [b["total"], b["input_tokens"], b["output_tokens"]]
        if tok[1].null_count() or tok[2].null_count():
            both = ~(tok[1].is_null() | tok[2].is_null()).to_numpy()
            tok = [t.to_numpy()[both] for t in tok]
        else:
            tok = [t.to_numpy() for t in tok]
        for vc, v in zip(seq, tok, strict=True):
            vc.add(v)
        if n_starts + m > starts.size:  # more rows than the footers said (or no footer count)
            starts = np.concatenate([starts[:n_starts], np.empty(max(m, n_starts), dtype=np.float64)])
        starts[n_starts:n_starts + m] = b["start_s"].to_numpy()
        n_starts += m
        if progress is not None:
            progress(f["n"])
    if not facts:  # no batch at all (an empty dataset): the facts of nothing, for the checks
        facts.append({"n": 0, "t_min": None, "t_max": None, "null_start_s": 0, "n_step": 0,
                      **{f"null_{c}": 0 for c in (*TOKENS, "status")}, **{f"neg_{c}": 0 for c in TOKENS},
                      "bad_status": 0, "no_outcome": 0})
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
    fact_schema = {"n": pl.Int64, "t_min": pl.Float64, "t_max": pl.Float64, "null_start_s": pl.Int64,
                   "n_step": pl.Int64, **{f"null_{c}": pl.Int64 for c in (*TOKENS, "status")},
                   **{f"neg_{c}": pl.Int64 for c in TOKENS}, "bad_status": pl.Int64,
                   "no_outcome": pl.Int64}
    return OnePass(pl.DataFrame(facts, schema=fact_schema), minute_t, second_t, mix_t,
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
            res = resolution_of(n_requests, n_pos + 1, dmin, None, None)
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
