"""``bearing``: the command-line entry point.

Each sub-command lives in its own module under ``bearing_lib.cli`` and exposes
``register(app)``. Exit codes: 0 ok; 1 a bearing error (bad input, bad parameter);
2 usage error (Typer); the report commands document their own (see ``report``).
"""

from __future__ import annotations

import typer

from bearing_lib.cli import inspect as _inspect
from bearing_lib.cli import limits as _limits
from bearing_lib.cli import next as _next
from bearing_lib.cli import plan as _plan
from bearing_lib.cli import profile as _profile
from bearing_lib.cli import report as _report

app = typer.Typer(
    name="bearing",
    help="How much load an inference service carries while meeting its SLA, per request mix.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



def _version(value: bool) -> None:
    if value:
        from bearing_lib import __version__

        typer.echo(f"bearing {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """bearing: SLA-constrained capacity limits, factor of safety and capacity reports."""


_inspect.register(app)
_limits.register(app)
_next.register(app)
_report.register(app)
_plan.register(app)
_profile.register(app)


if __name__ == "__main__":  # pragma: no cover
    app()
