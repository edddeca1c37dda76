"""Helpers shared by CLI commands: turning errors into clean exits, the ``--debug`` switch, loader options.

No command prints a traceback unless ``--debug`` is given:

- a :class:`BearingError` prints ``error: <message>`` on stderr and exits 1;
- any other exception prints one line, ``internal error: <ExcType>: <message> (full traceback
  in <log>; rerun with --debug)``, writes the traceback to a log file (:func:`log_dir`) and
  exits :data:`EXIT_INTERNAL` (70, ``EX_SOFTWARE`` of sysexits.h).

With ``--debug`` the traceback is printed on stderr as well (same exit codes).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path

import typer

from bearing_lib.common.errors import BearingError, ParameterError

EXIT_ERROR = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h): an internal software error
LOG_DIR_ENV = "BEARING_LOG_DIR"
MESSAGE_MAX = 300  # characters of an internal error's message on the one line (the log has all of it)

# Set by the top-level group for the length of one invocation (``bearing --debug ...``).
DEBUG: contextvars.ContextVar[bool] = contextvars.ContextVar("bearing_debug", default=False)


def log_dir() -> Path:
    """Where internal-error tracebacks are written.

    ``$BEARING_LOG_DIR`` when set; else the user's log folder (platformdirs: ``~/.local/state/bearing/log``
    on Linux, ``~/Library/Logs/bearing`` on macOS, ``%LOCALAPPDATA%\\bearing\\Logs`` on Windows).
    """
    env = os.environ.get(LOG_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_log_dir("bearing", appauthor=False))


def write_crash_log(exc: BaseException) -> Path | None:
    """Write the traceback of ``exc`` (with the command line and versions) to a new file; its path, or None.

    Falls back to the system temp folder when the log folder cannot be written; None when neither can.
    """
    from bearing_lib.common.version import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    text = (
        f"bearing {__version__}, Python {sys.version.split()[0]}, {stamp}\n"
        f"command: {' '.join(sys.argv)}\n\n" + "".join(traceback.format_exception(exc))
    )
    for folder in (log_dir(), Path(tempfile.gettempdir()) / "bearing-logs"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"internal-error-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    return None


def print_error(exc: BaseException) -> None:
    """``error: <message>`` on stderr (after the traceback under ``--debug``)."""
    if DEBUG.get():
        typer.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    typer.echo(f"error: {exc}", err=True)


def internal_error(exc: BaseException) -> int:
    """Report an unexpected exception in one line (traceback to the log, or on stderr under ``--debug``)."""
    if DEBUG.get():
        typer.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    path = write_crash_log(exc)
    where = f"full traceback in {path}" if path else "the traceback could not be written to a log file"
    message = " ".join(str(exc).split()) or "(no message)"
    if len(message) > MESSAGE_MAX:
        message = message[: MESSAGE_MAX - 1] + "…"
    typer.echo(f"internal error: {type(exc).__name__}: {message} ({where}; rerun with --debug)", err=True)
    return EXIT_INTERNAL

OPTION_HELP = (
    "A loader option KEY=VALUE (repeatable); VALUE is read as JSON when it parses (true, 5, [\"a\", \"b\"]), "
    "else as text. E.g. --option ttfb_as_ttft=true, --option 'columns=[\"timeStamp\",\"elapsed\",...]'."
)


@contextlib.contextmanager
def bearing_errors() -> Iterator[None]:
    """Print a :class:`BearingError` as ``error: <message>`` on stderr and exit 1."""
    try:
        yield
    except BearingError as exc:
        print_error(exc)
        raise typer.Exit(code=getattr(exc, "exit_code", EXIT_ERROR)) from None


def parse_loader_options(items: Iterable[str], *, flag: str = "--option") -> dict[str, object]:
    """Loader keyword options from ``KEY=VALUE`` strings (the repeatable ``--option`` flag).

    ``VALUE`` is parsed as JSON when it parses (``true`` → True, ``5`` → 5, ``[...]`` → a
    list, ``"5"`` → the text 5), else kept as text (``timestamp=end``). A value that starts
    with ``[`` or ``{`` must be valid JSON (it is meant as a list or object). Which options a
    format takes is checked by the loader registry (``registry.call_loader``).

    Raises
    ------
    ParameterError
        For an item without ``=``, a key that is not a Python identifier, a key given twice,
        or a ``[``/``{`` value that is not valid JSON; the message names the item.
    """
    out: dict[str, object] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"{flag} {item!r}: expected KEY=VALUE, e.g. {flag} ttfb_as_ttft=true")
        if not key.isidentifier():
            raise ParameterError(f"{flag} {item!r}: {key!r} is not an option name (letters, digits, underscores)")
        if key in out:
            raise ParameterError(f"{flag} {key} given twice")
        try:
            value: object = json.loads(raw)
        except json.JSONDecodeError as exc:
            if raw.lstrip().startswith(("[", "{")):
                raise ParameterError(
                    f"{flag} {item!r}: the value looks like JSON but does not parse ({exc.msg} at character "
                    f"{exc.pos}); quote it for the shell, e.g. {flag} '{key}=[\"a\", \"b\"]'"
                ) from None
            value = raw
        out[key] = value
    return out


def merge_loader_options(options: dict[str, object], **named: object) -> dict[str, object]:
    """``options`` plus the command's own loader flags (those not None); one given both ways is an error."""
    for key, value in named.items():
        if value is None:
            continue
        if key in options:
            raise ParameterError(f"option {key!r} given both as its own flag and as --option {key}=...")
        options[key] = value
    return options


__all__ = [
    "DEBUG",
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "LOG_DIR_ENV",
    "MESSAGE_MAX",
    "OPTION_HELP",
    "bearing_errors",
    "internal_error",
    "log_dir",
    "merge_loader_options",
    "parse_loader_options",
    "print_error",
    "write_crash_log",
]
