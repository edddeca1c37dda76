"""Helpers shared by CLI commands: turning bearing errors into clean exits."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from bearing_lib.errors import BearingError


@contextlib.contextmanager
def bearing_errors() -> Iterator[None]:
    """Print a :class:`BearingError` as ``error: <message>`` on stderr and exit 1."""
    try:
        yield
    except BearingError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=1) from None
