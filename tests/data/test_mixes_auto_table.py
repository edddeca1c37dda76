"""``auto_mixes`` counts its boxes from one table of bin combinations (``data/mixes.py``); the reference here
filters the requests box by box with polars and bins them with numpy, as the function did before, and both must
choose the same mixes on any input (nulls, failed requests with and without a requested length, NaN-free
ratios, ties on the edges)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.data.mixes import (
    AUTO_EDGES,
    DIMENSIONS,
    Mix,
    MixSpec,
    _merge_bins,
    _short,
    auto_mixes,
    cache_hit_ratio_expr,
    mix_output_expr,
)


def _reference(frame: pl.DataFrame, min_share: float = 0.1, max_bins_per_dim: int = 3) -> MixSpec:
    cols = frame.columns
    exprs = []
    for dim in DIMENSIONS:
        if dim == "cache_hit_ratio":
            has = "cached_tokens" in cols and "input_tokens" in cols
            exprs.append((cache_hit_ratio_expr() if has else pl.lit(None, pl.Float64)).alias(dim))
        elif dim == "output_tokens" and dim in cols:
            exprs.append(mix_output_expr(cols)[0].alias(dim))
        else:
            exprs.append((pl.col(dim).cast(pl.Float64) if dim in cols else pl.lit(None, pl.Float64)).alias(dim))
    data = frame.select(exprs)
    total = data.height
    need = min_share * total
    boxes: list[dict[str, tuple[float, float]]] = [{}]
    for dim in DIMENSIONS:
        col = data[dim]
        if col.null_count() == total or (dim == "cache_hit_ratio" and "cached_tokens" in cols
                                         and data.select(pl.col(dim).max()).item() == 0):
            continue
        cuts = list(AUTO_EDGES[dim])
        new_boxes = []
        for box in boxes:
            mask = Mix("_", box).expr() if box else pl.lit(True)
            vals = data.filter(mask)[dim].drop_nulls().to_numpy()
            counts = np.bincount(np.searchsorted(np.asarray(cuts), vals, side="right"), minlength=len(cuts) + 1)
            kept = _merge_bins(counts.tolist(), cuts, need, max_bins_per_dim)
            edges = [-math.inf, *kept, math.inf]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True):
                nb = dict(box)
                if len(edges) > 2:
                    nb[dim] = (lo, hi)
                new_boxes.append(nb)
        boxes = new_boxes
    if boxes == [{}]:
        return MixSpec.single()
    return MixSpec(tuple(Mix("/".join(_short(d, *b[d]) for d in DIMENSIONS if d in b), b) for b in boxes))


_EDGE_VALUES = sorted({int(v) for d in ("input_tokens", "output_tokens") for v in AUTO_EDGES[d]})
_tokens = st.one_of(st.none(), st.integers(0, 40_000), st.sampled_from(_EDGE_VALUES))


@settings(max_examples=120, deadline=None)
@given(rows=st.lists(st.tuples(_tokens, _tokens, _tokens, _tokens, st.sampled_from(["ok", "ok", "error", None])),
                     min_size=1, max_size=300),
       min_share=st.sampled_from([0.05, 0.1, 0.25, 0.5]), with_cache=st.booleans(), with_req=st.booleans())
def test_the_table_chooses_the_mixes_filtering_box_by_box_chooses(rows, min_share, with_cache, with_req):
    inp, out, cached, req, status = (list(c) for c in zip(*rows, strict=True))
    data = {"input_tokens": inp, "output_tokens": out, "status": status}
    if with_cache:
        data["cached_tokens"] = [None if c is None or i is None else min(c, i) for c, i in zip(cached, inp,
                                                                                              strict=True)]
    if with_req:
        data["requested_output_tokens"] = req
    frame = pl.DataFrame(data, schema_overrides={k: pl.Int64 for k in data if k != "status"})
    assert auto_mixes(frame, min_share) == _reference(frame, min_share)


def test_a_real_shaped_table_by_hand():
    """40 short chat requests, 40 long RAG ones, 20 in between: three input bins at min_share 0.1, each output
    bin kept whole (one output length each)."""
    frame = pl.DataFrame({"input_tokens": [300] * 40 + [6000] * 40 + [2000] * 20,
                          "output_tokens": [150] * 40 + [300] * 40 + [100] * 20})
    spec = auto_mixes(frame)
    assert spec == _reference(frame)
    assert len(spec.mixes) == 3
    sizes = [frame.filter(m.expr(frame.columns)).height for m in spec.mixes]
    assert sizes == [40, 20, 40]
