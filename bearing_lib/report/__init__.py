"""The capacity report: a typed model with one dataclass per section (``model``), its
``summary.json`` reader (``summary``), curated views (``views``), charts (``charts``) and one
offline HTML file plus its ``summary.json`` twin (``render``). Running the notebooks, the
runner and the reports index are the application's (:mod:`bearing_lib.app`), above this wing.

Names are imported on first use (PEP 562), so ``bearing report --help`` does not pay for
altair and vl-convert, which only rendering needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bearing_lib.common.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.common.unavailable import Unavailable
    from bearing_lib.report.model import ReportModel, build_report, make_provenance
    from bearing_lib.report.render import render_html, write_report

_WHERE = {
    "ReportModel": "bearing_lib.report.model",
    "Unavailable": "bearing_lib.common.unavailable",
    "build_report": "bearing_lib.report.model",
    "make_provenance": "bearing_lib.report.model",
    "render_html": "bearing_lib.report.render",
    "write_report": "bearing_lib.report.render",
}

__all__ = ["ReportModel", "Unavailable", "build_report", "make_provenance", "render_html", "write_report"]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
