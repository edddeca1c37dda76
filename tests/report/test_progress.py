"""Progress bars only on a terminal: the runner passes papermill's progress_bar from
``sys.stdout.isatty()`` (here with papermill replaced by a fake that writes the outputs)."""

from __future__ import annotations

import io
import json
import sys

import papermill

from bearing_lib.app import runner
from tests.factories import summary_doc
from tests.report.conftest import HAND_MADE

NB = HAND_MADE / "notebooks" / "weekly_report.ipynb"


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fake(calls):
    def execute(inp, out, parameters, progress_bar, **kwargs):
        calls.append(progress_bar)
        d = parameters["output_dir"]
        open(f"{d}/report.html", "w").write("<html></html>")
        open(f"{d}/summary.json", "w").write(json.dumps(summary_doc("a", verdict="green")))
        open(out, "w").write("{}")
    return execute


def test_progress_bar_follows_stdout_tty(tmp_path, monkeypatch):
    calls: list[bool] = []
    monkeypatch.setattr(papermill, "execute_notebook", _fake(calls))
    given = {"limits_json": str(HAND_MADE / "limits.json"), "plan_json": str(HAND_MADE / "plan.json")}
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    runner.run_report([runner.NotebookStep(NB)], name="a", reports_dir=tmp_path, given=given)
    monkeypatch.setattr(sys, "stdout", _TTY())
    runner.run_report([runner.NotebookStep(NB)], name="b", reports_dir=tmp_path, given=given)
    assert calls == [False, True]
