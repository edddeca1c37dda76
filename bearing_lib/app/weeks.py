"""ISO weeks: the report's period arithmetic (``bearing weekly`` names a report by its week)."""

from __future__ import annotations

import datetime as _dt
import re

from bearing_lib.common.errors import ParameterError

WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
"""``YYYY-Www``."""


def iso_week(week: str | None = None, *, today: _dt.date | None = None) -> str:
    """``YYYY-Www``: ``week`` checked, or the last complete ISO week before ``today`` (UTC)."""
    if week is None:
        d = (today or _dt.datetime.now(_dt.UTC).date()) - _dt.timedelta(days=7)
        y, w, _ = d.isocalendar()
        return f"{y}-W{w:02d}"
    m = WEEK.match(week)
    if not m:
        raise ParameterError(f"week {week!r}: expected an ISO week such as 2026-W48")
    try:
        _dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError:
        raise ParameterError(f"week {week!r}: year {m.group(1)} has no week {m.group(2)}") from None
    return week


def week_bounds(week: str) -> tuple[_dt.datetime, _dt.datetime]:
    """UTC ``[Monday 00:00, next Monday 00:00)`` of an ISO week."""
    m = WEEK.match(iso_week(week))
    assert m is not None
    start = _dt.datetime.combine(_dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1), _dt.time(),
                                 tzinfo=_dt.UTC)
    return start, start + _dt.timedelta(days=7)


__all__ = ["WEEK", "iso_week", "week_bounds"]
