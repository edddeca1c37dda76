"""Run the report notebooks with papermill and publish ``reports/<name>/`` atomically.

* Parameters are checked **before** any kernel starts (papermill only warns): every
  key must be declared in some notebook's ``parameters`` cell
  (:func:`papermill.inspect_notebook`), values are converted to the declared type, and
  parameters whose help text starts with ``required`` must be given.
* A run writes into ``reports/.tmp-<name>-<random>/`` and is renamed to
  ``reports/<name>/`` only when every notebook succeeded (``os.replace``/``rename`` on
  the same file system). An existing ``reports/<name>/`` is never touched without
  ``force``; with ``force`` it is swapped out, then removed.
* A failed notebook keeps its executed copy: the temporary folder is renamed to
  ``reports/<name>.failed-<UTC time>/`` and :class:`RunFailed` names the notebook, the
  failing cell (index, execution count, first source line) and that folder.
* papermill's per-cell progress bar is shown only when stdout is a terminal.

Exit codes (``bearing report`` / ``bearing weekly``, for cron and Airflow) are the
``EXIT_*`` constants below; ``docs/report.md`` lists them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bearing_lib.common.errors import BearingError, ParameterError

EXIT_OK = 0  # report written; verdict green or yellow (or `bearing report`: any verdict)
EXIT_ERROR = 1  # bad input or parameter (nothing executed)
EXIT_USAGE = 2  # command-line usage error (Typer)
EXIT_RED = 3  # weekly: report written, verdict red
EXIT_FAILED = 4  # a notebook failed; executed copy kept in reports/<name>.failed-<time>/
EXIT_EXISTS = 5  # reports/<name>/ exists and --force was not given (nothing executed)
EXIT_NO_VERDICT = 6  # weekly: report written but no verdict (limits or plan not available)

OUTPUT_DIR_PLACEHOLDER = "{output_dir}"  # in a parameter value: replaced by the run's folder
NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


class RunFailed(BearingError):
    """A notebook raised; the executed copy is kept and named."""

    def __init__(self, message: str, *, notebook: str, cell_index: int | None, executed_copy: Path,
                 ename: str | None = None, evalue: str | None = None) -> None:
        self.notebook = notebook
        self.cell_index = cell_index
        self.executed_copy = executed_copy
        self.ename = ename
        self.evalue = evalue
        super().__init__(message)


class ReportExists(BearingError):
    """``reports/<name>/`` exists and ``force`` was not given."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} already exists; pass --force to replace it (the old report is kept otherwise)")


@dataclass(frozen=True)
class Param:
    """One declared notebook parameter (from its ``parameters`` cell)."""

    name: str
    type_name: str
    default: str
    help: str

    @property
    def required(self) -> bool:
        return self.help.lower().startswith("required")


@dataclass
class Step:
    """One notebook to execute, with its parameters; ``output`` is the executed copy's file name."""

    notebook: Path
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.notebook.name


@dataclass
class RunResult:
    """What a successful run published."""

    name: str
    directory: Path
    html: Path
    summary: Path
    notebooks: list[Path]
    verdict: str

    def exit_code(self, *, weekly: bool) -> int:
        """The process exit code for this result (see module docstring)."""
        if not weekly:
            return EXIT_OK
        if self.verdict == "red":
            return EXIT_RED
        if self.verdict not in ("green", "yellow"):
            return EXIT_NO_VERDICT
        return EXIT_OK


def notebook_parameters(path: str | Path) -> dict[str, Param]:
    """The parameters a notebook declares, via :func:`papermill.inspect_notebook`."""
    import papermill

    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"notebook {p} does not exist")
    info = papermill.inspect_notebook(str(p))
    return {n: Param(n, str(d.get("inferred_type_name") or "None"), str(d.get("default")), str(d.get("help") or ""))
            for n, d in info.items()}


def convert(value: Any, param: Param, *, notebook: str = "") -> Any:
    """Convert a command-line string to the parameter's declared type.

    ``int``, ``float``, ``bool`` (true/false/yes/no/1/0), ``str``, and ``list``/``dict``
    (YAML or JSON text). Non-strings pass through. Raises :class:`ParameterError`.
    """
    if not isinstance(value, str):
        return value
    t = param.type_name.replace(" ", "").lower()
    where = f" (notebook {notebook})" if notebook else ""
    try:
        if t == "int":
            return int(value)
        if t == "float":
            return float(value)
        if t == "bool":
            v = value.strip().lower()
            if v in ("true", "yes", "1", "on"):
                return True
            if v in ("false", "no", "0", "off"):
                return False
            raise ValueError(value)
        if t.startswith(("list", "dict")):
            parsed = yaml.safe_load(value)
            want = list if t.startswith("list") else dict
            if not isinstance(parsed, want):
                raise ValueError(value)
            return parsed
    except (ValueError, yaml.YAMLError):
        raise ParameterError(
            f"parameter {param.name!r}{where}: expected {param.type_name}, got {value!r}"
        ) from None
    return value


def check_parameters(steps: list[Step], given: Mapping[str, Any]) -> list[Step]:
    """Route ``given`` parameters to the notebooks that declare them, before running anything.

    Each key goes to every step whose notebook declares it (converted to its type); a key
    no notebook declares, or a ``required`` parameter left unset, raises
    :class:`ParameterError` listing what each notebook accepts.
    """
    declared = {s.notebook: notebook_parameters(s.notebook) for s in steps}
    unknown = [k for k in given if not any(k in d for d in declared.values())]
    if unknown:
        accepted = "; ".join(f"{nb.name}: {', '.join(sorted(d))}" for nb, d in declared.items())
        raise ParameterError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; accepted: {accepted}")
    out = []
    for s in steps:
        d = declared[s.notebook]
        params = {k: convert(v, d[k], notebook=s.notebook.name) for k, v in s.parameters.items() if k in d}
        stray = [k for k in s.parameters if k not in d]
        if stray:
            raise ParameterError(f"internal: {s.notebook.name} does not declare {stray}")
        params.update({k: convert(v, d[k], notebook=s.notebook.name) for k, v in given.items() if k in d})
        missing = [p.name for p in d.values() if p.required and p.name not in params]
        if missing:
            helps = "; ".join(f"{m}: {d[m].help}" for m in missing)
            raise ParameterError(f"{s.notebook.name}: missing required parameter(s) {', '.join(missing)} ({helps})")
        out.append(Step(s.notebook, params))
    return out


def validate_name(name: str) -> str:
    """A report folder name: letters, digits, ``.``, ``_``, ``-``; no path separators."""
    if not _NAME.match(name) or name.startswith(".") or ".failed-" in name:
        raise ParameterError(f"report name {name!r}: expected letters, digits, '.', '_' or '-' (max 100), "
                             "not starting with '.'")
    return name


def iso_week(week: str | None = None, *, today: _dt.date | None = None) -> str:
    """``YYYY-Www``: ``week`` checked, or the last complete ISO week before ``today`` (UTC)."""
    if week is None:
        d = (today or _dt.datetime.now(_dt.UTC).date()) - _dt.timedelta(days=7)
        y, w, _ = d.isocalendar()
        return f"{y}-W{w:02d}"
    m = _WEEK.match(week)
    if not m:
        raise ParameterError(f"week {week!r}: expected an ISO week such as 2026-W48")
    try:
        _dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError:
        raise ParameterError(f"week {week!r}: year {m.group(1)} has no week {m.group(2)}") from None
    return week


def week_bounds(week: str) -> tuple[_dt.datetime, _dt.datetime]:
    """UTC ``[Monday 00:00, next Monday 00:00)`` of an ISO week."""
    m = _WEEK.match(iso_week(week))
    assert m is not None
    start = _dt.datetime.combine(_dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1), _dt.time(),
                                 tzinfo=_dt.UTC)
    return start, start + _dt.timedelta(days=7)


def previous_summary(reports_dir: Path, exclude: str, *, before_week: str | None = None) -> Path | None:
    """The newest other report's ``summary.json`` (by its run time), for "what changed".

    With ``before_week`` (weekly runs) only ISO-week reports of earlier weeks count, so an
    ad-hoc report never becomes "last week".
    """
    best: tuple[str, Path] | None = None
    if not reports_dir.is_dir():
        return None
    for d in reports_dir.iterdir():
        if not d.is_dir() or d.name == exclude or d.name.startswith(".") or ".failed-" in d.name:
            continue
        if before_week is not None and not (_WEEK.match(d.name) and d.name < before_week):
            continue
        s = d / "summary.json"
        try:
            t = str(json.loads(s.read_text(encoding="utf-8"))["provenance"]["run_time_utc"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if best is None or t > best[0]:
            best = (t, s)
    return best[1] if best else None


def _parameters_index(step: Step) -> int:
    import nbformat

    nb = nbformat.read(step.notebook, as_version=4)
    return next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), -1)


def _error_cell(executed: Path) -> int | None:
    """Index, in the executed copy, of the cell that holds the error output."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError):
        return None
    return next((i for i, c in enumerate(nb.cells)
                 if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)


def _execute(step: Step, out_dir: Path, *, progress: bool) -> Path:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = out_dir / step.output
    try:
        papermill.execute_notebook(
            str(step.notebook), str(out), parameters=step.parameters, progress_bar=progress,
            kernel_name="python3", language="python", log_output=False,
        )
    except PapermillExecutionError as exc:
        first = next((ln for ln in str(exc.source).splitlines() if ln.strip()), "")
        # papermill's index counts its injected-parameters cell; people count the source's cells
        src_cell = exc.cell_index + 1 - (1 if step.parameters and exc.cell_index > _parameters_index(step) else 0)
        raise RunFailed(
            f"{step.notebook.name} failed in cell {src_cell} of the notebook (execution count {exc.exec_count}, "
            f"{first[:80]!r}): {exc.ename}: {exc.evalue}",
            notebook=step.notebook.name, cell_index=_error_cell(out), executed_copy=out,
            ename=exc.ename, evalue=exc.evalue,
        ) from None
    return out


def run_report(
    steps: list[Step],
    *,
    name: str,
    reports_dir: str | Path = "reports",
    given: Mapping[str, Any] | None = None,
    force: bool = False,
    progress: bool | None = None,
) -> RunResult:
    """Execute ``steps`` in order and publish ``reports_dir/name/`` atomically.

    Every step gets ``output_dir`` (the temporary folder) and ``report_name`` (unless
    given) when its notebook declares them; the last step must write ``report.html`` and ``summary.json`` there. Raises
    :class:`ParameterError` (before executing), :class:`ReportExists`, or
    :class:`RunFailed`.
    """
    validate_name(name)
    root = Path(reports_dir)
    target = root / name
    if target.exists() and not force:
        raise ReportExists(target)
    given = dict(given or {})
    if "output_dir" in given:
        raise ParameterError("parameter 'output_dir' is set by the runner (the report folder); do not pass it")
    steps = check_parameters(steps, given)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{name}-{secrets.token_hex(4)}"
    tmp.mkdir()
    progress = sys.stdout.isatty() if progress is None else progress
    executed: list[Path] = []
    try:
        for i, s in enumerate(steps, 1):
            if progress:  # one line per notebook, then papermill's per-cell bar (terminal only)
                print(f"[{i}/{len(steps)}] {s.notebook.name}", file=sys.stderr, flush=True)
            s.parameters = {k: v.replace(OUTPUT_DIR_PLACEHOLDER, str(tmp.resolve())) if isinstance(v, str) else v
                            for k, v in s.parameters.items()}
            declared = notebook_parameters(s.notebook)
            if "output_dir" in declared:
                s.parameters["output_dir"] = str(tmp.resolve())
            if "report_name" in declared:
                s.parameters.setdefault("report_name", name)
            executed.append(_execute(s, tmp, progress=progress))
        html, summary = tmp / "report.html", tmp / "summary.json"
        if not html.is_file() or not summary.is_file():
            raise RunFailed(f"{steps[-1].notebook.name} ran but wrote no report.html/summary.json into output_dir",
                            notebook=steps[-1].notebook.name, cell_index=None, executed_copy=executed[-1])
        verdict = str(json.loads(summary.read_text(encoding="utf-8")).get("verdict") or "unknown")
    except RunFailed as exc:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        failed = root / f"{name}.failed-{stamp}"
        os.replace(tmp, failed)
        exc.executed_copy = failed / exc.executed_copy.name
        exc.args = (f"{exc.args[0]}. Executed copy kept: {exc.executed_copy}",)
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _publish(tmp, target, force=force)
    return RunResult(name, target, target / "report.html", target / "summary.json",
                     [target / p.name for p in executed], verdict)


def _publish(tmp: Path, target: Path, *, force: bool) -> None:
    """Rename ``tmp`` to ``target``; with ``force`` swap an existing target out first."""
    old = None
    if target.exists():
        if not force:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ReportExists(target)
        old = target.with_name(f".old-{target.name}-{secrets.token_hex(4)}")
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    from bearing_lib.report.index import write_index

    write_index(target.parent)


__all__ = [
    "EXIT_ERROR",
    "EXIT_EXISTS",
    "EXIT_FAILED",
    "EXIT_NO_VERDICT",
    "EXIT_OK",
    "EXIT_RED",
    "EXIT_USAGE",
    "NOTEBOOK_DIR",
    "OUTPUT_DIR_PLACEHOLDER",
    "Param",
    "ReportExists",
    "RunFailed",
    "RunResult",
    "Step",
    "check_parameters",
    "convert",
    "iso_week",
    "notebook_parameters",
    "previous_summary",
    "run_report",
    "validate_name",
    "week_bounds",
]
