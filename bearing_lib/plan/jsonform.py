"""The plan's JSON form: one writer for the plan's result types and the "not available" section.

The plan's result types (``fos.py``, ``capacity.py``, ``elasticity.py``, ``memory.py``,
``scorecards.py``, ``economics.py``) are its document: each is a stdlib dataclass whose fields
are the JSON keys in the documented order (``docs/interfaces.md`` §6). :func:`to_json` writes
one: it is :func:`bearing_lib.common.files.jsonable`, the one writer of every result type (a key
listed in the class's ``_OMIT_NONE`` is left out when it is ``None``, as the plan has always done
for optional keys); reading is one pydantic pass over the same dataclasses
(:meth:`CapacityPlan.from_dict <bearing_lib.plan.capacity_plan.CapacityPlan.from_dict>`), with
``STRICT`` on each class so a renamed key fails.

A section (or an economics part) the inputs could not support is
:class:`~bearing_lib.common.schema.NotAvailable`, written ``{"available": false, "reason"}``;
:func:`section` is the tagged union "this dataclass or NotAvailable" used in the annotations.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Discriminator, Tag

from bearing_lib.common.files import jsonable as to_json
from bearing_lib.common.schema import NotAvailable

STRICT = ConfigDict(extra="forbid")
"""``__pydantic_config__`` of every plan result type: unknown keys are refused when a plan JSON is read."""


def _gap(v: Any) -> str:
    gone = (isinstance(v, dict) and v.get("available") is False) or isinstance(v, NotAvailable)
    return "~unavailable" if gone else "~available"


def section(tp: Any) -> Any:
    """The annotation "``tp`` or :class:`NotAvailable`" (a tagged union on ``available``)."""
    return Annotated[Annotated[tp, Tag("~available")] | Annotated[NotAvailable, Tag("~unavailable")],
                     Discriminator(_gap)]


def available(x: Any) -> bool:
    """True for a computed section (not ``None``, not :class:`NotAvailable`)."""
    return x is not None and not isinstance(x, NotAvailable)


__all__ = ["STRICT", "NotAvailable", "available", "section", "to_json"]
