"""Run the bad-input corpus (tests/corpus/cases.py) through the CLI.

Every case: the exit code and the named words, never a traceback, and every input file
byte-identical afterwards (sha256 before and after; no file added to or removed from the
input folder). Outputs go to a separate folder.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from tests.corpus.cases import CASES, Case
from tests.corpus.recipes import write

runner = CliRunner()


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _params() -> list:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_corpus_case(case: Case, tmp_path):
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    out.mkdir()
    paths = write(inputs, case.files())
    before = _tree(inputs)
    result = runner.invoke(app, case.argv(paths, out))
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, text
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == case.code, text
    for word in case.words:
        assert word in text, f"{word!r} not in:\n{text}"
    if case.code == 1:
        assert text.lstrip().startswith("error: ") or "\nerror: " in text, text
    assert _tree(inputs) == before  # no input modified, added or removed


def test_corpus_covers_every_class_and_command():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)
    by_class = Counter(c.klass for c in CASES)
    assert set(by_class) == {"units", "out-of-range values", "CSV/JSON structure", "semantic", "flagged handling"}
    assert all(n >= 5 for n in by_class.values()), by_class
    commands = Counter(c.argv({k: Path(k) for k in c.files()}, Path("out"))[0] for c in CASES)
    assert set(commands) == {"inspect", "limits", "profile", "plan", "report", "weekly"}, commands
