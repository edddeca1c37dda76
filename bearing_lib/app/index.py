"""``reports/index.html``: one offline page listing every published report.

Reads each ``reports/<name>/summary.json`` (verdict, headline, run time); folders
without a readable summary are listed as such rather than skipped silently. Failed runs
(``<name>.failed-<time>/``) are listed separately so nobody mistakes them for reports:
only the latest failure of each name, and only while no report of that name was run after
it (a rerun that succeeds replaces the failed entry; the failed folders stay on disk as
evidence until someone deletes them). Hidden folders (``.tmp-*`` of a run in progress or
killed) are never listed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.files import write_text_atomic
from bearing_lib.report.summary import ReportSummary
from bearing_lib.report.templating import environment

_FAILED = re.compile(r"^(?P<name>.+)\.failed-(?P<stamp>\d{8}T\d{6}Z)(?:-[0-9a-f]+)?$")


def _when(text: str) -> _dt.datetime | None:
    try:
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.UTC)


def collect(reports_dir: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Entries for the index: ``reports`` (newest first) and ``failed`` runs (newest first).

    A failed entry: ``name`` (its folder), ``report`` (the report name), ``files`` and
    ``earlier`` (how many older failed folders of the same report are still on disk).
    """
    root = Path(reports_dir)
    reports: list[dict[str, Any]] = []
    failures: dict[str, list[tuple[str, Path]]] = {}
    if not root.is_dir():
        return {"reports": [], "failed": []}
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        m = _FAILED.match(d.name)
        if m:
            failures.setdefault(m["name"], []).append((m["stamp"], d))
            continue
        if ".failed-" in d.name:
            continue
        entry: dict[str, Any] = {"name": d.name, "has_html": (d / "report.html").is_file()}
        try:
            s = ReportSummary.read(d / "summary.json")
            entry.update(verdict=s.verdict, headline=s.headline, run_time_utc=s.run_time_utc or "")
        except (OSError, SchemaError) as exc:
            entry.update(verdict="unknown", headline="", run_time_utc="", problem=f"summary.json unreadable: {exc}")
        reports.append(entry)
    reports.sort(key=lambda e: (e.get("run_time_utc") or "", e["name"]), reverse=True)
    ran = {e["name"]: _when(e.get("run_time_utc") or "") for e in reports}
    failed: list[dict[str, Any]] = []
    for name, runs in failures.items():
        runs.sort(key=lambda r: (r[0], r[1].name))
        stamp, d = runs[-1]
        at = _dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.UTC)
        if name in ran and (ran[name] is None or ran[name] >= at):  # a later run of the report replaced it
            continue
        failed.append({"name": d.name, "report": name, "stamp": stamp, "earlier": len(runs) - 1,
                       "files": sorted(f.name for f in d.iterdir() if f.is_file())})
    failed.sort(key=lambda f: (f["stamp"], f["name"]), reverse=True)
    return {"reports": reports, "failed": failed}


@contextlib.contextmanager
def _index_lock(root: Path) -> Iterator[None]:
    """Serialise index writers (runs of different reports may finish together): a blocking flock.

    Named ``.index.lock``, not ``.lock-index``, which is the run lock of a report named ``index``.
    """
    fd = os.open(root / ".index.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_index(reports_dir: str | Path) -> Path:
    """(Re)write ``reports_dir/index.html`` atomically and return its path (raises ``OSError``)."""
    root = Path(reports_dir)
    out = root / "index.html"
    with _index_lock(root):
        html = environment().get_template("index.html.j2").render(**collect(root))
        write_text_atomic(out, html)
    return out


__all__ = ["collect", "write_index"]
