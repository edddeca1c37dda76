"""The report's "Which deployment should we run?" section (``docs/compare.md``, "In the report").

``bearing report --compare PATH`` (repeatable; the notebook parameter ``compare``, a list) gives
the report the deployments to compare:

* **load tests or limits JSON files** (``NAME=PATH`` names one): compared here with
  :func:`bearing_lib.compare.compare` under **the report's SLA** (the limits' own), with **the
  report's production profile** (the fleet that carries its target) and **its tier** (the design
  FOS). The report's own load test, when it is one of them, takes the report's limits (same files, one mix per
  run) rather than a second fit. Identity comes from the files and folder names; what they do not say (GPU counts,
  prices, labels) is given by running ``bearing compare`` yourself and passing its JSON;
* **one comparison JSON** (``bearing compare --json``, schema ``bearing.compare/1``): shown as it
  is, validated once; a note says when its SLA differs from the report's.

:func:`compare_section` returns the :class:`CompareSection` the report model carries as
``compare.data`` (:func:`~bearing_lib.report.model.build_report` wraps it; an
:class:`Unavailable` says why there is none, None: no deployments were given). It is the
``data`` of the ``compare`` block of ``summary.json`` (:meth:`CompareSection.to_dict`, read back
by :meth:`CompareSection.from_dict` from :class:`bearing_lib.report.summary.ReportSummary`).
:func:`pareto_spec` gives the Pareto chart's spec (``chart-compare``, drawn by
:func:`bearing_lib.report.charts.report_charts`); the template is
``templates/compare_section.html.j2``. This module imports neither the model nor the charts
(the report wing has no import cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.compare.result import SCHEMA as COMPARE_SCHEMA
from bearing_lib.compare.result import Comparison

CHART_ID = "chart-compare"
CHART_TITLE = "Throughput per GPU vs per user under the SLA"
HOW_TO_COMPARE = ("give the deployments with bearing report --compare PATH (repeatable; NAME=PATH names one): load "
                  "tests or limits JSON files compared under the report's SLA, or one comparison JSON from bearing "
                  "compare --json")


@dataclass
class CompareSection:
    """The comparison and where it came from (``model.compare.data``; the ``compare`` block's ``data``)."""

    comparison: Comparison
    source: str
    """How the comparison was made: fitted in this report (under which SLA, profile and tier) or read from a file."""
    inputs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the reader must know beside the comparison's own notes (e.g. its SLA is not the report's)."""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "inputs": list(self.inputs), "notes": list(self.notes),
                "comparison": self.comparison.to_dict()}

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "summary.json compare.data") -> CompareSection:
        """Validate the block once; one :class:`SchemaError` names every problem with its path."""
        if not isinstance(doc, dict):
            raise SchemaError(f"{source}: expected an object with source, inputs, notes, comparison "
                              f"(found {doc!r:.60})")
        problems = []
        if not isinstance(doc.get("source"), str):
            problems.append(f"{source}.source: expected text (found {doc.get('source')!r:.60})")
        for key in ("inputs", "notes"):
            v = doc.get(key)
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                problems.append(f"{source}.{key}: expected a list of text (found {v!r:.60})")
        comparison = None
        try:
            comparison = Comparison.from_dict(doc.get("comparison"), source=f"{source}.comparison")
        except SchemaError as exc:
            problems.append(str(exc).replace("\n", " "))
        if problems or comparison is None:
            raise SchemaError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
        return cls(comparison=comparison, source=doc["source"], inputs=list(doc["inputs"]), notes=list(doc["notes"]))


def _available(doc: Any) -> Any:
    """The document, or None when it is an ``Unavailable`` / ``{"available": false}`` stand-in."""
    if doc is None or isinstance(doc, Unavailable):
        return None
    if isinstance(doc, dict) and doc.get("available") is False:
        return None
    return doc


def _comparison_json(path: Path) -> dict | None:
    """The document when ``path`` is a comparison JSON (``bearing compare --json``), else None."""
    if not (path.is_file() and path.suffix == ".json"):
        return None
    from bearing_lib.common.files import read_json

    doc = read_json(path, "comparison, limits or load-test JSON")
    return doc if isinstance(doc, dict) and doc.get("schema") == COMPARE_SCHEMA else None


def _resolved(item: str) -> str:
    """``[NAME=]PATH`` with PATH as the pipeline reads every input: as given when it exists, else under the
    project root (:func:`bearing_lib.report.paths.resolve`)."""
    from bearing_lib.report.paths import resolve

    if Path(item).exists():
        return item
    name, sep, rest = item.partition("=")
    if sep and name and "/" not in name:
        return f"{name}={resolve(rest)}"
    return str(resolve(item))


def _path_of(item: str) -> Path:
    name, sep, rest = item.partition("=")
    return Path(rest) if sep and name and "/" not in name and Path(rest).exists() else Path(item)


def compare_section(
    inputs: Sequence[str],
    *,
    limits_doc: Any = None,
    profile_doc: Any = None,
    tier: str = "standard",
    n_boot: int = 200,
    seed: int = 0,
) -> CompareSection | Unavailable | None:
    """The section (module docstring); None when ``inputs`` is empty (not asked for).

    A missing or unreadable input raises :class:`ParameterError` naming it (the report stops with
    exit 1, bad input); a comparison that cannot rank says why in its answer.
    """
    from bearing_lib.compare import compare

    items = [_resolved(str(i)) for i in inputs if str(i).strip()]
    if not items:
        return None
    for item in items:
        if not _path_of(item).exists():
            raise ParameterError(f"compare: {item}: no such file or folder (expected a load test, a limits JSON or "
                                 "a comparison JSON from bearing compare --json)")
    from bearing_lib.limits.result import LimitsResult

    limits = LimitsResult.coerce(limits_doc, source="limits JSON")
    report_sla = limits.sla_text if limits is not None else None
    docs = [(item, _comparison_json(_path_of(item))) for item in items]
    given = [item for item, d in docs if d is not None]
    notes: list[str] = []
    if given:
        if len(items) > 1:
            raise ParameterError(f"compare: {given[0]} is a comparison JSON; give it alone, or give the load tests "
                                 "and limits JSON files to compare (not both)")
        c = Comparison.from_dict(docs[0][1], source=items[0])
        slas = sorted({d.sla for d in c.deployments})
        if report_sla is not None and slas != [report_sla]:
            notes.append(f"the comparison was made under {' / '.join(repr(s) for s in slas)}, not the report's SLA "
                         f"({report_sla!r}): its limits are not this report's")
        source = f"comparison JSON {items[0]} (bearing compare --json), shown as it is"
    else:
        profile = _available(profile_doc)
        if profile is None:
            notes.append("no production profile: no fleet for the production peak (the report's production section "
                         "says why)")
        # the report's limits' estimator, so that a load test compared here is fitted with the estimator the report's
        # own limits came from (one mix, n_boot resamples, no earlier shape: the deployments are not this one)
        from bearing_lib.limits.result import DEFAULT_ESTIMATOR, ESTIMATORS, UNRECORDED_ESTIMATOR

        estimator = DEFAULT_ESTIMATOR if limits is None else limits.conditions.estimator or UNRECORDED_ESTIMATOR
        if estimator not in ESTIMATORS:
            notes.append(f"the report's limits name an estimator bearing does not know ({estimator!r}): the load "
                         f"tests compared here are fitted with the default estimator ({DEFAULT_ESTIMATOR})")
            estimator = DEFAULT_ESTIMATOR
        # the report's own load test, when compared, takes the report's limits (same files, SLA, one mix per run) rather
        # than a second fit with fewer resamples and no earlier shape that may read a little differently
        c = compare(items, sla=report_sla, profile=profile, tier=tier, n_boot=n_boot, seed=seed, estimator=estimator,
                    own=limits)
        source = (f"{len(c.deployments)} deployment(s) fitted in this report under the report's SLA "
                  f"({report_sla or 'none: limits JSON inputs carry their own'})"
                  + (f" with its estimator ({estimator})" if limits is not None
                     and limits.conditions.estimator in ESTIMATORS else "")
                  + (f", the production profile's target and the {tier} tier" if profile is not None else ""))
    if len(c.deployments) < 2:
        return Unavailable(f"a comparison needs two deployments or more; the inputs gave {len(c.deployments)} "
                           f"({', '.join(d.name for d in c.deployments)})")
    return CompareSection(comparison=c, source=source, inputs=items, notes=notes)


def pareto_spec(data: CompareSection | None) -> tuple[dict[str, Any], int] | None:
    """The Pareto chart's Vega-Lite spec and its number of steps, or None without points to draw."""
    from bearing_lib.compare.chart import chart_rows, pareto_chart

    if data is None:
        return None
    steps, limits = chart_rows(data.comparison)
    if not steps and not limits:
        return None
    return pareto_chart(data.comparison).to_dict(), len(steps)


__all__ = ["CHART_ID", "CHART_TITLE", "HOW_TO_COMPARE", "CompareSection", "compare_section", "pareto_spec"]
