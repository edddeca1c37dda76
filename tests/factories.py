"""Shared test factories: small, valid bearing objects built one way (attrs keeps its strategies in
one ``tests/strategies.py`` for the same reason). Import them (``from tests.factories import ...``)
rather than writing the same helper in each test file.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from bearing_lib.common.estimate import Estimate
from bearing_lib.data.provenance import Provenance
from bearing_lib.report.identity import ReportIdentity
from bearing_lib.report.summary import ReportSummary, SummaryLimit


def provenance(source: str = "test", *, format: str = "test", tool: str = "test", sha256: str = "",
               **kw: Any) -> Provenance:
    """A dataset's :class:`Provenance` for data made in a test (no file, empty sha256)."""
    return Provenance(source=source, format=format, tool=tool, sha256=sha256, **kw)


def request_trace(frame: pl.DataFrame | dict[str, Any], *, source: str = "test", time_origin: str = "epoch",
                  validated: bool = True) -> Any:
    """A :class:`RequestTrace` of ``frame`` (a DataFrame or its columns), conformed to the trace schema and,
    with ``validated``, checked as the loaders check it."""
    from bearing_lib.data.trace import RequestTrace, conform, validate

    df = conform(frame if isinstance(frame, pl.DataFrame) else pl.DataFrame(frame))
    prov = provenance(source, time_origin=time_origin)
    return RequestTrace(validate(df, prov) if validated else df, prov)


def leaves(x: object, path: str = ""):
    """Every leaf of a JSON-shaped document as ``(path, value)``: ``.key`` for an object's key, ``[i]`` for a
    list's item (keys sorted), e.g. to compare two documents number by number."""
    if isinstance(x, dict):
        for k in sorted(x):
            yield from leaves(x[k], f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def summary_doc(name: str = "report", *, run_time_utc: str | None = "2026-11-23T06:00:00Z", verdict: str = "green",
                headline: str = "", identity: dict[str, Any] | None = None,
                limits: dict[str, float] | None = None, blended_fos: float | None = None) -> dict[str, Any]:
    """A ``summary.json`` document (the keys :class:`ReportSummary` reads), valid for ``from_dict``.

    ``limits`` maps a mix name to its offered ``Q_ult`` in req/s (achieved = offered, no CI)."""
    return ReportSummary(
        name=name, verdict=verdict, headline=headline, run_time_utc=run_time_utc,
        identity=ReportIdentity.from_dict(identity or {}), limits_available=limits is not None,
        limits=[SummaryLimit(n, Estimate(v, unit="rps", basis="offered"), Estimate(v, unit="rps", basis="achieved"))
                for n, v in (limits or {}).items()],
        blended_fos=Estimate(blended_fos, basis="ratio") if blended_fos is not None else None,
    ).to_dict()


__all__ = ["provenance", "request_trace", "summary_doc"]
