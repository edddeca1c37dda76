"""JSON at the edges, validated once: parse a document into a typed result, every problem at once.

bearing's results are plain dataclasses (the library's own types, no framework in them);
at the edges (CLI ``--json``, files between notebooks, ``summary.json``) they are
validated and built by **pydantic v2**'s ``TypeAdapter`` over the same dataclasses. Why
pydantic rather than msgspec or hand-written readers: it validates standard dataclasses
without a second model per type, reports *every* problem of a document in one error
(each with its path), and exports a JSON Schema from the same types, so the schema that
``bearing schema NAME`` prints cannot drift from the code that reads it. msgspec is
faster but needs its own Struct types; the documents here are kilobytes.

Each document carries ``schema: "bearing.<name>/<version>"``; :data:`SCHEMAS` lists them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from bearing_lib.common.errors import SchemaError

T = TypeVar("T")

TAG = "~"
"""Prefix of the tags of tagged unions in the documents (``Tag("~rows")``); left out of the paths reported."""


@dataclass
class NotAvailable:
    """A section of a document that its inputs could not support: ``{"available": false, "reason": ...}``.

    The typed twin of :class:`bearing_lib.common.unavailable.Unavailable` inside the JSON
    documents (a section is either its dataclass or this, never a placeholder number).
    """

    reason: str
    available: Literal[False] = False


@functools.cache
def _adapter(tp: Any) -> Any:
    from pydantic import ConfigDict, TypeAdapter

    try:
        return TypeAdapter(tp, config=ConfigDict(extra="forbid"))
    except Exception:  # pydantic refuses a config on dataclasses that declare their own
        return TypeAdapter(tp)


def problems(exc: Any) -> list[str]:
    """pydantic's errors as ``path: message`` lines."""
    out = []
    for e in exc.errors():
        # a tagged union's branch ("~columns") is how the value was read, not a key of the document
        loc = ".".join(str(p) for p in e.get("loc", ()) if not str(p).startswith(TAG)) or "(document)"
        got = e.get("input")
        shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
        msg = "unknown key (renamed? expected one of the documented keys)" if e.get("type") in (
            "unexpected_keyword_argument", "extra_forbidden") else e.get("msg")
        out.append(f"{loc}: {msg} (found {shown[:60]})")
    return out


def parse(tp: type[T], doc: Any, *, what: str) -> T:
    """``doc`` (JSON-shaped) as a ``tp``, or one :class:`SchemaError` listing every problem."""
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_python(doc)
    except ValidationError as exc:
        lines = problems(exc)
        raise SchemaError(f"{what}: {len(lines)} problem(s):\n  " + "\n  ".join(lines)) from None


def json_schema(tp: Any, *, title: str, schema_id: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``tp``, titled and with its ``$id``."""
    s = _adapter(tp).json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, **s, "title": title}


__all__ = ["NotAvailable", "json_schema", "parse", "problems"]
