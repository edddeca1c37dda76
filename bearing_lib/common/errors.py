"""bearing's exception hierarchy.

::

    BearingError
    ├── InputError                 a file or folder cannot be read as promised
    │   ├── FormatDetectionError   no format, or several, fit the input
    │   ├── SchemaError            a required column or key is missing, or a column is duplicated
    │   ├── StructureError         the file's structure is broken (ragged rows, NUL bytes)
    │   ├── BadValueError          a value has the wrong type or is out of range
    │   └── UnsupportedVersionError  a tool's output in a version bearing does not know
    ├── SLAParseError              an SLA clause cannot be parsed
    ├── ParameterError             a parameter (CLI, notebook, config) is unknown or invalid
    │   └── ShapeUnusable          an earlier test's limits offer no shape to this one (none in them, same files)
    ├── InsufficientDataError      the data cannot support the number asked for
    └── ReportError                a report run (bearing report / weekly) could not publish
        ├── RunFailed              a notebook raised; its executed copy is kept (exit 4)
        │   ├── NotebookInputError a notebook found bad input (exit 1, like a bad parameter)
        │   └── NotebookTimeout    a cell ran longer than the cell timeout (exit 10)
        ├── ReportExists           reports/<name>/ exists and force was not given (exit 5)
        ├── ReportLocked           another run of the same report holds its lock (exit 7)
        ├── ReportsFolderError     the reports folder is missing, read-only or not a folder (exit 8)
        └── KernelNotFound         the Jupyter kernel the notebooks need is not installed (exit 9)

Every message says what was expected, what was found and where (file, row, field).
Each class carries ``exit_code``: the process exit code the CLI uses for it (documented in
``docs/report.md``; 1 for every error that is not a report-run outcome).
Where one file has several problems, one error lists them all (``problems``; see
:func:`raise_problems`), the way pandera's ``validate(lazy=True)`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class BearingError(Exception):
    """Base class of every error bearing raises on purpose."""

    exit_code = 1  # bad input or parameter: what the CLI exits with


class InputError(BearingError):
    """An input file cannot be read as promised.

    ``path``, ``row`` (1-based data row, or line for JSONL) and ``field`` locate the
    problem when known; they are also part of the message. ``problems`` lists every
    problem found in the file (one :class:`Problem` each; the first is the one ``row`` and
    ``field`` point at); it holds just this one when only one was found.
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
        self.problems: list[Problem] = [Problem(message, row=row, field=field)]
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class FormatDetectionError(InputError):
    """No registered format, or more than one, fits the input."""


class SchemaError(InputError):
    """A required column or key is missing."""


class StructureError(InputError):
    """The file's structure is broken: rows with too few or too many fields, NUL bytes."""


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


class ShapeUnusable(ParameterError):
    """An earlier limits result (``shape_from``) offers no shape to this test: none in it (the pooled estimator, or
    no judged step), or it was fitted on this test's own files. ``fit_limits(..., shape_required=False)`` (a
    scheduled report offered last week's limits, whatever they were) says so in a note instead."""


class InsufficientDataError(BearingError):
    """The data cannot support the number asked for (e.g. a P99 from 20 requests)."""


# ------------------------------------------------------------------ report runs


class ReportError(BearingError):
    """A report run could not publish ``reports/<name>/`` (the old report, if any, is untouched)."""


class RunFailed(ReportError):
    """A notebook raised; the executed copy is kept and named.

    ``notebook`` is the notebook's file name, ``cell_index`` the failing cell's index in the
    executed copy (``None`` when unknown), ``executed_copy`` its path, ``ename``/``evalue``
    the exception the cell raised.
    """

    exit_code = 4

    def __init__(self, message: str, *, notebook: str, cell_index: int | None, executed_copy: Path,
                 ename: str | None = None, evalue: str | None = None) -> None:
        self.notebook = notebook
        self.cell_index = cell_index
        self.executed_copy = executed_copy
        self.ename = ename
        self.evalue = evalue
        super().__init__(message)


class NotebookInputError(RunFailed):
    """A notebook raised one of bearing's input or parameter errors (e.g. a bad row deep in a
    trace that only the loader sees): bad input, exit 1 like one found before any kernel started."""

    exit_code = 1


class NotebookTimeout(RunFailed):
    """A cell ran longer than the cell timeout (papermill ``execution_timeout``); it was interrupted."""

    exit_code = 10


class ReportExists(ReportError):
    """``reports/<name>/`` exists and ``force`` was not given."""

    exit_code = 5

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} already exists; pass --force to replace it (the old report is kept otherwise)")


class ReportLocked(ReportError):
    """Another run of the same report holds its lock; ``holder`` is what the lock file records."""

    exit_code = 7

    def __init__(self, message: str, *, lock: Path, holder: dict[str, object] | None = None) -> None:
        self.lock = lock
        self.holder = dict(holder or {})
        super().__init__(message)


class ReportsFolderError(ReportError):
    """The reports folder cannot be used: missing parent, read-only, not a folder, disk full."""

    exit_code = 8

    def __init__(self, message: str, *, path: Path) -> None:
        self.path = path
        super().__init__(message)


class KernelNotFound(ReportError):
    """The Jupyter kernel the notebooks run in is not installed (papermill's ``NoSuchKernel``)."""

    exit_code = 9

@dataclass(frozen=True)
class Problem:
    """One problem in an input: what was found and expected, and where (row, field)."""

    message: str
    row: int | None = None
    field: str | None = None

    def text(self) -> str:
        where = [f"row {self.row}"] if self.row is not None else []
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


MAX_LISTED = 20
"""At most this many problems are spelled out in one message (all stay in ``problems``)."""


def raise_problems(
    problems: Sequence[Problem], *, path: str | Path | None, cls: type[InputError] = BadValueError
) -> None:
    """Raise one ``cls`` error for all ``problems`` (nothing when there are none).

    One problem gives the usual message (``path, row 3, field 'x': ...``). Several give
    ``path: N problems:`` and one line per problem; ``row``/``field`` of the error are the
    first problem's and ``problems`` holds them all.

    >>> try:
    ...     raise_problems([Problem("expected a number", 3, "a"), Problem("expected ok", 5, "b")], path="t.csv")
    ... except BadValueError as exc:
    ...     print(exc)
    t.csv: 2 problems:
      - row 3, field 'a': expected a number
      - row 5, field 'b': expected ok
    """
    if not problems:
        return
    first = problems[0]
    if len(problems) == 1:
        raise cls(first.message, path=path, row=first.row, field=first.field)
    lines = [f"  - {p.text()}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        lines.append(f"  - ... and {len(problems) - MAX_LISTED} more")
    exc = cls(f"{len(problems)} problems:\n" + "\n".join(lines), path=path)
    exc.row, exc.field, exc.problems = first.row, first.field, list(problems)
    raise exc
