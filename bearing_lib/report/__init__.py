"""The capacity report: a typed model (``model``), charts (``charts``), one offline HTML
file plus its ``summary.json`` twin (``render``), the notebook runner (``runner``) and the
reports index (``index``)."""

from bearing_lib.report.model import ReportModel, build_report, make_provenance
from bearing_lib.report.render import render_html, write_report
from bearing_lib.unavailable import Unavailable

__all__ = ["ReportModel", "Unavailable", "build_report", "make_provenance", "render_html", "write_report"]
