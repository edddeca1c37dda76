"""The capacity report: a typed model (``model``), charts (``charts``), one offline HTML
file plus its ``summary.json`` twin (``render``), the notebook runner (``runner``) and the
reports index (``index``)."""

from bearing_lib.common.unavailable import Unavailable
from bearing_lib.report.model import ReportModel, build_report, make_provenance
from bearing_lib.report.render import render_html, write_report

__all__ = ["ReportModel", "Unavailable", "build_report", "make_provenance", "render_html", "write_report"]
