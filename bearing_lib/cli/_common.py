"""Helpers shared by CLI commands: turning bearing errors into clean exits, loader options."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator

import typer

from bearing_lib.common.errors import BearingError, ParameterError

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
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=1) from None


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


__all__ = ["OPTION_HELP", "bearing_errors", "merge_loader_options", "parse_loader_options"]
