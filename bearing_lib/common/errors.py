"""bearing's exception hierarchy.

::

    BearingError
    ├── InputError                 a file or folder cannot be read as promised
    │   ├── FormatDetectionError   no format, or several, fit the input
    │   ├── SchemaError            a required column or key is missing
    │   ├── BadValueError          a value has the wrong type or is out of range
    │   └── UnsupportedVersionError  a tool's output in a version bearing does not know
    ├── SLAParseError              an SLA clause cannot be parsed
    ├── ParameterError             a parameter (CLI, notebook, config) is unknown or invalid
    └── InsufficientDataError      the data cannot support the number asked for

Every message says what was expected, what was found and where (file, row, field).
"""

from __future__ import annotations

from pathlib import Path


class BearingError(Exception):
    """Base class of every error bearing raises on purpose."""


class InputError(BearingError):
    """An input file cannot be read as promised.

    ``path``, ``row`` (1-based data row, or line for JSONL) and ``field`` locate the
    problem when known; they are also part of the message.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.row = row
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path)
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        self.message = message
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class FormatDetectionError(InputError):
    """No registered format, or more than one, fits the input."""


class SchemaError(InputError):
    """A required column or key is missing."""


class BadValueError(InputError):
    """A value has the wrong type, is out of range, or contradicts another value."""


class UnsupportedVersionError(InputError):
    """The file comes from a tool version bearing does not know.

    ``tool`` and ``version`` (``None`` when the file does not say) name what was found;
    ``missing`` lists the fields bearing looked for and did not find.
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        version: str | None,
        missing: list[str] | None = None,
        path: str | Path | None = None,
    ) -> None:
        self.tool = tool
        self.version = version
        self.missing = list(missing or [])
        detail = f"{tool} output, version {version or 'not stated in the file'}"
        if self.missing:
            detail += f"; missing fields: {', '.join(self.missing)}"
        super().__init__(f"{message} ({detail})", path=path)


class SLAParseError(BearingError):
    """An SLA clause cannot be parsed; the message quotes the clause and the grammar."""


class ParameterError(BearingError):
    """A parameter is unknown, missing or of the wrong type."""


class InsufficientDataError(BearingError):
    """The data cannot support the number asked for (e.g. a P99 from 20 requests)."""
