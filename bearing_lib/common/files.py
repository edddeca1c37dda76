"""The one JSON reader and the one atomic writer for the documents bearing reads and writes.

``read_json`` names the file and says what was expected; ``write_text_atomic`` writes a
temporary file beside the target and renames it over the target, so a reader (or a run
killed halfway) sees the old file or the new one, never a mixture; ``jsonable`` is the one
conversion of results to JSON values (dataclasses to objects, tuples to lists, numpy scalars
to Python, non-finite floats to ``null``), used by every result type's ``to_dict`` (the plan's
``bearing_lib.plan.jsonform.to_json`` is this function).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import BadValueError, InputError
from bearing_lib.common.schema import NotAvailable


def read_json(path: str | Path, what: str) -> dict[str, Any]:
    """A JSON object from ``path``; an :class:`InputError` naming the file and what was expected otherwise."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"the {what} file not found", path=p) from exc
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", path=p) from exc
    except UnicodeDecodeError as exc:
        raise BadValueError(f"the {what} is not UTF-8 text ({exc.reason}); expected a JSON object", path=p) from exc
    except json.JSONDecodeError as exc:
        raise BadValueError(f"the {what} is not valid JSON (line {exc.lineno}: {exc.msg}); expected a JSON object",
                            path=p) from exc
    if not isinstance(doc, dict):
        raise BadValueError(f"the {what} must be a JSON object, found {type(doc).__name__}", path=p)
    return doc


def jsonable(obj: Any) -> Any:
    """``obj`` as JSON values: dataclasses → objects in field order, tuples → lists, numpy scalars → Python,
    ±inf/NaN → None.

    A dataclass leaves out the fields its class lists in ``_OMIT_NONE`` when they are None (the plan's
    optional keys); :class:`~bearing_lib.common.schema.NotAvailable` is ``{"available": false, "reason"}``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Part:
    ...     _OMIT_NONE = ("note",)
    ...     value: float
    ...     spread: tuple[float, float]
    ...     note: str | None = None
    >>> jsonable([Part(float("inf"), (1, 2)), NotAvailable("no trace")])
    [{'value': None, 'spread': [1, 2]}, {'available': False, 'reason': 'no trace'}]
    """
    if isinstance(obj, NotAvailable):
        return {"available": False, "reason": obj.reason}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        omit = getattr(type(obj), "_OMIT_NONE", ())
        return {f.name: jsonable(v) for f in dataclasses.fields(obj)
                if (v := getattr(obj, f.name)) is not None or f.name not in omit}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "dtype") and hasattr(obj, "item"):  # a numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be read by others
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def write_json(doc: Any, path: str | Path) -> Path:
    """``doc`` as indented JSON (non-finite floats as null), written atomically; the folder is created."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(p, json.dumps(jsonable(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n")


__all__ = ["jsonable", "read_json", "write_json", "write_text_atomic"]
