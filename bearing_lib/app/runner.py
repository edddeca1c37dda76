"""Run the report notebooks with papermill and publish ``reports/<name>/`` atomically.

* Parameters are checked **before** any kernel starts (papermill only warns): every
  key must be declared in some notebook's ``parameters`` cell
  (:func:`papermill.inspect_notebook`), values are converted to the declared type, and
  parameters whose help text starts with ``required`` must be given. The inputs they
  name are read as far as they can be without a kernel
  (:func:`bearing_lib.app.pipeline.check_inputs`: files exist, JSON parses, formats are
  detected, traces are not too large, the SLA parses, a production trace's clock is in seconds;
  :func:`~bearing_lib.app.pipeline.check_run`: a limits file or load test of several runs names
  the one the plan uses), and the kernel must be installed.
* One run per report name at a time: ``reports/.lock-<name>`` is held with
  ``fcntl.flock`` for the whole run (see :func:`_acquire_lock` for why flock and not
  ``O_CREAT|O_EXCL``); a second run exits with :class:`ReportLocked`.
* A run writes into ``reports/.tmp-<name>-<random>/`` and is renamed to
  ``reports/<name>/`` only when every notebook succeeded. An existing ``reports/<name>/``
  is never touched without ``force``; with ``force`` the two folders are exchanged in one
  ``renameat2(RENAME_EXCHANGE)`` call (Linux), so a reader, or a run killed at any
  instant, sees the old report or the new one, never a mixture and never neither.
* A failed notebook keeps its executed copy: the temporary folder is renamed to
  ``reports/<name>.failed-<UTC time>/`` and :class:`RunFailed` names the notebook, the
  failing cell (index, execution count, first source line) and that folder. A notebook
  that raised one of bearing's input errors is bad input (:class:`NotebookInputError`,
  exit 1); a cell past the timeout is :class:`NotebookTimeout`.
* ``reports/index.html`` is refreshed after every run that got the lock, whatever its
  outcome; a run killed before it could refresh it is repaired by the next run.
* papermill's per-cell progress bar is shown only when stdout is a terminal.

Exit codes (``bearing report`` / ``bearing weekly``, for cron and Airflow) are the
``EXIT_*`` constants below (each error class carries its ``exit_code``);
``docs/report.md`` lists them.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bearing_lib.app.index import write_index
from bearing_lib.app.weeks import WEEK as _WEEK
from bearing_lib.app.weeks import iso_week, week_bounds
from bearing_lib.common.errors import (
    BearingError,
    KernelNotFound,
    NotebookInputError,
    NotebookTimeout,
    ParameterError,
    ReportError,
    ReportExists,
    ReportLocked,
    ReportsFolderError,
    RunFailed,
    SchemaError,
)
from bearing_lib.report.summary import ReportSummary

EXIT_OK = 0  # report written; verdict green or yellow (or `bearing report`: any verdict)
EXIT_ERROR = BearingError.exit_code  # 1: bad input or parameter, found before or inside a notebook
EXIT_USAGE = 2  # command-line usage error (Typer)
EXIT_RED = 3  # weekly: report written, verdict red
EXIT_FAILED = RunFailed.exit_code  # 4: a notebook failed; executed copy kept in reports/<name>.failed-<time>/
EXIT_EXISTS = ReportExists.exit_code  # 5: reports/<name>/ exists and --force was not given (nothing executed)
EXIT_NO_VERDICT = 6  # weekly: report written but no verdict (limits or plan not available)
EXIT_LOCKED = ReportLocked.exit_code  # 7: another run of the same report is in progress (nothing executed)
EXIT_FOLDER = ReportsFolderError.exit_code  # 8: the reports folder is missing, read-only or full
EXIT_NO_KERNEL = KernelNotFound.exit_code  # 9: the Jupyter kernel is not installed (nothing executed)
EXIT_TIMEOUT = NotebookTimeout.exit_code  # 10: a cell ran past the cell timeout; executed copy kept

OUTPUT_DIR_PLACEHOLDER = "{output_dir}"  # in a parameter value: replaced by the run's folder
NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
DEFAULT_KERNEL = "python3"
DEFAULT_CELL_TIMEOUT_S = 3600.0  # papermill execution_timeout per cell; the longest demo cell took 1.6 s
# Test hook: with BEARING_PAUSE_AT=<stage> the runner writes "<pid> <stage>" to
# BEARING_PAUSE_FILE and sleeps (BEARING_PAUSE_S, default 60 s) at that stage, so a test can
# SIGKILL it there. Stages: locked, running, executed, swapped, published.
PAUSE_STAGES = ("locked", "running", "executed", "swapped", "published")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


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
class NotebookStep:
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
    try:
        info = papermill.inspect_notebook(str(p))
    except Exception as exc:  # noqa: BLE001 - nbformat/papermill raise ValueError, KeyError, their own kinds
        raise ParameterError(f"notebook {p} cannot be read as a notebook ({type(exc).__name__}: {exc})") from None
    return {n: Param(n, str(d.get("inferred_type_name") or "None"), str(d.get("default")), str(d.get("help") or ""))
            for n, d in info.items()}


_PARAM_LINE = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*([^=]+?)\s*=\s*(.+?)\s*(?:#\s*(.*))?$")
REPORT_NOTEBOOKS = ("limits.ipynb", "weekly_report.ipynb")
"""The notebooks ``bearing report`` / ``bearing weekly`` run, in order."""


def declared_parameters(path: str | Path) -> list[Param]:
    """The ``name: type = value  # help`` lines of a notebook's ``parameters`` cell, read as JSON.

    Cheap (no papermill, no nbformat), for ``--help``; :func:`notebook_parameters` is what a run checks
    against. A line that is not of that form is skipped (papermill would not document it either).
    """
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for cell in nb.get("cells") or []:
        if "parameters" not in (cell.get("metadata") or {}).get("tags", []):
            continue
        src = cell.get("source") or ""
        for line in (src if isinstance(src, str) else "".join(src)).splitlines():
            m = _PARAM_LINE.match(line)
            if m:
                out.append(Param(m.group(1), m.group(2).strip(), m.group(3).strip(), (m.group(4) or "").strip()))
    return out


def parameters_help(notebook_dir: str | Path = NOTEBOOK_DIR) -> str:
    """Every ``-p`` parameter of the report notebooks, one line each (the ``--help`` epilog of the report
    commands), so the help can never miss one: it is read from the notebooks themselves."""
    lines = ["Notebook parameters (-p NAME VALUE; a parameter both notebooks declare goes to both):"]
    seen: set[str] = set()
    for name in REPORT_NOTEBOOKS:
        params = [p for p in declared_parameters(Path(notebook_dir) / name) if p.name not in seen]
        if not params:
            continue
        lines.append(f"{name}:")
        for p in params:
            seen.add(p.name)
            default = "" if p.default in ('""', "''") else f" (default {p.default})"
            lines.append(f"- {p.name} {p.type_name}{default}: {p.help}")
    # Typer's help joins the single line breaks of an epilog and keeps the double ones as one
    return "\n\n".join(lines)


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


def check_parameters(steps: list[NotebookStep], given: Mapping[str, Any]) -> list[NotebookStep]:
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
        out.append(NotebookStep(s.notebook, params))
    return out


def validate_name(name: str) -> str:
    """A report folder name: letters, digits, ``.``, ``_``, ``-``; no path separators."""
    if not _NAME.match(name) or name.startswith(".") or ".failed-" in name or name in ("index.html", "index.json"):
        raise ParameterError(f"report name {name!r}: expected letters, digits, '.', '_' or '-' (max 100), "
                             "not starting with '.', not index.html or index.json")
    return name


def previous_summary(reports_dir: Path, exclude: str, *, before_week: str | None = None) -> Path | None:
    """The newest other report's ``summary.json`` (by its run time), for "what changed".

    With ``before_week`` (weekly runs) only ISO-week reports of earlier weeks count, the latest week first, so an
    ad-hoc report, or an older week re-run since, never becomes "last week".
    """
    return _previous(reports_dir, exclude, before_week, "summary.json")


def previous_limits(reports_dir: Path, exclude: str, *, before_week: str | None = None) -> Path | None:
    """The ``limits.json`` of the newest other report that fitted its limits (a load test given, not a limits JSON),
    chosen as :func:`previous_summary` chooses (by run time; for a weekly run the latest earlier ISO week): the
    earlier test whose shape ``--shape-from previous`` offers."""
    return _previous(reports_dir, exclude, before_week, "limits.json")


def _previous(reports_dir: Path, exclude: str, before_week: str | None, file: str) -> Path | None:
    """The newest other report folder holding ``file`` and a readable summary: by its run time, or for a weekly run
    (``before_week``) the latest ISO week before it (a week re-run later with --force is still that week)."""
    best: tuple[str, Path] | None = None
    if not reports_dir.is_dir():
        return None
    for d in reports_dir.iterdir():
        if not d.is_dir() or d.name == exclude or d.name.startswith(".") or ".failed-" in d.name:
            continue
        if before_week is not None and not (_WEEK.match(d.name) and d.name < before_week):
            continue
        if not (d / file).is_file():
            continue
        try:
            t = ReportSummary.read(d / "summary.json").run_time_utc
        except (OSError, SchemaError):  # no summary, or one this bearing cannot compare with: not a candidate
            continue
        if t is None:
            continue
        key = d.name if before_week is not None else t
        if best is None or key > best[0]:
            best = (key, d / file)
    return best[1] if best else None


def _parameters_index(step: NotebookStep) -> int:
    import nbformat

    nb = nbformat.read(step.notebook, as_version=4)
    return next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), -1)


def _source_cell(step: NotebookStep, executed_index: int) -> int:
    """The cell number (from 1) in the source notebook of the executed copy's cell ``executed_index``.

    papermill's index counts its injected-parameters cell; people count the source's cells.
    """
    return executed_index + 1 - (1 if step.parameters and executed_index > _parameters_index(step) else 0)


def _code_cells(step: NotebookStep) -> int:
    import nbformat

    return sum(1 for c in nbformat.read(step.notebook, as_version=4).cells if c.cell_type == "code") + 1


def _error_cell(executed: Path) -> int | None:
    """Index, in the executed copy, of the cell that holds the error output."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError):
        return None
    return next((i for i, c in enumerate(nb.cells)
                 if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)


def _last_started_cell(executed: Path) -> int | None:
    """Index, in the executed copy, of the last cell papermill started (the one a timeout interrupted)."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError):
        return None
    started = [i for i, c in enumerate(nb.cells) if (c.metadata.get("papermill") or {}).get("start_time")]
    return started[-1] if started else None


def _input_error_names() -> set[str]:
    """Class names of bearing's input and parameter errors (every BearingError but the report-run ones)."""
    names: set[str] = set()
    todo = [BearingError]
    while todo:
        cls = todo.pop()
        if not issubclass(cls, ReportError):
            names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


def check_kernel(kernel_name: str = DEFAULT_KERNEL) -> None:
    """Raise :class:`KernelNotFound` unless Jupyter knows ``kernel_name`` (checked before any run)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel:
        known = ", ".join(sorted(KernelSpecManager().find_kernel_specs())) or "none"
        raise KernelNotFound(
            f"the Jupyter kernel {kernel_name!r} is not installed (installed: {known}); nothing ran. Install it "
            f"(python -m ipykernel install --user --name {kernel_name}) or pass --kernel NAME"
        ) from None


def _execute(step: NotebookStep, out_dir: Path, *, progress: bool, kernel_name: str, timeout_s: float | None) -> Path:
    import papermill
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    out = out_dir / step.output
    name = step.notebook.name
    try:
        papermill.execute_notebook(
            str(step.notebook), str(out), parameters=step.parameters, progress_bar=progress,
            kernel_name=kernel_name, language="python", log_output=False, execution_timeout=timeout_s or None,
            # the kernel is local; ipykernel's warning "Kernel is running over TCP without encryption"
            # would be printed on every run: its own log shows errors only (cell errors are in the outputs)
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    except PapermillExecutionError as exc:
        first = next((ln for ln in str(exc.source).splitlines() if ln.strip()), "")
        where = (f"{name} failed in cell {_source_cell(step, exc.cell_index)} of the notebook (execution count "
                 f"{exc.exec_count}, {first[:80]!r}): {exc.ename}: {exc.evalue}")
        cls = NotebookInputError if exc.ename in _input_error_names() else RunFailed
        if cls is NotebookInputError:
            where = f"bad input: {where}"
        raise cls(where, notebook=name, cell_index=_error_cell(out), executed_copy=out,
                  ename=exc.ename, evalue=exc.evalue) from None
    except CellTimeoutError:
        idx = _last_started_cell(out)
        cell = f"cell {_source_cell(step, idx)} of the notebook" if idx is not None else "a cell"
        raise NotebookTimeout(
            f"{name}: {cell} ran longer than the cell timeout of {timeout_s:g} s and was interrupted; "
            "pass --timeout SECONDS (0: no limit) if it needs longer",
            notebook=name, cell_index=idx, executed_copy=out, ename="CellTimeoutError",
        ) from None
    except NoSuchKernel:
        raise KernelNotFound(f"{name}: the Jupyter kernel {kernel_name!r} is not installed; nothing ran") from None
    except DeadKernelError as exc:
        raise RunFailed(
            f"{name}: the kernel died while running ({exc}); the system may have killed it for memory "
            "(see the input size limits in docs/report.md)",
            notebook=name, cell_index=None, executed_copy=out, ename="DeadKernelError", evalue=str(exc),
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT):
            raise RunFailed(f"{name} could not be run: {type(exc).__name__}: {exc}", notebook=name, cell_index=None,
                            executed_copy=out, ename=type(exc).__name__, evalue=str(exc)) from None
        raise _folder_error(out_dir.parent, f"write the executed copy of {name}", exc) from None
    except Exception as exc:  # noqa: BLE001 - papermill/nbclient/zmq raise many kinds; one clear error instead
        raise RunFailed(f"{name} could not be run: {type(exc).__name__}: {exc}", notebook=name, cell_index=None,
                        executed_copy=out, ename=type(exc).__name__, evalue=str(exc)) from None
    return out


def _pause(stage: str) -> None:
    """The test hook (see :data:`PAUSE_STAGES`): nothing unless ``BEARING_PAUSE_AT`` names ``stage``."""
    if os.environ.get("BEARING_PAUSE_AT") != stage:
        return
    marker = os.environ.get("BEARING_PAUSE_FILE")
    if marker:
        Path(marker).write_text(f"{os.getpid()} {stage}\n", encoding="utf-8")
    time.sleep(float(os.environ.get("BEARING_PAUSE_S", "60")))


def _folder_error(root: Path, doing: str, exc: OSError) -> ReportsFolderError:
    reason = exc.strerror or str(exc)
    hint = {errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
            errno.EPERM: "permission denied", errno.ENOSPC: "the disk is full"}.get(exc.errno or 0, reason)
    return ReportsFolderError(f"reports folder {root}: cannot {doing} ({hint}); nothing was published. Pass "
                              "--reports-dir a writable folder", path=root)


def prepare_reports_dir(reports_dir: str | Path) -> Path:
    """The reports folder, created when missing **if its parent exists** (a mistyped path is refused).

    Raises :class:`ReportsFolderError` when it is not a folder, its parent is missing, or it
    cannot be created.
    """
    root = Path(reports_dir)
    if root.exists() and not root.is_dir():
        raise ReportsFolderError(f"reports folder {root} is not a folder; pass --reports-dir a folder", path=root)
    if not root.exists():
        if not root.absolute().parent.is_dir():
            raise ReportsFolderError(f"reports folder {root}: its parent folder {root.absolute().parent} does not "
                                     "exist (a mistyped path?); create it or pass --reports-dir", path=root)
        try:
            root.mkdir(exist_ok=True)
        except OSError as exc:
            raise _folder_error(root, "create it", exc) from None
    return root


@contextlib.contextmanager
def _acquire_lock(root: Path, name: str, *, max_run_s: float | None) -> Iterator[Path]:
    """Hold ``root/.lock-<name>`` for the run, or raise :class:`ReportLocked`.

    Why ``fcntl.flock`` and not ``os.open(O_CREAT | O_EXCL)``: the kernel releases a flock
    when its holder dies, SIGKILL and OOM kills included, so a crashed run can never leave
    a stale lock behind, and no stale-lock rule (pid alive? pid reused? which host?) has to
    guess; taking over an ``O_EXCL`` lock file judged stale also needs a second
    mechanism to stop two runs from taking it over at once. The file is never removed
    (removing a flocked file lets a third run lock a new file of the same name). While
    held, it records ``pid``, ``host``, ``started_utc`` and ``expires_utc`` (start + the
    longest the run can take: cells × cell timeout) for the message a second run prints;
    a holder past ``expires_utc`` is called hung (its cells are bounded, so it should have
    ended): the message says to end it, the lock is not broken. Python opens files
    non-inheritable, so the notebook kernels never hold it. On NFS, Linux maps flock onto
    NFS byte-range locks, which are also released when the holder's host reclaims them.
    """
    path = root / f".lock-{name}"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _folder_error(root, "create the lock file .lock-" + name, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _locked(path, name, fd) from None
        except OSError as exc:  # e.g. ENOLCK: a file system without locks
            raise _folder_error(root, "lock .lock-" + name, exc) from None
        now = _dt.datetime.now(_dt.UTC)
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started_utc": now.isoformat(timespec="seconds"),
                  "expires_utc": (now + _dt.timedelta(seconds=max_run_s)).isoformat(timespec="seconds")
                  if max_run_s else None, "report": name}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        try:
            yield path
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _locked(path: Path, name: str, fd: int) -> ReportLocked:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        holder = {}
    who = (f"pid {holder.get('pid')} on host {holder.get('host')}, started {holder.get('started_utc')}"
           if holder else "its holder has not written its details yet")
    msg = f"another run of report {name!r} is in progress ({who}; lock {path}); nothing ran. Retry when it ends"
    expires = holder.get("expires_utc") if isinstance(holder, dict) else None
    if isinstance(expires, str):
        with contextlib.suppress(ValueError):
            if _dt.datetime.fromisoformat(expires) < _dt.datetime.now(_dt.UTC):
                msg += (f"; it has run past the longest a run can take ({expires}), so it looks hung: end pid "
                        f"{holder.get('pid')} on {holder.get('host')} (the lock is released when it ends)")
    return ReportLocked(msg, lock=path, holder=holder if isinstance(holder, dict) else {})


def _own(root: Path, name: str, prefix: str) -> list[Path]:
    """This report's hidden work folders: ``.tmp-<name>-<hex>`` or ``.old-<name>-<hex>``."""
    pat = re.compile(rf"^\.{prefix}-{re.escape(name)}-[0-9a-f]{{8}}$")
    return sorted((d for d in root.iterdir() if pat.match(d.name)), key=lambda d: d.stat().st_mtime)


def _recover(root: Path, name: str) -> None:
    """Under the lock: undo what a killed run of ``name`` left.

    A two-step swap (:func:`_publish` where the exchange is not available) killed between
    its renames leaves the old report as ``.old-<name>-*`` and no ``<name>``: it is put
    back. Temporary folders of killed runs are removed.
    """
    target = root / name
    olds = _own(root, name, "old")
    if olds and not target.exists():
        os.replace(olds.pop(), target)
    for d in olds + _own(root, name, "tmp"):
        shutil.rmtree(d, ignore_errors=True)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step: Linux ``renameat2(RENAME_EXCHANGE)``.

    Returns False when the C library or the file system does not offer it (then the caller
    falls back to two renames). Called through ctypes: the standard library has no
    binding and no maintained package offers one worth a dependency.
    """
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def refresh_index(reports_dir: str | Path) -> str | None:
    """Rewrite ``reports/index.html``; the problem as text when it cannot be written (never raises)."""
    try:
        write_index(reports_dir)
    except (BearingError, OSError) as exc:
        return f"warning: reports/index.html not refreshed: {exc}"
    return None


def _repair(root: Path, name: str) -> None:
    """Best effort, for a run that stops early (the report exists): what :func:`_recover` does, and
    the index refreshed, when the lock is free; nothing when it is not or the folder is read-only."""
    with contextlib.suppress(ReportLocked, ReportsFolderError, OSError), _acquire_lock(root, name, max_run_s=None):
        _recover(root, name)
        refresh_index(root)


def run_report(
    steps: list[NotebookStep],
    *,
    name: str,
    reports_dir: str | Path = "reports",
    given: Mapping[str, Any] | None = None,
    force: bool = False,
    progress: bool | None = None,
    kernel_name: str = DEFAULT_KERNEL,
    cell_timeout_s: float | None = DEFAULT_CELL_TIMEOUT_S,
) -> RunResult:
    """Execute ``steps`` in order and publish ``reports_dir/name/`` atomically.

    Every step gets ``output_dir`` (the temporary folder) and ``report_name`` (unless
    given) when its notebook declares them; the last step must write ``report.html`` and
    ``summary.json`` there. ``cell_timeout_s`` bounds each cell (papermill
    ``execution_timeout``; ``None`` or 0: no bound).

    Raises, all :class:`BearingError`: :class:`ParameterError` / :class:`InputError` (before
    any kernel starts), :class:`ReportExists`, :class:`KernelNotFound`,
    :class:`ReportsFolderError`, :class:`ReportLocked`, :class:`RunFailed` (and its
    :class:`NotebookInputError`, :class:`NotebookTimeout`).
    """
    validate_name(name)
    root = Path(reports_dir)
    target = root / name
    if target.exists() and not force:
        _repair(root, name)
        raise ReportExists(target)
    given = dict(given or {})
    if "output_dir" in given:
        raise ParameterError("parameter 'output_dir' is set by the runner (the report folder); do not pass it")
    steps = check_parameters(steps, given)
    from bearing_lib.app.pipeline import check_inputs, check_run  # lazily: pipeline imports altair and polars

    for s in steps:
        check_inputs(s.parameters, notebook=s.notebook.name)
    check_run({k: v for s in steps for k, v in s.parameters.items()})
    check_kernel(kernel_name)
    prepare_reports_dir(root)
    max_run_s = sum(_code_cells(s) for s in steps) * cell_timeout_s + 600 if cell_timeout_s else None
    with _acquire_lock(root, name, max_run_s=max_run_s):
        _pause("locked")
        try:
            _recover(root, name)
            if target.exists() and not force:
                raise ReportExists(target)
            result = _run_locked(steps, root, name, progress=progress, kernel_name=kernel_name,
                                 timeout_s=cell_timeout_s, force=force)
        except OSError as exc:
            raise _folder_error(root, "write the report", exc) from None
        finally:  # whatever the outcome: a failed run is listed, a rerun replaces its failed entry
            problem = refresh_index(root)
            if problem:
                print(problem, file=sys.stderr)
    return result


def _run_locked(steps: list[NotebookStep], root: Path, name: str, *, progress: bool | None, kernel_name: str,
                timeout_s: float | None, force: bool) -> RunResult:
    target = root / name
    tmp = root / f".tmp-{name}-{secrets.token_hex(4)}"
    tmp.mkdir()
    progress = sys.stdout.isatty() if progress is None else progress
    executed: list[Path] = []
    try:
        _pause("running")
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
            executed.append(_execute(s, tmp, progress=progress, kernel_name=kernel_name, timeout_s=timeout_s))
        html, summary = tmp / "report.html", tmp / "summary.json"
        if not html.is_file() or not summary.is_file():
            raise RunFailed(f"{steps[-1].notebook.name} ran but wrote no report.html/summary.json into output_dir",
                            notebook=steps[-1].notebook.name, cell_index=None, executed_copy=executed[-1])
        try:
            verdict = ReportSummary.read(summary).verdict
        except SchemaError as exc:
            raise RunFailed(f"{steps[-1].notebook.name} wrote a summary.json that is not a bearing report summary "
                            f"({exc})", notebook=steps[-1].notebook.name, cell_index=None,
                            executed_copy=executed[-1]) from None
        _pause("executed")
    except RunFailed as exc:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        failed = root / f"{name}.failed-{stamp}"
        if failed.exists():  # two failures within the same second
            failed = root / f"{name}.failed-{stamp}-{secrets.token_hex(2)}"
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
    """Put ``tmp`` in place of ``target``: one rename, or with ``force`` one atomic exchange.

    Where the exchange is not available (not Linux, or a file system without it) the old
    report is renamed to ``.old-<name>-*`` first; a run killed between the two renames is
    repaired by the next run (:func:`_recover` puts the old report back).
    """
    if not target.exists():
        os.replace(tmp, target)
        _pause("swapped")
    elif not force:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ReportExists(target)
    elif _exchange(tmp, target):
        _pause("swapped")
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old report
    else:
        old = target.with_name(f".old-{target.name}-{secrets.token_hex(4)}")
        os.replace(target, old)
        try:
            os.replace(tmp, target)
        except BaseException:
            os.replace(old, target)
            raise
        _pause("swapped")
        shutil.rmtree(old, ignore_errors=True)
    _pause("published")


__all__ = [
    "DEFAULT_CELL_TIMEOUT_S",
    "DEFAULT_KERNEL",
    "EXIT_ERROR",
    "EXIT_EXISTS",
    "EXIT_FAILED",
    "EXIT_FOLDER",
    "EXIT_LOCKED",
    "EXIT_NO_KERNEL",
    "EXIT_NO_VERDICT",
    "EXIT_OK",
    "EXIT_RED",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "NOTEBOOK_DIR",
    "OUTPUT_DIR_PLACEHOLDER",
    "PAUSE_STAGES",
    "REPORT_NOTEBOOKS",
    "KernelNotFound",
    "NotebookInputError",
    "NotebookStep",
    "NotebookTimeout",
    "Param",
    "ReportExists",
    "ReportLocked",
    "ReportsFolderError",
    "RunFailed",
    "RunResult",
    "check_kernel",
    "check_parameters",
    "convert",
    "declared_parameters",
    "iso_week",
    "notebook_parameters",
    "parameters_help",
    "prepare_reports_dir",
    "previous_limits",
    "previous_summary",
    "refresh_index",
    "run_report",
    "validate_name",
    "week_bounds",
]
