"""Every ``dict[str, Any]`` / ``dict[str, object]`` in ``bearing_lib`` sits where docs/interfaces.md says a document
crosses the library's edge (its "JSON edges" tables), and every row there still names one: the allow-list is the
doc itself. The scan reads the source (``ast`` for the scopes, the annotation text by line), not bearing's code."""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "bearing_lib"
DOC = ROOT / "docs" / "interfaces.md"
PATTERN = re.compile(r"dict\[str, (Any|object)\]")
KINDS = {"json", "json-in", "vega", "export", "params", "rows", "foreign", "debt"}
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| ([a-z-]+) \| (.+) \|$")


def _scopes(path: Path) -> list[tuple[int, str]]:
    """(line, innermost function or class qualname, or ``<module>``) of each matching line."""
    src = path.read_text(encoding="utf-8")
    spans: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{ch.name}" if prefix else ch.name
                start = min([ch.lineno, *(d.lineno for d in ch.decorator_list)])
                spans.append((start, ch.end_lineno or ch.lineno, name))
                walk(ch, name)
            else:
                walk(ch, prefix)

    walk(ast.parse(src), "")
    out = []
    for i, line in enumerate(src.splitlines(), 1):
        if PATTERN.search(line):
            inner = [s for s in spans if s[0] <= i <= s[1]]
            out.append((i, max(inner)[2] if inner else "<module>"))
    return out


@functools.cache
def found() -> dict[tuple[str, str], list[str]]:
    """(module, scope) -> the places (path:line) of every annotation in the package."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        mod = ".".join(path.relative_to(LIB).with_suffix("").parts)
        for line, scope in _scopes(path):
            out.setdefault((mod, scope), []).append(f"{path.relative_to(ROOT)}:{line}")
    return out


def listed() -> list[tuple[str, str, str, str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("<!-- json-edges:begin -->"):text.index("<!-- json-edges:end -->")]
    rows = []
    for line in block.splitlines():
        if line.startswith("| `"):
            m = ROW.match(line.strip())
            assert m, f"docs/interfaces.md JSON-edges row not understood: {line!r}"
            rows.append(m.groups())
    return rows


def _covers(row: tuple[str, str, str, str], key: tuple[str, str]) -> bool:
    return fnmatch.fnmatchcase(key[0], row[0]) and fnmatch.fnmatchcase(key[1], row[1])


def test_the_scan_finds_what_a_plain_grep_finds():
    """The scope scan misses no line: its count equals a line-by-line regex count over the same files."""
    n_grep = sum(1 for p in LIB.rglob("*.py") for line in p.read_text(encoding="utf-8").splitlines()
                 if PATTERN.search(line))
    assert sum(len(v) for v in found().values()) == n_grep > 0


def test_every_dict_annotation_is_at_a_listed_edge():
    rows = listed()
    missing = {k: v for k, v in found().items() if not any(_covers(r, k) for r in rows)}
    assert not missing, (
        "dict[str, Any] / dict[str, object] outside the JSON edges listed in docs/interfaces.md (type it, or, "
        "if it is an edge, add a row `| `module` | `scope` | kind | document |`):\n"
        + "\n".join(f"  {m} {s}: {', '.join(v)}" for (m, s), v in sorted(missing.items())))


def test_every_listed_edge_still_exists_and_has_a_known_kind():
    rows = listed()
    keys = list(found())
    stale = [r for r in rows if not any(_covers(r, k) for k in keys)]
    assert not stale, f"docs/interfaces.md lists JSON edges that are no longer there: {stale}"
    assert {r[2] for r in rows} <= KINDS
    dup = {(r[0], r[1]) for r in rows if sum(1 for q in rows if (q[0], q[1]) == (r[0], r[1])) > 1}
    assert not dup, f"listed twice: {sorted(dup)}"
