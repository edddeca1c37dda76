"""``bearing``: the command-line entry point.

Each sub-command lives in its own module under ``bearing_lib.cli`` and exposes
``register(app)``. Start-up is kept cheap: :data:`COMMANDS` names every command with its
one-line help, so ``bearing --help`` and ``bearing --version`` import no command module
(and so none of polars, the loaders, scipy, altair, papermill); a command's module is
imported only when that command runs (or shows its own ``--help``). This is click's
documented lazy-loading pattern (a ``Group`` whose ``list_commands`` / ``get_command`` do
the work), on Typer's group class.

Exit codes: 0 ok; 1 a bearing error (bad input, bad parameter); 2 usage error (Typer);
70 an internal error (a bug: one line on stderr, the traceback in a log file, see
``bearing_lib.cli._common``); the report commands document their own (see ``report``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from bearing_lib.cli._common import DEBUG, EXIT_ERROR, internal_error, print_error
from bearing_lib.common.errors import BearingError

if TYPE_CHECKING:
    from click import Command

# name -> (module defining it, one-line help for `bearing --help`), in the order `--help` lists them.
# tests/cli/test_startup.py checks each line against the command's own docstring.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": (
        "bearing_lib.cli.inspect",
        "Print the detected format, row count, time span, fields present and validation findings.",
    ),
    "limits": (
        "bearing_lib.cli.limits",
        "Fit the highest load each request mix carries while the SLA holds, with a 95% CI.",
    ),
    "next": (
        "bearing_lib.cli.next",
        "Design the follow-up test that resolves a coarse limit, as a file your load-test tool runs.",
    ),
    "report": (
        "bearing_lib.cli.report",
        "Run the report notebook(s) and write reports/<name>/ {report.html, summary.json, executed notebooks}.",
    ),
    "weekly": (
        "bearing_lib.cli.report",
        "Idempotent weekly run for cron/Airflow: writes reports/<ISO week>/ once.",
    ),
    "plan": (
        "bearing_lib.cli.plan",
        "FOS per mix and blended, verdict, allowable capacity, CBU, instances, elasticity, memory, scorecards.",
    ),
    "profile": (
        "bearing_lib.cli.profile",
        "Profile production traffic: per-minute rates, cycles, bursts, mixes, target load, SLO budget.",
    ),
    "export": (
        "bearing_lib.cli.export",
        "Write the plan as Prometheus alert rules, an HPA, a KEDA ScaledObject, Envoy and nginx rate limits.",
    ),
    "bottleneck": (
        "bearing_lib.cli.export",
        "Per-step resource signals and the bottleneck at the limit, from documented rules.",
    ),
    "twin": (
        "bearing_lib.cli.twin",
        "The digital twin: calibrate a server model on a load test, predict other mixes' limits.",
    ),
    "compare": (
        "bearing_lib.cli.compare",
        "Compare deployments under one SLA: limits, per-GPU and per-user throughput, cost, and which to run.",
    ),
    "schema": (
        "bearing_lib.cli.schema",
        "Print the JSON Schema (draft 2020-12, versioned) of a document bearing writes and reads.",
    ),
}

# Exceptions that are the command line's own control flow, never an internal error.
_PASS_THROUGH: tuple[type[BaseException], ...] = (
    typer.Exit,
    typer.Abort,
    TyperException,  # usage errors and the like (click's ClickException)
    EOFError,  # Typer turns it into Abort
    BrokenPipeError,  # `bearing ... | head`: Typer exits quietly
)


def load_module_commands(module: str) -> dict[str, Command]:
    """The click commands a command module registers, by name (imports the module)."""
    sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    importlib.import_module(module).register(sub)
    return dict(typer.main.get_group(sub).commands)


class _LazyCommands(Mapping[str, "Command"]):
    """``name -> command`` that knows the names without importing; a value imports its module."""

    def __init__(self) -> None:
        self._loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in COMMANDS:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded.update(load_module_commands(COMMANDS[name][0]))
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyGroup(TyperGroup):
    """Typer's group with commands imported on demand and one error policy for all of them.

    While the group's own help is formatted, each command is a stand-in carrying only its
    name and one-line help, so the listing imports nothing.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()  # type: ignore[assignment]
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:
            return typer.core.TyperCommand(name=cmd_name, short_help=COMMANDS[cmd_name][1], help=COMMANDS[cmd_name][1])
        return self.commands[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            return super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def invoke(self, ctx: Any) -> Any:
        token = DEBUG.set(bool(ctx.params.get("debug")))
        try:
            return super().invoke(ctx)
        except _PASS_THROUGH:
            raise
        except BearingError as exc:  # a command that let one through: the same one line as everywhere
            print_error(exc)
            raise typer.Exit(getattr(exc, "exit_code", EXIT_ERROR)) from None
        except Exception as exc:  # KeyboardInterrupt and SystemExit are not Exceptions: Typer handles them
            raise typer.Exit(internal_error(exc)) from None
        finally:
            DEBUG.reset(token)

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """The last net: an exception raised outside :meth:`invoke` (rare: while parsing or printing help)."""
        try:
            return super().main(args, *rest, **kwargs)
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            argv = list(sys.argv[1:] if args is None else args)
            token = DEBUG.set("--debug" in argv[: next((i for i, a in enumerate(argv) if a in COMMANDS), len(argv))])
            try:
                code = internal_error(exc)
            finally:
                DEBUG.reset(token)
            if kwargs.get("standalone_mode", True):
                sys.exit(code)
            return code


app = typer.Typer(
    name="bearing",
    cls=LazyGroup,
    help="How much load an inference service carries while meeting its SLA, per request mix.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from bearing_lib.common.version import __version__

        typer.echo(f"bearing {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    debug: bool = typer.Option(
        False, "--debug", help="Show the full traceback of any error (otherwise one line; internal errors go to a log)."
    ),
) -> None:
    """bearing: SLA-constrained capacity limits, factor of safety and capacity reports."""


if __name__ == "__main__":  # pragma: no cover
    app()
