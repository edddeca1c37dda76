"""Paths of the load-test files inside a limits JSON: relative to the JSON's own folder.

A limits JSON names the files it was fitted on (``conditions.sources[].path``); the report's
digital twin and ``bearing next`` read them again. A path relative to the working directory
of the run that wrote the JSON means nothing to a later reader elsewhere, so bearing writes
each relative local path **relative to the folder of the JSON** (:func:`relative_sources`;
absolute when no relative path exists, e.g. another drive) and reads a relative path **from
that folder** (:func:`resolved_sources`), never from the reader's working directory. An
absolute path stays absolute (it means the same to every reader); URLs (``s3://...``) and
in-memory sources are left as they are.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _is_local(path: object) -> bool:
    return isinstance(path, str) and bool(path) and "://" not in path and not path.startswith("<")


def _sources(doc: Any) -> list[dict[str, Any]]:
    cond = doc.get("conditions") if isinstance(doc, dict) else None
    sources = cond.get("sources") if isinstance(cond, dict) else None
    return [s for s in sources if isinstance(s, dict)] if isinstance(sources, list) else []


def relative_sources(doc: dict[str, Any], json_path: str | Path) -> dict[str, Any]:
    """``doc`` with each relative local source path rewritten relative to ``json_path``'s folder (in place;
    returned). Such a path is relative to the working directory, where the writer was given it."""
    folder = Path(os.path.abspath(json_path)).parent
    for src in _sources(doc):
        path = src.get("path")
        if not _is_local(path) or os.path.isabs(path):
            continue
        absolute = os.path.abspath(path)
        try:
            src["path"] = Path(os.path.relpath(absolute, folder)).as_posix()
        except ValueError:  # no relative path (another drive on Windows): keep it absolute
            src["path"] = absolute
    return doc


def resolved_sources(doc: dict[str, Any], json_path: str | Path) -> dict[str, Any]:
    """``doc`` with each relative local source path made absolute from ``json_path``'s folder (in place)."""
    folder = Path(os.path.abspath(json_path)).parent
    for src in _sources(doc):
        path = src.get("path")
        if _is_local(path) and not os.path.isabs(path):
            src["path"] = os.path.normpath(folder / path)
    return doc


__all__ = ["relative_sources", "resolved_sources"]
