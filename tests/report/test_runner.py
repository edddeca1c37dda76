"""The notebook runner: parameters checked before any kernel starts, atomic publishing,
failed runs keep their executed copy and name the failing cell.

The notebook run here is the test stand-in tests/fixtures/report/notebooks/weekly_report.ipynb,
which builds the report from the HAND-MADE contract documents (see that folder's README).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import nbformat
import pytest

from bearing_lib.app import runner
from bearing_lib.common.errors import ParameterError
from tests.factories import summary_doc
from tests.report.conftest import HAND_MADE

NB = HAND_MADE / "notebooks" / "weekly_report.ipynb"
REAL = Path(__file__).resolve().parents[2] / "notebooks"


def _given(**extra):
    return {"limits_json": str(HAND_MADE / "limits.json"), "plan_json": str(HAND_MADE / "plan.json"), **extra}


@pytest.fixture
def no_kernel(monkeypatch):
    """Fail the test if anything tries to execute a notebook."""
    import papermill

    def boom(*a, **k):
        raise AssertionError("a notebook was executed")

    monkeypatch.setattr(papermill, "execute_notebook", boom)


def test_declared_parameters_come_from_the_parameters_cell():
    params = runner.notebook_parameters(REAL / "weekly_report.ipynb")
    assert params["limits_json"].required and params["production_trace"].required
    assert not params["tier"].required
    assert params["target_quantile"].type_name == "float" and params["target_quantile"].default == "0.99"
    assert params["growth"].help == "growth factor applied to the target load"


def test_unknown_parameter_refused_before_execution(tmp_path, no_kernel):
    msg = r"unknown parameter\(s\) 'tire'; accepted: weekly_report.ipynb: fail, limits_json"
    with pytest.raises(ParameterError, match=msg):
        runner.run_report([runner.NotebookStep(NB)], name="w", reports_dir=tmp_path, given=_given(tire="critical"))
    assert list(tmp_path.iterdir()) == []


def test_missing_required_parameter_refused_before_execution(tmp_path, no_kernel):
    with pytest.raises(ParameterError, match="missing required parameter.*plan_json"):
        runner.run_report([runner.NotebookStep(NB)], name="w", reports_dir=tmp_path,
                          given={"limits_json": str(HAND_MADE / "limits.json")})
    assert list(tmp_path.iterdir()) == []


def test_values_are_converted_to_the_declared_type(no_kernel):
    steps = runner.check_parameters([runner.NotebookStep(REAL / "weekly_report.ipynb")],
                                    {"limits_json": "l.json", "production_trace": "t.csv", "growth": "1.25",
                                     "gpu_count": "4"})
    assert steps[0].parameters["growth"] == 1.25 and steps[0].parameters["gpu_count"] == 4
    with pytest.raises(ParameterError, match="parameter 'growth' .*expected float, got 'fast'"):
        runner.check_parameters([runner.NotebookStep(REAL / "weekly_report.ipynb")],
                                {"limits_json": "l", "production_trace": "t", "growth": "fast"})
    p = runner.Param("fail", "bool", "False", "")
    assert runner.convert("yes", p) is True and runner.convert("0", p) is False
    with pytest.raises(ParameterError):
        runner.convert("maybe", p)


def test_output_dir_and_bad_names_refused(tmp_path, no_kernel):
    with pytest.raises(ParameterError, match="output_dir"):
        runner.run_report([runner.NotebookStep(NB)], name="w", reports_dir=tmp_path, given=_given(output_dir="/tmp"))
    for bad in ("../escape", ".hidden", "a/b", "x.failed-1", ""):
        with pytest.raises(ParameterError):
            runner.validate_name(bad)


def test_successful_run_is_published_atomically_and_indexed(tmp_path):
    res = runner.run_report([runner.NotebookStep(NB)], name="2026-W48", reports_dir=tmp_path,
                            given=_given(week="2026-W48"), progress=False)
    d = tmp_path / "2026-W48"
    assert res.directory == d and res.verdict == "yellow"
    assert sorted(p.name for p in d.iterdir()) == ["report.html", "summary.json", "weekly_report.ipynb"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and p.is_dir()]  # no temporary folder left
    # the lock file stays (never removed: see runner._acquire_lock) but is released and empty
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [".index.lock", ".lock-2026-W48"]
    assert (tmp_path / ".lock-2026-W48").read_text() == ""
    summary = json.loads((d / "summary.json").read_text())
    assert summary["name"] == "2026-W48" and summary["verdict"] == "yellow"
    executed = nbformat.read(d / "weekly_report.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "2026-W48" in injected[0].source
    # output_dir set by the runner: the temporary folder that was then renamed to 2026-W48
    assert f'output_dir = "{tmp_path.resolve()}/.tmp-2026-W48-' in injected[0].source
    assert (tmp_path / "index.html").is_file()
    assert res.exit_code(weekly=True) == runner.EXIT_OK

    # an existing report is never replaced without force; nothing runs
    with pytest.raises(runner.ReportExists):
        runner.run_report([runner.NotebookStep(NB)], name="2026-W48", reports_dir=tmp_path, given=_given())


def test_failed_notebook_keeps_executed_copy_and_names_the_cell(tmp_path):
    with pytest.raises(runner.RunFailed) as err:
        runner.run_report([runner.NotebookStep(NB)], name="2026-W49", reports_dir=tmp_path, given=_given(fail="true"),
                          progress=False)
    exc = err.value
    msg = str(exc)
    # source cells: 0 markdown, 1 parameters, 2 imports, 3 the assert -> "cell 4" counting from 1
    assert "weekly_report.ipynb failed in cell 4 of the notebook (execution count 4, 'assert not fail" in msg
    assert "assert not fail" in msg and "failing on purpose" in msg
    assert not (tmp_path / "2026-W49").exists()
    failed = [p for p in tmp_path.iterdir() if p.name.startswith("2026-W49.failed-")]
    assert len(failed) == 1 and exc.executed_copy == failed[0] / "weekly_report.ipynb"
    nb = nbformat.read(exc.executed_copy, as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "AssertionError"
    assert nb.cells[exc.cell_index].source.startswith('assert not fail')


def test_iso_weeks():
    assert runner.iso_week(today=dt.date(2026, 11, 29)) == "2026-W47"  # Sunday of W48: last complete is W47
    assert runner.iso_week(today=dt.date(2027, 1, 4)) == "2026-W53"  # 2026 has 53 ISO weeks
    assert runner.iso_week("2026-W48") == "2026-W48"
    for bad in ("2026-48", "2026-W54", "2025-W53", "W48"):
        with pytest.raises(ParameterError):
            runner.iso_week(bad)
    lo, hi = runner.week_bounds("2026-W48")
    assert lo == dt.datetime(2026, 11, 23, tzinfo=dt.UTC) and hi == dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


def test_previous_summary_is_the_newest_other_report(tmp_path):
    for name, t in (("2026-W46", "2026-11-16T06:00:00Z"), ("2026-W47", "2026-11-23T06:00:00Z"),
                    ("2026-W48", "2026-11-30T06:00:00Z")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary_doc(name, run_time_utc=t)))
    (tmp_path / "2026-W47.failed-20261123T060000Z").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "summary.json").write_text("{not json")
    assert runner.previous_summary(tmp_path, exclude="2026-W48") == tmp_path / "2026-W47" / "summary.json"
    assert runner.previous_summary(tmp_path, exclude="2026-W49") == tmp_path / "2026-W48" / "summary.json"
    assert runner.previous_summary(tmp_path / "none", exclude="x") is None
    (tmp_path / "adhoc").mkdir()
    adhoc = summary_doc("adhoc", run_time_utc="2026-12-01T00:00:00Z")
    (tmp_path / "adhoc" / "summary.json").write_text(json.dumps(adhoc))
    assert runner.previous_summary(tmp_path, exclude="x") == tmp_path / "adhoc" / "summary.json"
    # a summary of another schema (an older bearing) is not a candidate: it cannot be compared
    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "summary.json").write_text(json.dumps(
        {**summary_doc("older", run_time_utc="2026-12-02T00:00:00Z"), "schema": "bearing.report.summary/1"}))
    assert runner.previous_summary(tmp_path, exclude="x") == tmp_path / "adhoc" / "summary.json"
    # a weekly run compares with the latest earlier week only
    assert runner.previous_summary(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W47" / "summary.json"
    assert runner.previous_summary(tmp_path, exclude="2026-W46", before_week="2026-W46") is None
