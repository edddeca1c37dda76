"""Paths as a reader of the report sees them: inputs resolved against the project root, and absolute
paths shortened to the report folder, the working directory or the project root (so a report folder
can be moved and its links and provenance still hold)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bearing_lib.common.unavailable import Unavailable

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def resolve(path: str | Path) -> Path:
    """``path`` as given when it exists; else, for a relative path, under the project root.

    So ``data/traces/...`` works from the project root (papermill, the CLI) and from
    ``notebooks/`` (JupyterLab's working directory).
    """
    p = Path(path)
    if p.exists() or p.is_absolute():
        return p
    alt_ = PROJECT_ROOT / p
    return alt_ if alt_.exists() else p


def _roots(output_dir: str | Path = "") -> list[tuple[str, str]]:
    """``(absolute folder, what it is)`` to shorten paths against, most specific first."""
    roots: list[tuple[str, str]] = []
    if str(output_dir):
        roots.append((os.path.abspath(output_dir), "report folder"))
    for folder, what in ((str(PROJECT_ROOT), "project root"), (os.getcwd(), "working directory")):
        folder = os.path.abspath(folder)
        if all(folder != r for r, _ in roots):
            roots.append((folder, what))
    # the deepest folder first: a report folder under the project is named relative to itself
    return sorted(roots, key=lambda r: -len(r[0]))


def portable_path(path: str | Path, output_dir: str | Path = "") -> tuple[str, str]:
    """``path`` for a reader: ``(text, relative_to)``.

    A file in the report's own folder is named relative to it (``limits.json``, so the
    name survives the rename of the temporary run folder to ``reports/<name>/``); a file
    under the working directory or the project root relative to that
    (``data/traces/...``); anything else stays absolute (``relative_to`` is ``""``).
    """
    if not str(path):
        return str(path), ""
    p = os.path.abspath(resolve(path))
    for root, what in _roots(output_dir):
        if p == root or p.startswith(root + os.sep):
            return Path(os.path.relpath(p, root)).as_posix(), what
    return str(path), ""


def portable(obj: Any, output_dir: str | Path = "") -> Any:
    """``obj`` with absolute paths under the report folder / working directory / project root
    shortened (see :func:`portable_path`) inside every string: file names in reasons too."""
    roots = [r for r, _ in _roots(output_dir)]

    def fix(text: str) -> str:
        for r in roots:
            text = text.replace(r + os.sep, "")
        return text

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return fix(x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        if isinstance(x, Unavailable):
            return Unavailable(fix(x.reason))
        return x

    return walk(obj)


__all__ = ["PROJECT_ROOT", "portable", "portable_path", "resolve"]
