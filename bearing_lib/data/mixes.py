"""Request mixes: named boxes in (input tokens, output tokens, cache-hit ratio) space.

A mix is a set of half-open bounds ``[lo, hi)`` on ``input_tokens``, ``output_tokens``
(for a failed request: its requested output length, see :func:`mix_output_expr`)
and ``cache_hit_ratio`` (= ``cached_tokens / input_tokens``, 0 when ``cached_tokens`` is
null). A :class:`MixSpec` is an ordered list of mixes; a request belongs to the first
mix whose bounds contain it, else to ``"other"``. The same spec segments load tests
(limits) and production traces (mix weights), and travels in the limits JSON as
``MixSpec.to_dict()`` so a plan can re-apply it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.yamlfile import read_yaml

DIMENSIONS: tuple[str, ...] = ("input_tokens", "output_tokens", "cache_hit_ratio")
OTHER = "other"
ALL = "all"


@dataclass(frozen=True)
class Mix:
    """One mix: a name and ``[lo, hi)`` bounds per dimension (missing = unbounded)."""

    name: str
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for dim, (lo, hi) in self.bounds.items():
            if dim not in DIMENSIONS:
                raise ParameterError(f"mix {self.name!r}: unknown dimension {dim!r}; expected one of {DIMENSIONS}")
            if not lo < hi:
                raise ParameterError(f"mix {self.name!r}: {dim} bounds [{lo}, {hi}) are empty; expected lo < hi")

    def expr(self, columns: Collection[str] = ()) -> pl.Expr:
        """Polars boolean expression: request lies inside this mix.

        ``columns`` are the frame's columns: with ``status`` among them a failed request is judged on
        its requested output length (``requested_output_tokens``), not on the output it never
        produced; one with neither is judged on its other dimensions only (:func:`mix_output_expr`).
        """
        cond = pl.lit(True)
        out, unknown = mix_output_expr(columns)
        for dim, (lo, hi) in self.bounds.items():
            col = (cache_hit_ratio_expr() if dim == "cache_hit_ratio" else out if dim == "output_tokens"
                   else pl.col(dim).cast(pl.Float64))
            inside = pl.lit(True)
            if math.isfinite(lo):
                inside = inside & (col >= lo)
            if math.isfinite(hi):
                inside = inside & (col < hi)
            if dim == "output_tokens":
                inside = pl.when(unknown).then(pl.lit(True)).otherwise(inside)
            cond = cond & inside
        return cond

    def describe(self) -> str:
        """Human text such as ``input 1024–4096 tok, output < 256 tok``."""
        parts = []
        words = {
            "input_tokens": ("input", " tok"),
            "output_tokens": ("output", " tok"),
            "cache_hit_ratio": ("cache hit", ""),
        }
        for dim, (lo, hi) in self.bounds.items():
            w, unit = words[dim]
            fmt = (lambda v: f"{v:.0%}") if dim == "cache_hit_ratio" else (lambda v: f"{v:,.0f}")
            if math.isfinite(lo) and math.isfinite(hi):
                parts.append(f"{w} {fmt(lo)}–{fmt(hi)}{unit}")
            elif math.isfinite(hi):
                parts.append(f"{w} < {fmt(hi)}{unit}")
            elif math.isfinite(lo):
                parts.append(f"{w} ≥ {fmt(lo)}{unit}")
        return ", ".join(parts) or "all requests"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.describe(),
            "bounds": {d: [_num(lo), _num(hi)] for d, (lo, hi) in self.bounds.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Mix:
        """Inverse of :meth:`to_dict` (``None`` bounds are unbounded)."""
        try:
            bounds = {}
            for dim, (lo, hi) in dict(d.get("bounds") or {}).items():  # type: ignore[arg-type]
                bounds[dim] = (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))
            return cls(name=str(d["name"]), bounds=bounds)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"mix definition {d!r}: expected name and bounds {{dim: [lo, hi]}}") from exc


def mix_output_expr(columns: Collection[str] = ()) -> tuple[pl.Expr, pl.Expr]:
    """``(output length a mix judges a request on, whether that length is unknown)``.

    A failed request (``status`` not ok) is put where its request would have been: by its
    ``requested_output_tokens`` (the ``max_tokens`` / target output length the client asked for) when
    the source gives it, never by the 0 (or null) output it never produced. Without a requested length
    such a request's output is unknown, and the mix is chosen on its other dimensions (input tokens,
    cache hit) only; the loaders say so in a finding (``failed_output_unknown``). A failed request
    that streamed part of its output before failing, with no requested length, keeps that partial
    output. Successful requests, and frames without ``status``, use ``output_tokens``.
    """
    out = pl.col("output_tokens").cast(pl.Float64)
    if "status" not in columns:
        return out, pl.lit(False)
    failed = pl.col("status").is_not_null() & (pl.col("status") != "ok")
    req = (pl.col("requested_output_tokens").cast(pl.Float64) if "requested_output_tokens" in columns
           else pl.lit(None, pl.Float64))
    nothing = out.is_null() | (out == 0)
    eff = pl.when(failed & req.is_not_null()).then(req).when(failed & nothing).then(pl.lit(None, pl.Float64))
    return eff.otherwise(out), (failed & req.is_null() & nothing).fill_null(False)


def _num(v: float) -> float | None:
    return None if math.isinf(v) else v


def cache_hit_ratio_expr() -> pl.Expr:
    """``cached_tokens / input_tokens`` (0 when either is null or input is 0)."""
    return (
        pl.when(pl.col("input_tokens") > 0)
        .then(pl.col("cached_tokens").fill_null(0).cast(pl.Float64) / pl.col("input_tokens").cast(pl.Float64))
        .otherwise(0.0)
    )


@dataclass(frozen=True)
class MixSpec:
    """Ordered mixes; ``assign`` labels each request with the first mix that holds it."""

    mixes: tuple[Mix, ...]

    @classmethod
    def single(cls) -> MixSpec:
        """All requests in one mix called ``all`` (``--mixes none``)."""
        return cls((Mix(ALL, {}),))

    def names(self) -> list[str]:
        return [m.name for m in self.mixes]

    def assign(self, frame: pl.DataFrame | pl.LazyFrame, column: str = "mix") -> pl.DataFrame | pl.LazyFrame:
        """``frame`` with a ``mix`` column (String)."""
        expr: pl.Expr = pl.lit(OTHER)
        cols = frame.collect_schema().names()
        for m in reversed(self.mixes):
            expr = pl.when(m.expr(cols)).then(pl.lit(m.name)).otherwise(expr)
        return frame.with_columns(expr.alias(column))

    def to_dict(self) -> list[dict[str, object]]:
        return [m.to_dict() for m in self.mixes]

    @classmethod
    def from_dict(cls, items: list[dict[str, object]]) -> MixSpec:
        return cls(tuple(Mix.from_dict(d) for d in items))


# --------------------------------------------------------------------------------------
# Automatic segmentation and mix files (used by ``bearing limits --mixes auto|FILE``)

AUTO_EDGES: dict[str, tuple[float, ...]] = {
    "input_tokens": tuple(float(4**k) for k in range(1, 10)),  # 4, 16, ..., 262144 tokens
    "output_tokens": tuple(float(4**k) for k in range(1, 9)),
    "cache_hit_ratio": (0.25, 0.5, 0.75),
}
"""Candidate cut points per dimension: powers of 4 (log scale) for token counts, quarters for the hit ratio."""


def _merge_bins(counts: list[int], cuts: list[float], need: float, max_bins: int) -> list[float]:
    """Greedy left-to-right merge of adjacent bins until each holds ``need`` rows; returns kept cuts."""
    kept: list[float] = []
    acc = 0
    for i, c in enumerate(counts):
        acc += c
        if i < len(cuts) and acc >= need:
            kept.append(cuts[i])
            acc = 0
    if kept and acc < need:  # the last bin is too small: merge it into the previous one
        kept.pop()
    while len(kept) + 1 > max_bins:  # too many bins: drop the cut whose smaller neighbour is smallest
        edges = [-math.inf, *kept, math.inf]
        sizes = [sum(c for c, lo in zip(counts, [-math.inf, *cuts], strict=True) if e0 <= lo < e1)
                 for e0, e1 in zip(edges[:-1], edges[1:], strict=True)]
        j = min(range(len(kept)), key=lambda i: min(sizes[i], sizes[i + 1]))
        kept.pop(j)
    return kept


def _short(dim: str, lo: float, hi: float) -> str:
    word = {"input_tokens": "in", "output_tokens": "out", "cache_hit_ratio": "hit"}[dim]

    def f(v: float) -> str:
        if dim == "cache_hit_ratio":
            return f"{v:.0%}"
        return f"{v / 1024:g}k" if v >= 1024 else f"{v:g}"

    if math.isinf(lo):
        return f"{word}<{f(hi)}"
    if math.isinf(hi):
        return f"{word}>={f(lo)}"
    return f"{word}{f(lo)}-{f(hi)}"


def auto_mixes(
    frame: pl.DataFrame | pl.LazyFrame, min_share: float = 0.1, max_bins_per_dim: int = 3
) -> MixSpec:
    """Segment requests into a few mixes by input length, output length and cache-hit ratio.

    Deterministic recursive splitting: starting from one box holding every request, for
    each dimension in :data:`DIMENSIONS` order, every box is cut at the log-scale
    candidate points of :data:`AUTO_EDGES`; adjacent bins are merged left to right until
    each holds at least ``min_share`` of ALL requests (a short last bin joins its
    neighbour), and at most ``max_bins_per_dim`` bins are kept. A dimension with no data
    (e.g. no ``cached_tokens``) leaves the boxes unsplit. The outermost bins are open
    (±inf), so the spec covers any future request. Names are short bounds text
    (``in<1k/out>=256``); ``Mix.describe()`` gives the long form.
    """
    if not 0 < min_share <= 1:
        raise ParameterError(f"min_share must be in (0, 1], got {min_share}")
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    cols = lf.collect_schema().names()
    exprs = []
    for dim in DIMENSIONS:
        if dim == "cache_hit_ratio":
            has = "cached_tokens" in cols and "input_tokens" in cols
            exprs.append((cache_hit_ratio_expr() if has else pl.lit(None, pl.Float64)).alias(dim))
        elif dim == "output_tokens" and dim in cols:
            # a failed request counts at its requested output length, or not at all on this dimension
            exprs.append(mix_output_expr(cols)[0].alias(dim))
        else:
            exprs.append((pl.col(dim).cast(pl.Float64) if dim in cols else pl.lit(None, pl.Float64)).alias(dim))
    # One pass: each dimension's bin among AUTO_EDGES (the count of edges at or below the value, numpy's
    # searchsorted(side="right"): a NaN lands in the top bin, as polars orders it above every number), -1 for
    # null, counted per combination of bins. Every box below is a union of those bins (its bounds are edges),
    # so its counts are sums over this small table: the same numbers as filtering the requests box by box
    # (tests/data/test_mixes_auto_table.py), at one pass over the requests instead of one per box.
    vals = lf.select(exprs)
    codes = [pl.when(pl.col(d).is_null()).then(pl.lit(-1, pl.Int16)).otherwise(
        pl.sum_horizontal([(pl.col(d) >= c).cast(pl.Int16) for c in AUTO_EDGES[d]])).alias(d) for d in DIMENSIONS]
    facts_lf = vals.select(pl.len().alias("_n"), *[pl.col(d).null_count().alias(f"_null_{d}") for d in DIMENSIONS],
                           pl.col("cache_hit_ratio").max().alias("_hit_max"))
    table_lf = vals.select(codes).group_by(list(DIMENSIONS)).agg(pl.len().alias("_n"))
    facts_df, table = pl.collect_all([facts_lf, table_lf])
    facts = facts_df.row(0, named=True)
    total = int(facts["_n"])
    if total == 0:
        raise ParameterError("auto_mixes: no requests to segment")
    need = min_share * total
    code = {d: table[d].to_numpy() for d in DIMENSIONS}
    weight = table["_n"].to_numpy()
    boxes: list[dict[str, tuple[float, float]]] = [{}]
    for dim in DIMENSIONS:
        if facts[f"_null_{dim}"] == total or (dim == "cache_hit_ratio" and "cached_tokens" in cols
                                               and facts["_hit_max"] == 0):
            continue
        cuts = list(AUTO_EDGES[dim])
        new_boxes = []
        for box in boxes:
            inside = code[dim] >= 0  # drop_nulls
            for d, (lo, hi) in box.items():  # the box's bins on the dimensions already split (null: outside)
                e = AUTO_EDGES[d]
                first = 0 if math.isinf(lo) else list(e).index(lo) + 1
                last = len(e) if math.isinf(hi) else list(e).index(hi)
                inside &= (code[d] >= first) & (code[d] <= last)
            counts = np.bincount(code[dim][inside], weights=weight[inside], minlength=len(cuts) + 1)
            kept = _merge_bins([int(c) for c in counts], cuts, need, max_bins_per_dim)
            edges = [-math.inf, *kept, math.inf]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True):
                nb = dict(box)
                if len(edges) > 2:
                    nb[dim] = (lo, hi)
                new_boxes.append(nb)
        boxes = new_boxes
    if boxes == [{}]:
        return MixSpec.single()
    mixes = []
    for box in boxes:
        name = "/".join(_short(d, *box[d]) for d in DIMENSIONS if d in box)
        mixes.append(Mix(name, box))
    return MixSpec(tuple(mixes))


def load_mix_spec(source: str | object) -> MixSpec:
    """A :class:`MixSpec` from a YAML/JSON file path, or from an already-parsed list/dict.

    Accepted shapes: a list of ``{name, bounds: {dim: [lo, hi]}}`` (``null`` = open), or
    ``{mixes: [...]}``, or ``{name: {dim: [lo, hi]}}``.
    """
    from pathlib import Path

    doc = source
    where = "mix definition"
    if isinstance(source, (str, Path)):
        p = Path(source)
        where = str(p)
        doc = read_yaml(p, "the mix file")
    if isinstance(doc, dict) and "mixes" in doc:
        doc = doc["mixes"]
    if isinstance(doc, dict):
        doc = [{"name": k, "bounds": v} for k, v in doc.items()]
    if not isinstance(doc, list) or not doc:
        raise ParameterError(
            f"{where}: expected a list of mixes [{{name, bounds: {{input_tokens: [lo, hi], ...}}}}], "
            f"found {type(doc).__name__}"
        )
    try:
        spec = MixSpec.from_dict(doc)
    except ParameterError as exc:
        raise ParameterError(f"{where}: {exc}") from None
    names = spec.names()
    if len(set(names)) != len(names):
        raise ParameterError(f"{where}: mix names must be unique, found {names}")
    return spec


def check_spec_matches(spec: MixSpec, datasets: object) -> list[str]:
    """Refuse a mix spec that matches no request; name the mixes that match none.

    ``datasets`` are request traces (objects with a ``frame``; others, such as load-point
    tables, have no per-request data and are skipped). Returns the names of mixes that
    hold no request (a flagged handling: such a mix simply gets no limit); raises when
    **no** mix of the spec holds any request, i.e. every request would fall into
    ``other``, which is almost always a spec in the wrong units or dimension.

    Raises
    ------
    ParameterError
        Naming the spec's mixes, their bounds and the range of the data.
    """
    frames = []
    for ds in datasets if isinstance(datasets, (list, tuple)) else [datasets]:
        frame = getattr(ds, "frame", None)
        if getattr(ds, "kind", None) == "requests" and frame is not None and frame.height:
            frames.append(frame.select(*DIMENSIONS[:2], "cached_tokens"))
    if not frames or spec.names() == [ALL]:
        return []
    data = pl.concat(frames)
    counts = spec.assign(data).group_by("mix").len()
    held = dict(counts.iter_rows())
    empty = [m.name for m in spec.mixes if not held.get(m.name)]
    if len(empty) == len(spec.mixes):
        ranges = data.select(
            *(pl.concat_str(pl.col(d).min().cast(pl.String), pl.lit("–"), pl.col(d).max().cast(pl.String))
              .fill_null("none").alias(d) for d in DIMENSIONS[:2])
        ).row(0, named=True)
        desc = "; ".join(f"{m.name!r} ({m.describe()})" for m in spec.mixes[:10])
        raise ParameterError(
            f"the mix spec matches none of the {data.height:,} requests: every one would fall into {OTHER!r}. "
            f"Mixes: {desc}. The data has input_tokens {ranges['input_tokens']} and output_tokens "
            f"{ranges['output_tokens']}; expected bounds that hold some requests (tokens, not thousands of tokens?)"
        )
    return empty
