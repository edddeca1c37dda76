"""JSON at the edges, validated once: parse a document into a typed result, every problem at once.

bearing's results are plain dataclasses (the library's own types, no framework in them);
at the edges (CLI ``--json``, files between notebooks, ``summary.json``) they are
validated and built by **pydantic v2**'s ``TypeAdapter`` over the same dataclasses. Why
pydantic rather than msgspec or hand-written readers: it validates standard dataclasses
without a second model per type, reports *every* problem of a document in one error
(each with its path), and exports a JSON Schema from the same types, so the schema that
``bearing schema NAME`` prints cannot drift from the code that reads it. msgspec is
faster but needs its own Struct types; the documents here are kilobytes.

Each document carries ``schema: "bearing.<name>/<version>"``. :func:`read_document` is the one
``from_dict`` of a document type: a document of another kind (or from another tool) is refused as
such, then one pass validates it, and a problem names the file (``source``), the field (its path in
the document) and what was expected there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from bearing_lib.common.errors import Problem, SchemaError

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


def _problems(exc: Any) -> list[Problem]:
    """pydantic's errors as :class:`Problem`: ``field`` is the path in the document (``(document)`` for the
    whole), ``message`` what was expected there and what was found."""
    out = []
    for e in exc.errors():
        # a tagged union's branch ("~columns") is how the value was read, not a key of the document
        loc = ".".join(str(p) for p in e.get("loc", ()) if not str(p).startswith(TAG)) or "(document)"
        got = e.get("input")
        shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
        msg = "unknown key (renamed? expected one of the documented keys)" if e.get("type") in (
            "unexpected_keyword_argument", "extra_forbidden") else e.get("msg")
        out.append(Problem(f"{msg} (found {shown[:60]})", field=loc))
    return out


def problems(exc: Any) -> list[str]:
    """pydantic's errors as ``path: message`` lines."""
    return [f"{p.field}: {p.message}" for p in _problems(exc)]


def parse(tp: type[T], doc: Any, *, what: str) -> T:
    """``doc`` (JSON-shaped) as a ``tp``, or one :class:`SchemaError` listing every problem.

    The error's ``problems`` hold one :class:`~bearing_lib.common.errors.Problem` per problem (``field``: its
    path in the document); its ``field`` is the first one's.
    """
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_python(doc)
    except ValidationError as exc:
        found = _problems(exc)
        lines = [f"{p.field}: {p.message}" for p in found]
        err = SchemaError(f"{what}: {len(lines)} problem(s):\n  " + "\n  ".join(lines))
        err.field, err.problems = (found[0].field if found else None), found
        raise err from None


def read_document(tp: type[T], doc: Any, *, source: str, kind: str, schema: str, keys: tuple[str, ...],
                  writer: str, prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> T:
    """The ``from_dict`` of a bearing JSON document of type ``tp``, validated once.

    ``source`` names the file (``"plan JSON reports/w48/plan.json"``) and starts every message. A document
    of another kind, or not a bearing document at all, is refused as such (:func:`refuse_other_kind`, with
    ``kind``, ``schema``, ``keys`` and ``writer``); otherwise ``prepare`` (older key names read under the
    new ones; it must return a copy, the input is not modified) and one pass of :func:`parse`: a
    :class:`SchemaError` listing every problem, each as ``field: what was expected (found what)``.

    >>> @dataclass
    ... class Doc:
    ...     rps: float
    >>> read_document(Doc, {"rps": 2}, source="x.json", kind="demo", schema="bearing.demo/1", keys=("rps",),
    ...               writer="demo --json").rps
    2.0
    >>> try:
    ...     read_document(Doc, {"rps": "fast"}, source="x.json", kind="demo", schema="bearing.demo/1",
    ...                   keys=("rps",), writer="demo --json")
    ... except SchemaError as exc:
    ...     print(exc)
    ...     print(exc.field)
    x.json: 1 problem(s):
      rps: Input should be a valid number, unable to parse string as a number (found 'fast')
    rps
    """
    refuse_other_kind(doc, kind=kind, schema=schema, keys=keys, source=source, writer=writer)
    return parse(tp, prepare(doc) if prepare is not None else doc, what=source)


def refuse_other_kind(doc: Any, *, kind: str, schema: str, keys: tuple[str, ...], source: str,
                      writer: str) -> None:
    """Refuse a document that is not a bearing ``kind`` document, saying so (before any field is checked).

    A document whose ``schema`` names another bearing document (``bearing.limits/2`` given as a
    plan) says which it is; one without ``schema`` that has none of the ``keys`` the kind requires
    (``{"hello": [1, 2, 3]}``) is "not a bearing ``kind`` document (no `schema`)", naming the keys
    expected and found, and ``writer`` (the command that writes one). A ``schema`` of this kind but
    another version says which version this bearing reads. Documents without ``schema`` that carry
    any expected key (files written before ``schema`` existed) pass on to validation.
    """
    if not isinstance(doc, dict):
        raise SchemaError(f"{source}: expected a bearing {kind} JSON object, found {type(doc).__name__}")
    tag = doc.get("schema")
    if tag is None:
        if keys and not set(keys) & set(doc):
            found = ", ".join(sorted(map(str, doc))[:8]) or "none"
            raise SchemaError(f"{source}: not a bearing {kind} document (no `schema`); expected {schema!r} with the "
                              f"keys {', '.join(keys)} (found keys: {found}); write one with `{writer}`")
        return
    if tag == schema:
        return
    name = tag.split("/")[0].removeprefix("bearing.") if isinstance(tag, str) and tag.startswith("bearing.") else None
    if name is not None and name != kind:
        raise SchemaError(f"a bearing {name} document (schema {tag!r}), not a {kind} document; expected "
                          f"{schema!r} (write one with `{writer}`)", path=source, field="schema")
    raise SchemaError(f"schema {tag!r} is not {schema!r} (this bearing reads {schema})", path=source, field="schema")


def json_schema(tp: Any, *, title: str, schema_id: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``tp``, titled and with its ``$id``."""
    s = _adapter(tp).json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, **s, "title": title}


__all__ = ["NotAvailable", "json_schema", "parse", "problems", "read_document", "refuse_other_kind"]
