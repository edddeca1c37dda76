"""Tenants: per-tenant peaks of a production trace and quotas that share the fleet's allowable capacity.

``bearing plan --trace T --tenant-column NAME``: the canonical trace has no tenant column, so the
column is read from the file the trace was loaded from and joined on ``source_row`` (the 1-based
line of a CSV or JSON-lines file, the header being line 1; the 1-based row of a Parquet file).

* **Peak** of a tenant = the P99 (linear interpolation) of its requests per 60 s over every minute
  of the trace (minutes without its requests count as 0), / 60, in req/s.
* **Capacity** shared = the fleet's allowable capacity ``instances × per-instance allowable`` at the
  design FOS, with ``instances`` = ``failure_domains.total`` when failure domains are given, else
  ``instances.total``.
* **Quotas: max-min fair share by peak** (water-filling): tenants in increasing order of peak; each
  gets ``min(its peak, remaining capacity / tenants left)``. A tenant whose peak fits is given its
  peak; the capacity the small tenants leave is shared equally among the larger ones, none getting
  more than its peak. The quotas sum to at most the capacity (exactly the capacity when the peaks
  exceed it); what is left when all peaks fit is ``unallocated_rps``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import InputError, InsufficientDataError, ParameterError
from bearing_lib.plan.jsonform import STRICT

RULE = ("max-min fair share by peak (water-filling): tenants in increasing order of their P99 60 s peak each get "
        "min(peak, remaining capacity / tenants left)")


@dataclass
class TenantQuota:
    """One tenant: its requests, P99 60 s peak, share of the capacity, and quota (req/s)."""

    __pydantic_config__ = STRICT
    tenant: str
    requests: int
    peak_rps: float
    share_of_capacity: float
    quota_rps: float
    capped: bool


@dataclass
class Tenants:
    """The plan's ``tenants`` section (with ``--tenant-column``)."""

    __pydantic_config__ = STRICT
    column: str
    capacity_rps: float
    capacity_basis: str
    n_minutes: int
    peak_statistic: str
    rule: str
    tenants: list[TenantQuota]
    sum_of_peaks_rps: float
    sum_of_quotas_rps: float
    unallocated_rps: float
    statement: str


def max_min_fair(demands: dict[str, float], capacity: float) -> dict[str, float]:
    """Water-filling: each demand gets ``min(demand, remaining / left)`` in increasing order of demand.

    >>> max_min_fair({"a": 1.0, "b": 4.0, "c": 10.0}, 9.0)
    {'a': 1.0, 'b': 4.0, 'c': 4.0}
    """
    if capacity < 0:
        raise ParameterError(f"capacity must be >= 0 (got {capacity})")
    out: dict[str, float] = {}
    left, remaining = len(demands), capacity
    for name, d in sorted(demands.items(), key=lambda kv: (kv[1], kv[0])):
        q = min(max(d, 0.0), remaining / left)
        out[name] = q
        remaining -= q
        left -= 1
    return {k: out[k] for k in demands}


def tenant_labels(trace: Any, column: str) -> list[str | None]:
    """The ``column`` of the file ``trace`` was loaded from, one value per row of ``trace.frame``."""
    import polars as pl

    src = Path(str(trace.provenance.source))
    if not src.is_file():
        raise ParameterError(f"--tenant-column reads the trace's source file; {src} is not a file")
    suffix = "".join(src.suffixes[-2:]).lower()
    try:
        if suffix.endswith((".csv", ".csv.gz")):
            raw, first = pl.read_csv(src, columns=[column], infer_schema_length=0), 2
        elif suffix.endswith((".jsonl", ".ndjson")):
            raw, first = pl.read_ndjson(src).select(pl.col(column).cast(pl.String)), 1
        elif suffix.endswith(".parquet"):
            raw, first = pl.read_parquet(src, columns=[column]), 1
        else:
            raise ParameterError(f"--tenant-column: cannot read a column from {src.name} (CSV, JSON lines or Parquet)")
    except (pl.exceptions.ColumnNotFoundError, pl.exceptions.SchemaFieldNotFoundError) as exc:
        raise InputError(f"the trace has no column {column!r}", path=src) from exc
    if column not in raw.columns:
        raise InputError(f"the trace has no column {column!r}", path=src)
    table = raw.select(pl.col(column).cast(pl.String).alias("tenant")).with_row_index("source_row", offset=first)
    table = table.with_columns(pl.col("source_row").cast(pl.Int64))
    joined = trace.frame.select("source_row").join(table, on="source_row", how="left", maintain_order="left")
    return joined["tenant"].to_list()


def tenant_quotas(starts_s: list[float], labels: list[str | None], capacity_rps: float, *, column: str,
                  capacity_basis: str, quantile: float = 0.99) -> Tenants:
    """Per-tenant P99 60 s peaks and their max-min fair quotas of ``capacity_rps`` (module docstring)."""
    import numpy as np

    from bearing_lib.common.quantiles import quantile as q_of

    if len(starts_s) != len(labels):
        raise ParameterError("tenant quotas: starts and labels differ in length")
    if not starts_s:
        raise InsufficientDataError("the trace has no requests: no tenant peaks")
    t = np.asarray(starts_s, dtype=float)
    minute = np.floor((t - t.min()) / 60.0).astype(np.int64)
    n_min = int(minute.max()) + 1
    names = ["(none)" if v is None or v == "" else str(v) for v in labels]
    peaks: dict[str, float] = {}
    counts: dict[str, int] = {}
    arr = np.asarray(names, dtype=object)
    for name in sorted(set(names)):
        m = minute[arr == name]
        per_min = np.bincount(m, minlength=n_min).astype(float)
        peaks[name] = float(q_of(per_min, quantile)) / 60.0
        counts[name] = int(m.size)
    quotas = max_min_fair(peaks, capacity_rps)
    rows = [TenantQuota(n, counts[n], peaks[n], peaks[n] / capacity_rps if capacity_rps > 0 else math.inf,
                        quotas[n], quotas[n] < peaks[n] - 1e-12)
            for n in sorted(peaks, key=lambda k: -peaks[k])]
    sp, sq = sum(peaks.values()), sum(quotas.values())
    capped = [r.tenant for r in rows if r.capped]
    statement = (f"{len(rows)} tenant(s) by {column!r}: P{quantile * 100:g} 60 s peaks sum to {sp:,.4g} req/s against "
                 f"the allowable {capacity_rps:,.4g} req/s; quotas sum to {sq:,.4g} req/s ("
                 + (f"capped by max-min fair share: {', '.join(capped)}" if capped else "every peak fits") + ")")
    return Tenants(column, capacity_rps, capacity_basis, n_min, f"P{quantile * 100:g} of the tenant's requests per "
                   "60 s over every minute of the trace, / 60", RULE, rows, sp, sq, max(0.0, capacity_rps - sq),
                   statement)


__all__ = ["RULE", "TenantQuota", "Tenants", "max_min_fair", "tenant_labels", "tenant_quotas"]
