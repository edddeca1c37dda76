"""The plan's JSON form: one writer for the plan's result types and the "not available" section.

The plan's result types (``fos.py``, ``capacity.py``, ``elasticity.py``, ``memory.py``,
``scorecards.py``, ``economics.py``) are its document: each is a stdlib dataclass whose fields
are the JSON keys in the documented order (``docs/interfaces.md`` §6). :func:`to_json` writes
one (a key listed in the class's ``_OMIT_NONE`` is left out when it is ``None``, as the plan
has always done for optional keys); reading is one pydantic pass over the same dataclasses
(:meth:`CapacityPlan.from_dict <bearing_lib.plan.capacity_plan.CapacityPlan.from_dict>`), with
``STRICT`` on each class so a renamed key fails.

A section (or an economics part) the inputs could not support is
:class:`~bearing_lib.common.schema.NotAvailable`, written ``{"available": false, "reason"}``;
:func:`section` is the tagged union "this dataclass or NotAvailable" used in the annotations.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any

from pydantic import ConfigDict, Discriminator, Tag

from bearing_lib.common.schema import NotAvailable

STRICT = ConfigDict(extra="forbid")
"""``__pydantic_config__`` of every plan result type: unknown keys are refused when a plan JSON is read."""


def to_json(obj: Any) -> Any:
    """``obj`` as JSON values: dataclasses as objects in field order (``_OMIT_NONE`` keys left out when
    None), ``NotAvailable`` as ``{"available": false, "reason"}``, tuples as lists, numpy scalars as
    Python, non-finite floats as null."""
    if isinstance(obj, NotAvailable):
        return {"available": False, "reason": obj.reason}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        omit = getattr(type(obj), "_OMIT_NONE", ())
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if v is None and f.name in omit:
                continue
            out[f.name] = to_json(v)
        return out
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_json(v) for v in obj]
    if hasattr(obj, "dtype") and hasattr(obj, "item"):  # a numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


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
