"""``reports/index.html``: one offline page listing every published report, and ``reports/index.json`` beside it.

Reads each ``reports/<name>/summary.json`` (verdict, headline, run time); folders
without a readable summary are listed as such rather than skipped silently. Failed runs
(``<name>.failed-<time>/``) are listed separately so nobody mistakes them for reports:
only the latest failure of each name, and only while no report of that name was run after
it (a rerun that succeeds replaces the failed entry; the failed folders stay on disk as
evidence until someone deletes them). Hidden folders (``.tmp-*`` of a run in progress or
killed) are never listed.

:func:`collect` returns a :class:`ReportsIndex` (:class:`ReportEntry` rows, :class:`FailedRun` rows); the page
is rendered from it, and the same object is written as ``index.json`` (``to_dict``; ``from_dict``/``read`` read
it back, validated once) for a scheduler or dashboard that wants the verdicts without parsing HTML.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.files import read_json, write_json, write_text_atomic
from bearing_lib.report.summary import ReportSummary
from bearing_lib.report.templating import environment

_FAILED = re.compile(r"^(?P<name>.+)\.failed-(?P<stamp>\d{8}T\d{6}Z)(?:-[0-9a-f]+)?$")


def _when(text: str) -> _dt.datetime | None:
    try:
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.UTC)


INDEX_SCHEMA = "bearing.reports_index/1"
"""Version tag of ``reports/index.json``."""


@dataclass
class ReportEntry:
    """One published report: its folder ``name``, whether it holds ``report.html``, and from its ``summary.json``
    the verdict, headline and run time (``verdict`` ``unknown`` and ``problem`` saying why when it cannot be read)."""

    name: str
    has_html: bool
    verdict: str
    headline: str
    run_time_utc: str
    problem: str | None = None


@dataclass
class FailedRun:
    """The latest failed run of a report: its folder ``name``, the ``report`` it was a run of, the failure's
    ``stamp`` (``YYYYMMDDTHHMMSSZ``), how many ``earlier`` failed folders of that report are still on disk, and
    the ``files`` kept for diagnosis."""

    name: str
    report: str
    stamp: str
    earlier: int
    files: list[str] = field(default_factory=list)


@dataclass
class ReportsIndex:
    """What ``reports/index.html`` lists: ``reports`` and ``failed`` runs, each newest first."""

    reports: list[ReportEntry] = field(default_factory=list)
    failed: list[FailedRun] = field(default_factory=list)
    schema: str = INDEX_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        """The ``index.json`` document."""
        return {"schema": self.schema, "reports": [asdict(r) for r in self.reports],
                "failed": [asdict(f) for f in self.failed]}

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "reports index") -> ReportsIndex:
        """An ``index.json`` document, validated once (a :class:`SchemaError` naming the file and every field)."""
        from bearing_lib.common.schema import read_document

        return read_document(cls, doc, source=source, kind="reports_index", schema=INDEX_SCHEMA,
                             keys=("reports", "failed"), writer="bearing report (it rewrites reports/index.json)")

    @classmethod
    def read(cls, path: str | Path) -> ReportsIndex:
        return cls.from_dict(read_json(path, "reports index"), source=f"reports index {path}")


def _entry(d: Path) -> ReportEntry:
    has_html = (d / "report.html").is_file()
    try:
        s = ReportSummary.read(d / "summary.json")
    except (OSError, SchemaError) as exc:
        return ReportEntry(d.name, has_html, "unknown", "", "", problem=f"summary.json unreadable: {exc}")
    return ReportEntry(d.name, has_html, s.verdict, s.headline, s.run_time_utc or "")


def collect(reports_dir: str | Path) -> ReportsIndex:
    """The index's entries: ``reports`` (newest first) and ``failed`` runs (newest first); see :class:`FailedRun`."""
    root = Path(reports_dir)
    reports: list[ReportEntry] = []
    failures: dict[str, list[tuple[str, Path]]] = {}
    if not root.is_dir():
        return ReportsIndex()
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        m = _FAILED.match(d.name)
        if m:
            failures.setdefault(m["name"], []).append((m["stamp"], d))
            continue
        if ".failed-" in d.name:
            continue
        reports.append(_entry(d))
    reports.sort(key=lambda e: (e.run_time_utc, e.name), reverse=True)
    ran = {e.name: _when(e.run_time_utc) for e in reports}
    failed: list[FailedRun] = []
    for name, runs in failures.items():
        runs.sort(key=lambda r: (r[0], r[1].name))
        stamp, d = runs[-1]
        at = _dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.UTC)
        if name in ran and (ran[name] is None or ran[name] >= at):  # a later run of the report replaced it
            continue
        failed.append(FailedRun(d.name, name, stamp, len(runs) - 1, sorted(f.name for f in d.iterdir() if f.is_file())))
    failed.sort(key=lambda f: (f.stamp, f.name), reverse=True)
    return ReportsIndex(reports, failed)


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
    """(Re)write ``reports_dir/index.html`` and ``index.json`` atomically; return the page's path (raises
    ``OSError``)."""
    root = Path(reports_dir)
    out = root / "index.html"
    with _index_lock(root):
        index = collect(root)
        html = environment().get_template("index.html.j2").render(reports=index.reports, failed=index.failed)
        write_text_atomic(out, html)
        write_json(index.to_dict(), root / "index.json")
    return out


__all__ = ["INDEX_SCHEMA", "FailedRun", "ReportEntry", "ReportsIndex", "collect", "write_index"]
