"""The report and app wings' shape, read from the source (function-local imports included):
report/ builds and renders the model and imports neither the application (app, cli) nor any module
of its own in a cycle; app/ runs it and has no cycle either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "bearing_lib"


def _imports(wing: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in sorted((LIB / wing).glob("*.py")):
        names = set()
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module:
                names.add(n.module)
                if n.module == f"bearing_lib.{wing}":  # from bearing_lib.report import model
                    names.update(f"bearing_lib.{wing}.{a.name}" for a in n.names)
            elif isinstance(n, ast.Import):
                names.update(a.name for a in n.names)
        out[f.stem] = names
    return out


def _cycle(wing: str) -> str | None:
    graph = {m: {n.split(".")[2] for n in names if n.startswith(f"bearing_lib.{wing}.")}
             for m, names in _imports(wing).items()}
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> str | None:
        if m in path:
            return " -> ".join((*path[path.index(m):], m))
        if m in done:
            return None
        for n in sorted(graph.get(m, ())):
            if (c := visit(n, (*path, m))) is not None:
                return c
        done.add(m)
        return None

    return next((c for m in sorted(graph) if (c := visit(m, ())) is not None), None)


@pytest.mark.parametrize("wing", ["report", "app"])
def test_no_import_cycle_inside_the_wing(wing):
    assert _cycle(wing) is None


def test_report_imports_no_higher_wing():
    higher = ("bearing_lib.app", "bearing_lib.cli")
    bad = {m: sorted(n for n in names if n.startswith(higher)) for m, names in _imports("report").items()}
    assert {m: v for m, v in bad.items() if v} == {}


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    """The checker is not hollow: two modules importing each other (function-locally) are a cycle."""
    wing = tmp_path / "bearing_lib" / "w"
    wing.mkdir(parents=True)
    (wing / "a.py").write_text("def f():\n    from bearing_lib.w.b import g\n")
    (wing / "b.py").write_text("from bearing_lib.w import a\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["LIB"]), "LIB", tmp_path / "bearing_lib")
    assert _cycle("w") == "a -> b -> a"
