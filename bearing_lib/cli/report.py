"""``bearing report`` and ``bearing weekly``: run the report notebooks, publish ``reports/<name>/``.

Exit codes (cron / Airflow act on them; also in ``docs/report.md``; each comes from the
error class's ``exit_code`` in ``bearing_lib.common.errors``):

====  ==================================================================================
0     report written (``weekly``: verdict green or yellow)
1     bad input or parameter: unknown / missing / mistyped ``-p``, unreadable or too large
      file, bad ``--week``; found before any kernel starts, or by a notebook (then the
      executed copy is kept in ``reports/<name>.failed-<time>/``); no report written
2     command-line usage error
3     ``weekly`` only: report written, verdict **red**
4     a notebook failed: the executed copy is kept in ``reports/<name>.failed-<time>/``
5     ``reports/<name>/`` already exists and ``--force`` was not given (nothing ran)
6     ``weekly`` only: report written but without a verdict (limits or plan not available)
7     another run of the same report is in progress (its lock is held; nothing ran)
8     the reports folder is missing its parent, not a folder, read-only or full
9     the Jupyter kernel is not installed (nothing ran)
10    a cell ran past ``--timeout``: interrupted, executed copy kept as for 4
====  ==================================================================================
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from bearing_lib.app import runner
from bearing_lib.cli._common import OPTION_HELP, parse_loader_options, print_error
from bearing_lib.common.errors import BearingError, ParameterError
from bearing_lib.common.yamlfile import read_yaml

DEMO_LOADTEST = "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
DEMO_PRODUCTION = "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
# Why this SLA (docs/report.md, "The demo"): an interactive chat service wants the first
# token within 1 s. The sweep's sharegpt steps hold 44-200 requests each, fewer than the
# 368 a P99 needs for a 95% CI, so a P99 clause could only ever prove failures; P95 is
# supported at most steps and yields a limit with a CI. LMBenchmark drops failed requests
# from its CSV; bearing puts them back from the holes in its fixed launch schedule
# (loaders/lmbench.py), so the error clause is judged: on this sweep 1.6 % of the requests
# fail even at 0.5 rps (those that outlive the ~30 s timeout in front of the engine).
DEMO_SLA = "p95(ttft) <= 1s and error_rate <= 1%"
DEMO_MIXES = "auto"
# The plan covers one run: the sharegpt workload (multi-turn chat, median input ~ the
# Azure conversation trace's) stands for the production traffic.
DEMO_RUN = "llm-d-70b-2replicas/sharegpt"
# Conditions the LMBenchmark CSVs do not carry, from data/loadtests/.../ATTRIBUTION.md. The memory plan
# takes the model's architecture from it (Llama-3-70B is the llama-3.1-70b preset's; no default model).
DEMO_MODEL = "Llama-3-70B"
DEMO_TESTED_INSTANCES = 2  # the bundled sweeps ran against two replicas (data/loadtests/.../ATTRIBUTION.md)
DEMO_HARDWARE = "2 replicas on OpenShift, llm-d stack (llm-d-benchmark exp-2; GPU type not stated in the source)"


def demo_parameters(root: Path) -> dict[str, Any]:
    """Parameters of ``--demo``: bundled LMBenchmark sweep as the load test, Azure conversation trace as production."""
    return {
        "loadtest": str(root / DEMO_LOADTEST),
        "sla": DEMO_SLA,
        "mixes": DEMO_MIXES,
        "production_trace": str(root / DEMO_PRODUCTION),
        "model": DEMO_MODEL,
        "hardware": DEMO_HARDWARE,
        "tested_instances": DEMO_TESTED_INSTANCES,
        "run": DEMO_RUN,
        "tier": "standard",
    }


def _params(pairs: list[tuple[str, str]] | None, params_file: Path | None) -> dict[str, Any]:
    given: dict[str, Any] = {}
    if params_file is not None:
        doc = read_yaml(params_file, "the parameters file") or {}
        if not isinstance(doc, dict):
            raise ParameterError(f"{params_file}: expected a mapping of parameter: value")
        given.update({str(k): v for k, v in doc.items()})
    for k, v in pairs or []:
        given[k] = v
    return given


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    """``-p KEY VALUE`` / ``--parameter KEY VALUE`` pairs from the extra arguments."""
    out = []
    i = 0
    while i < len(args):
        if args[i] not in ("-p", "--parameter"):
            raise ParameterError(f"unexpected argument {args[i]!r}; notebook parameters are given as -p KEY VALUE")
        if len(args) - i < 3:
            raise ParameterError(f"{args[i]} needs a KEY and a VALUE (got {' '.join(args[i + 1:]) or 'nothing'})")
        out.append((args[i + 1], args[i + 2]))
        i += 3
    return out


@dataclass(frozen=True)
class RunOptions:
    """The options ``bearing report`` and ``bearing weekly`` share, as one typed value (declared once, in
    :data:`RUN_OPTIONS`; :func:`run_options` gives a command all of them).

    ``format``/``mapping``/``option`` are the load test's loader settings (``limits.ipynb``: ``format``,
    ``mapping``, ``options``), ``production_*`` the production trace's (``weekly_report.ipynb``:
    ``production_format``, ``production_mapping``, ``production_options``), as ``bearing limits`` and
    ``bearing profile`` take them (a mapping with no format reads the file as ``generic``).
    """

    params_file: Path | None = None
    reports_dir: Path = Path("reports")
    notebooks: Path = runner.NOTEBOOK_DIR
    timeout: float = runner.DEFAULT_CELL_TIMEOUT_S
    kernel: str = runner.DEFAULT_KERNEL
    format: str | None = None
    mapping: Path | None = None
    option: tuple[str, ...] = ()
    production_format: str | None = None
    production_mapping: Path | None = None
    production_option: tuple[str, ...] = ()
    run: str | None = None
    model: str | None = None
    hardware: str | None = None
    tested_instances: int | None = None
    estimator: str | None = None
    shape_from: str | None = None

    def flag_parameters(self) -> dict[str, Any]:
        """The notebook parameters the flags set (``--run X`` is ``-p run X``); a flag not given sets none."""
        out: dict[str, Any] = {}
        if self.tested_instances is not None and self.tested_instances < 1:
            raise ParameterError(f"--tested-instances: expected an integer >= 1, got {self.tested_instances}")
        for key in ("format", "mapping", "production_format", "production_mapping", "run", "model", "hardware",
                    "tested_instances", "estimator", "shape_from"):
            value = getattr(self, key)
            if value is not None:
                out[key] = str(value) if isinstance(value, Path) else value
        if self.option:
            out["options"] = parse_loader_options(self.option)
        if self.production_option:
            out["production_options"] = parse_loader_options(self.production_option, flag="--production-option")
        return out

    def given(self, args: list[str]) -> dict[str, Any]:
        """The notebook parameters of one invocation: ``--params-file``, then ``-p KEY VALUE`` from the extra
        ``args``, then the flags (a key set both by a flag and by ``-p``/``--params-file`` is refused)."""
        return _merge_flags(_params(_pairs(args), self.params_file), self.flag_parameters())


RUN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "params_file": (Path | None, typer.Option(None, "--params-file", help="YAML file of parameter: value (then -p "
                                              "overrides).")),
    "reports_dir": (Path, typer.Option(Path("reports"), "--reports-dir", help="Where report folders are written.")),
    "notebooks": (Path, typer.Option(runner.NOTEBOOK_DIR, "--notebooks", help="Folder holding the report notebooks.")),
    "timeout": (float, typer.Option(runner.DEFAULT_CELL_TIMEOUT_S, "--timeout", min=0,
                                    help="Seconds one notebook cell may run before it is interrupted (exit 10); 0: "
                                         "no limit.")),
    "kernel": (str, typer.Option(runner.DEFAULT_KERNEL, "--kernel", help="Jupyter kernel the notebooks run in.")),
    "format": (str | None, typer.Option(None, "--format", help="Format of the load test (-p loadtest); default: "
                                        "detected. Same as -p format.")),
    "mapping": (Path | None, typer.Option(None, "--mapping", help="Column mapping (YAML) for a load test in your own "
                                          "per-request layout; reads it as --format generic. Same as -p mapping.")),
    "option": (list[str], typer.Option([], "--option", help="Loader option of the load test. " + OPTION_HELP)),
    "production_format": (str | None, typer.Option(None, "--production-format", help="Format of the production "
                                                   "trace; default: detected. Same as -p production_format.")),
    "production_mapping": (Path | None, typer.Option(None, "--production-mapping", help="Column mapping (YAML) for "
                                                     "a production trace in your own layout; reads it as generic.")),
    "production_option": (list[str], typer.Option([], "--production-option", help="Loader option of the production "
                                                  "trace, KEY=VALUE (repeatable), e.g. --production-option "
                                                  "time_unit=ms.")),
    "run": (str | None, typer.Option(None, "--run", help="The load-test run the plan uses when the limits hold "
                                     "several (the error lists them). Same as -p run.")),
    "model": (str | None, typer.Option(None, "--model", help="The model the load test served, when its files do "
                                       "not say; also picks the memory plan's architecture (no default model). "
                                       "Same as -p model.")),
    "hardware": (str | None, typer.Option(None, "--hardware", help="The hardware behind the load test, e.g. '2 x "
                                          "8xA100-80GB' (conditions). Same as -p hardware.")),
    "tested_instances": (int | None, typer.Option(None, "--tested-instances", help="Serving instances (replicas) "
                                                  "the load test drove; the plan sizes in this unit. Same as -p "
                                                  "tested_instances.")),
    "estimator": (str | None, typer.Option(None, "--estimator", help="A request trace's estimator: model (the "
                                           "default: one model of every step's counts; load-point tables always use "
                                           "it) or pooled (the pooled exceedance crossing, its interval widened to "
                                           "the step grid). Same as -p estimator (docs/limits.md).")),
    "shape_from": (str | None, typer.Option(None, "--shape-from", help="The limits JSON of an earlier, separate test "
                                            "of the same service: the model takes its shape where this test's steps "
                                            "favour it (a narrower interval). 'previous': the limits.json of the "
                                            "newest earlier report that fitted limits; one that offers no shape "
                                            "(none in it, the same load-test files) is left out with a note. Not "
                                            "with --estimator pooled. Same as -p shape_from.")),
}
"""The options both report commands take, declared once: ``name -> (type, typer.Option)``; the names are
:class:`RunOptions`' fields."""


def run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a Typer command every option of :data:`RUN_OPTIONS`, handed to it as one ``options: RunOptions``.

    The command declares its own options as usual and takes a keyword ``options``; Typer reads the returned
    function's signature: the command's own parameters, then those of :data:`RUN_OPTIONS` in their order.
    """
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "options"]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=tp)
              for name, (tp, info) in RUN_OPTIONS.items()]

    @functools.wraps(command)
    def with_run_options(**kwargs: Any) -> None:
        given = {name: kwargs.pop(name) for name in RUN_OPTIONS}
        for name in ("option", "production_option"):
            given[name] = tuple(given[name] or ())
        return command(**kwargs, options=RunOptions(**given))

    signature = inspect.Signature([*own, *shared], return_annotation=None)
    with_run_options.__signature__ = signature  # type: ignore[attr-defined]
    with_run_options.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return with_run_options


def _merge_flags(given: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """``given`` (``-p`` and ``--params-file``) plus the flags' parameters; a key set both ways is refused."""
    both = sorted(k for k in flags if k in given)
    if both:
        raise ParameterError(f"parameter(s) {', '.join(both)} given both as a flag (--{both[0].replace('_', '-')}) "
                             "and as -p / --params-file; give each once")
    return {**given, **flags}


def _steps(given: dict[str, Any], notebooks: Path, out_hint: str) -> list[runner.NotebookStep]:
    """limits.ipynb first when a load test is given (its JSON feeds the weekly notebook)."""
    steps: list[runner.NotebookStep] = []
    weekly = runner.NotebookStep(notebooks / "weekly_report.ipynb")
    if "loadtest" in given:
        if "limits_json" in given:
            raise ParameterError("give either loadtest (limits are fitted in this run) or limits_json, not both")
        steps.append(runner.NotebookStep(notebooks / "limits.ipynb", {"output_json": f"{out_hint}/limits.json"}))
        weekly.parameters["limits_json"] = f"{out_hint}/limits.json"
    steps.append(weekly)
    return steps


def _run(*, name: str, given: dict[str, Any], options: RunOptions, force: bool, weekly: bool) -> int:
    # the notebooks' parameters (papermill's edge: names to plain values), built here without changing the caller's
    prev = runner.previous_summary(options.reports_dir, exclude=name, before_week=name if weekly else None)
    given = {"previous_summary": str(prev) if prev else "", "report_name": name, **given}
    earlier = _earlier_shape(given, options.reports_dir, name, weekly)
    if earlier is not None:
        given = {**given, **earlier.parameters()}
    # The limits JSON goes into the run's own (temporary, then published) folder: the
    # runner substitutes the placeholder once it has created that folder.
    steps = _steps(given, options.notebooks, runner.OUTPUT_DIR_PLACEHOLDER)
    try:
        result = runner.run_report(steps, name=name, reports_dir=options.reports_dir, given=given, force=force,
                                   kernel_name=options.kernel, cell_timeout_s=options.timeout or None)
    except BearingError as exc:  # each class carries its exit code (docs/report.md, "Exit codes")
        print_error(exc)
        return exc.exit_code
    typer.echo(f"verdict: {result.verdict}", err=True)
    for line in _said(result.summary):
        typer.echo(line, err=True)
    typer.echo(str(result.html))
    return result.exit_code(weekly=weekly)


@dataclass(frozen=True)
class EarlierShape:
    """What ``shape_from previous`` resolves to: the limits.json of the newest earlier report that fitted limits
    (``None``: there is none, and the limits say so in a note), offered, not required (last week's limits may be of
    the same files, or carry no shape)."""

    path: Path | None

    def parameters(self) -> dict[str, str | bool]:
        """The notebook parameters it sets (papermill's edge: names to plain values). The path as the reports
        folder was given (relative to the working directory, which the notebooks share): the limits name it so in
        ``prior_from`` and their notes."""
        from bearing_lib.app.pipeline import SHAPE_FROM_PREVIOUS

        return {"shape_from": str(self.path) if self.path is not None else SHAPE_FROM_PREVIOUS,
                "shape_required": False}


def _earlier_shape(given: Mapping[str, Any], reports_dir: Path, name: str, weekly: bool) -> EarlierShape | None:
    """What ``shape_from previous`` resolves to (``None`` for any other ``shape_from``, or none): the newest earlier
    report's limits (for a weekly run, of an earlier week). Checks first that the fitting parameters have limits to
    fit."""
    from bearing_lib.app.pipeline import SHAPE_FROM_PREVIOUS

    fitting = [k for k in ("estimator", "shape_from", "shape_required") if k in given]
    if fitting and "loadtest" not in given:
        raise ParameterError(f"{', '.join('--' + k.replace('_', '-') for k in fitting)}: how this run fits the "
                             "limits, and it fits none: no load test is given (the limits come from limits_json); "
                             "give the load test instead (-p loadtest PATH -p sla TEXT), or leave them out")
    if str(given.get("shape_from") or "").strip() != SHAPE_FROM_PREVIOUS:
        return None
    if "shape_required" in given:
        raise ParameterError("shape_from previous decides shape_required itself (an earlier report's limits are "
                             "offered, not required); leave shape_required out, or give the earlier file's path")
    return EarlierShape(runner.previous_limits(reports_dir, exclude=name, before_week=name if weekly else None))


def _said(summary: Path) -> list[str]:
    """What the report says first, one line each: its headline, then the fidelity of the test to production
    (the report's sentence, :meth:`bearing_lib.fidelity.Fidelity.sentence`) when it was assessed."""
    from bearing_lib.common.errors import SchemaError
    from bearing_lib.report.summary import ReportSummary

    try:
        s = ReportSummary.read(summary)
    except (OSError, SchemaError):  # the runner validated it; a file removed since has nothing to print
        return []
    return [line for line in (s.headline, s.fidelity.sentence() if s.fidelity is not None else "") if line]


def register(app: typer.Typer) -> None:
    # `-p KEY VALUE` (repeatable) is parsed from the extra arguments: Typer has no
    # repeatable two-value option.
    ctx_settings = {"allow_extra_args": True, "ignore_unknown_options": True}
    epilog = runner.parameters_help(runner.NOTEBOOK_DIR)

    @app.command("report", context_settings=ctx_settings, epilog=epilog)
    @run_options
    def report_cmd(
        ctx: typer.Context,
        name: str | None = typer.Option(None, "--name", help="Folder name under reports/ (default: this ISO week; "
                                                               "'demo' with --demo)."),
        demo: bool = typer.Option(False, "--demo", help="Full report from the bundled real data (what `make report` "
                                                          "runs); replaces an earlier demo report."),
        force: bool = typer.Option(False, "--force", help="Replace an existing reports/<name>/."),
        compare: list[str] = typer.Option([], "--compare", help="A deployment to compare (repeatable; NAME=PATH "
                                          "names it): load tests or limits JSON files, compared under the report's "
                                          "SLA, production profile and tier; or one comparison JSON from bearing "
                                          "compare --json. Same as -p compare '[A, B]' (docs/compare.md)."),
        *,
        options: RunOptions,
    ) -> None:
        """Run the report notebook(s) and write reports/<name>/ {report.html, summary.json, executed notebooks}.

        Notebook parameters: -p KEY VALUE (repeatable; all listed below); unknown or mistyped keys are
        refused before anything runs. With -p loadtest PATH -p sla TEXT the limits are fitted first
        (limits.ipynb); otherwise -p limits_json PATH is required. A load test in which no step can be
        judged still gives a report (no verdict: why, what would support a limit, the follow-up test).
        Prints the report path. Exit codes: see `bearing weekly --help`.
        """
        try:
            given = options.given(ctx.args)
            if compare:
                given["compare"] = list(compare)
            if demo:
                given = {**demo_parameters(runner.NOTEBOOK_DIR.parent), **given}
            run_name = runner.validate_name(name or ("demo" if demo else runner.iso_week(_this_week())))
        except BearingError as exc:
            print_error(exc)
            raise typer.Exit(runner.EXIT_ERROR) from None
        code = _run(name=run_name, given=given, options=options, force=force or (demo and name is None),
                    weekly=False)
        raise typer.Exit(code)

    @app.command("weekly", context_settings=ctx_settings, epilog=epilog)
    @run_options
    def weekly_cmd(
        ctx: typer.Context,
        week: str | None = typer.Option(None, "--week", help="ISO week, e.g. 2026-W48 (default: the last complete "
                                                              "week, UTC). Names the folder and the traffic window."),
        force: bool = typer.Option(False, "--force", help="Replace an existing reports/<week>/ (never done without)."),
        demo: bool = typer.Option(False, "--demo", help="Use the bundled real data; its trace is from 2023, so the "
                                                          "whole trace is used whatever the week."),
        window: str | None = typer.Option(None, "--window", help="Traffic window START..END instead of the "
                                          "week: elapsed time for a relative-clock trace (Mooncake, ServeGen), "
                                          "e.g. 0h..1h; ISO times for a wall-clock one. Same as -p window."),
        *,
        options: RunOptions,
    ) -> None:
        """Idempotent weekly run for cron/Airflow: writes reports/<ISO week>/ once.

        Notebook parameters: -p KEY VALUE (repeatable), or --params-file FILE.
        A trace with a relative clock has no calendar weeks: give --window START..END in elapsed
        time (e.g. --window 0h..1h); the week then only names the folder.

        Exit codes: 0 green/yellow; 1 bad parameter or input; 3 verdict red; 4 a notebook failed
        (executed copy kept in reports/<week>.failed-<time>/); 5 the week exists (use --force);
        6 written without a verdict (limits or plan not available); 7 another run of the week is in
        progress; 8 the reports folder cannot be written; 9 the kernel is not installed; 10 a cell
        ran past --timeout.
        """
        try:
            wk = runner.iso_week(week)
            given = options.given(ctx.args)
            if window is not None:
                given["window"] = window
            if demo:
                given = {**demo_parameters(runner.NOTEBOOK_DIR.parent), "week": "", **given}
            elif str(given.get("window") or "").strip():
                given.setdefault("week", "")  # the window, not the week, cuts the traffic
            else:
                given.setdefault("week", wk)
        except BearingError as exc:
            print_error(exc)
            raise typer.Exit(runner.EXIT_ERROR) from None
        code = _run(name=wk, given=given, options=options, force=force, weekly=True)
        raise typer.Exit(code)


def _this_week() -> str:
    y, w, _ = _dt.datetime.now(_dt.UTC).date().isocalendar()
    return f"{y}-W{w:02d}"


__all__ = ["DEMO_SLA", "RUN_OPTIONS", "RunOptions", "demo_parameters", "register", "run_options"]
