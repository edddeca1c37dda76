"""``bearing inspect PATH``: what bearing sees in a file or folder (``bearing_lib.data.describe`` says it)."""

from __future__ import annotations

from pathlib import Path

import typer

from bearing_lib.cli._common import OPTION_HELP, bearing_errors, merge_loader_options, parse_loader_options


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_cmd(
        path: Path = typer.Argument(..., help="A trace or load-test file or folder (gzip is fine)."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
        mapping: Path | None = typer.Option(
            None, "--mapping", help="Column mapping (YAML) for a per-request table (columns, units, status_map); "
            "implies --format generic."
        ),
        skip_bad_lines: bool = typer.Option(
            False, "--skip-bad-lines", help="JSON lines: drop lines that are not JSON objects and report how many."
        ),
        option: list[str] = typer.Option([], "--option", help=OPTION_HELP),
    ) -> None:
        """Print the detected format, row count, time span, fields present and validation findings."""
        from bearing_lib.data.describe import describe_dataset
        from bearing_lib.loaders.registry import call_loader, resolve
        from bearing_lib.loaders.source import InputSource

        with bearing_errors():
            options = merge_loader_options(parse_loader_options(option), mapping=mapping,
                                           skip_bad_lines=True if skip_bad_lines else None)
            folder = InputSource(path)
            spec, source = resolve(folder, format or ("generic" if mapping is not None else None))
            ds = call_loader(spec, source, options)
            if source is not folder:
                typer.echo(f"read as: {source.path} (the one recognisable file in the folder)")
            for line in describe_dataset(ds).lines():
                typer.echo(line)


__all__ = ["register"]
