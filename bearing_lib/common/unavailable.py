"""A result the data cannot support, with the reason (never a placeholder number).

Profile, target and SLO-budget sections return :class:`Unavailable` instead of a value
when the input cannot support it (a one-hour trace has no daily cycle; a trace without a
status column has no error budget). It serialises as ``{"available": false, "reason"}``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass


@dataclass(frozen=True)
class Unavailable:
    """A section the data cannot support; ``reason`` says why in one sentence."""

    reason: str
    available: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"available": False, "reason": self.reason}

    def __bool__(self) -> bool:
        return False

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return f"<p><i>not available:</i> {html.escape(self.reason)}</p>"
