"""``reports/index.json``: the index's typed entries written beside ``index.html``, read back once.

Truth: the summaries written here by hand (``summary_doc``) and the folder names; ``index.json`` is read
with ``json`` directly, not through bearing."""

from __future__ import annotations

import json

import pytest

from bearing_lib.app import runner
from bearing_lib.app.index import INDEX_SCHEMA, FailedRun, ReportEntry, ReportsIndex, collect, write_index
from bearing_lib.common.errors import ParameterError, SchemaError
from tests.factories import summary_doc


def _reports(tmp_path):
    for name, t, verdict in (("2026-W47", "2026-11-23T06:00:00Z", "green"), ("2026-W48", "2026-11-30T06:00:00Z",
                                                                             "red")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.html").write_text("x")
        (tmp_path / name / "summary.json").write_text(json.dumps(summary_doc(name, verdict=verdict,
                                                                             headline=f"{name} said",
                                                                             run_time_utc=t)))
    (tmp_path / "x.failed-20261201T080000Z").mkdir()
    (tmp_path / "x.failed-20261201T080000Z" / "weekly_report.ipynb").write_text("{}")
    return tmp_path


def test_index_json_holds_the_entries_the_page_lists(tmp_path):
    write_index(_reports(tmp_path))
    raw = json.loads((tmp_path / "index.json").read_text())
    assert raw["schema"] == INDEX_SCHEMA
    assert raw["reports"] == [
        {"name": "2026-W48", "has_html": True, "verdict": "red", "headline": "2026-W48 said",
         "run_time_utc": "2026-11-30T06:00:00Z", "problem": None},
        {"name": "2026-W47", "has_html": True, "verdict": "green", "headline": "2026-W47 said",
         "run_time_utc": "2026-11-23T06:00:00Z", "problem": None}]
    assert raw["failed"] == [{"name": "x.failed-20261201T080000Z", "report": "x", "stamp": "20261201T080000Z",
                              "earlier": 0, "files": ["weekly_report.ipynb"]}]
    back = ReportsIndex.read(tmp_path / "index.json")
    assert back == collect(tmp_path)
    assert back.reports[0] == ReportEntry("2026-W48", True, "red", "2026-W48 said", "2026-11-30T06:00:00Z")
    assert back.failed == [FailedRun("x.failed-20261201T080000Z", "x", "20261201T080000Z", 0, ["weekly_report.ipynb"])]
    html = (tmp_path / "index.html").read_text()
    assert "2026-W48 said" in html and "x.failed-20261201T080000Z: weekly_report.ipynb" in html


def test_a_bad_index_json_is_named_by_field_and_another_document_refused(tmp_path):
    doc = {"schema": INDEX_SCHEMA, "reports": [{"name": "w", "has_html": "sometimes", "verdict": "red",
                                                "headline": "", "run_time_utc": ""}], "failed": []}
    with pytest.raises(SchemaError) as exc:
        ReportsIndex.from_dict(doc, source="reports index i.json")
    assert [p.field for p in exc.value.problems] == ["reports.0.has_html"]
    with pytest.raises(SchemaError, match="not a bearing reports_index document"):
        ReportsIndex.from_dict({"hello": [1, 2, 3]})
    with pytest.raises(ParameterError, match="not index.html or index.json"):
        runner.validate_name("index.json")
