"""``bearing limits TRACE... --sla "..." --json OUT``: SLA-constrained limits per request mix.

Exit codes: 0 limits written; 1 a bearing error (bad input, bad SLA, bad parameter).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import typer

from bearing_lib.cli._common import OPTION_HELP, bearing_errors, merge_loader_options, parse_loader_options
from bearing_lib.common.errors import ParameterError, SLAParseError


def _span(ends) -> str:
    """Two ends as "lo to hi" ("20,000 to 30,000"; "[20,000, 30,000]" read as three numbers), an open end "open"."""
    from bearing_lib.common.format import fmt_sig

    lo, hi = ends if ends is not None else (None, None)
    if lo is None and hi is None:
        return "–"
    return f"{fmt_sig(lo) if lo is not None else 'open'} to {fmt_sig(hi) if hi is not None else 'open'}"


def _table(result) -> None:
    from rich.console import Console
    from rich.table import Table

    from bearing_lib.common.format import fmt_sig

    console = Console(highlight=False, soft_wrap=True)
    t = Table(title=f"Limits for SLA: {result.sla_text}", title_justify="left")
    for col in ("run", "mix", "share", "Q_ult (offered)", "95% CI", "bracket", "achieved", "binding"):
        # a run's name folds, not cut: at 80 columns "Qwen_Qwe…" twice or "2026042…" three times named no run
        # (round 23); the other columns wrap at words
        t.add_column(col, overflow="fold" if col == "run" else "ellipsis")
    for m in result.limits:
        q = m.q_ult
        est = q.estimate
        # significant digits, as the CI and bracket columns beside it (fixed decimals read "≥ 6.0000 concurrency")
        short = ("unbounded" if est.bound == "unbounded" else
                 f"{est.sign}{fmt_sig(float(est.value))} {est.unit or ''}".rstrip() if est.value is not None
                 else f"– {q.unit or ''}")
        if q.censored == "not_monotone":
            short += " (not monotone)"
        if q.capped:  # held at the saturated throughput (docs/limits.md): the estimate is an upper bound ("≤")
            short = f"{short} (capped)"
        achieved = q.achieved.text(3, ci=False, missing="–")
        if q.achieved_lower_bound:  # read over a busy span (docs/limits.md): the server may have completed more
            achieved = f"{achieved} (lower bound)"
        t.add_row(m.run_id, m.mix.name, f"{m.share:.0%}", short, _span(q.ci95), _span(q.bracket), achieved,
                  m.binding or "–")
    console.print(t)
    console.print("Q_ult is the offered load at the SLA crossing; 'achieved' is the throughput completed there "
                  "(the factor of safety uses it).")
    for m in result.limits:
        console.print(f"{m.run_id} / {m.mix.name}: {m.q_ult.statement}")
        for n in m.notes:
            if n.startswith("follow-up test:"):
                console.print(f"  {n}")
    if result.blended:
        console.print(f"blended capacity: {result.blended.statement}")
    for s in result.skipped:
        console.print(f"skipped {s.run_id}/{s.mix}: {s.reason}")
    for n in result.notes:
        console.print(f"note: {n}")


def register(app: typer.Typer) -> None:
    @app.command("limits")
    def limits_cmd(
        traces: list[str] = typer.Argument(..., help="Load-test files or folders (any format bearing reads); with "
                                           "--engine one Parquet dataset: a file, folder, glob or URL."),
        sla: list[str] = typer.Option([], "--sla", help="SLA clause(s), e.g. 'p99(ttft) <= 500ms'. Repeatable."),
        sla_file: Path | None = typer.Option(None, "--sla-file", help="YAML file with a list of SLA clauses."),
        mixes: str = typer.Option("auto", "--mixes", help="auto | none | a YAML/JSON file of mix definitions."),
        weights: Path | None = typer.Option(None, "--weights", help="YAML/JSON production weights per mix."),
        json_out: Path = typer.Option(..., "--json", help="Where to write the limits JSON."),
        n_boot: int = typer.Option(1000, "--n-boot", help="Block-bootstrap resamples: the close-call tests, the "
                                   "model's design effects (0 = none: the model then reads each step's requests as "
                                   "independent) and the pooled estimator's interval."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap."),
        min_share: float = typer.Option(0.05, "--min-share", help="Skip run×mix groups below this share."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
        mapping: Path | None = typer.Option(
            None, "--mapping", help="Column mapping (YAML) for a per-request table; implies --format generic."
        ),
        option: list[str] = typer.Option([], "--option", help=OPTION_HELP),
        model: str | None = typer.Option(None, "--model", help="The model served in the load test (conditions)."),
        hardware: str | None = typer.Option(
            None, "--hardware", help="The hardware behind the load test, e.g. '2 x 8xA100-80GB' (conditions)."
        ),
        tested_instances: int | None = typer.Option(
            None, "--tested-instances",
            help="Serving instances (replicas) the load test drove; the plan sizes in this unit (conditions).",
        ),
        pool: bool = typer.Option(False, "--pool", help="Pool all runs (repeats and follow-ups of the same "
                                  "service) into one limit per mix."),
        engine: str | None = typer.Option(
            None, "--engine", help="Read one Parquet dataset of canonical columns on this engine: 'embedded' "
            "(polars, this process, one run at a time when the files are split by run) or 'dask' (one task per "
            "run on a Dask cluster; see --scheduler). Without it the loaders read the files."),
        scheduler: str | None = typer.Option(
            None, "--scheduler", help="Dask scheduler address (tcp://host:8786) for --engine dask; without it a "
            "LocalCluster starts here."),
        estimator: str = typer.Option(
            "model", "--estimator", help="For request traces: model (default: the beta-binomial exceedance model "
            "load-point tables use, its interval the posterior's) or pooled (the pooled exceedance crossing, its "
            "interval widened to the step grid; docs/oracle.md compares them)."),
        shape_from: Path | None = typer.Option(
            None, "--shape-from", help="The limits JSON of an earlier test of the same service (written by the "
            "model): its steepness and step-to-step variability become this test's prior where these steps favour "
            "them (a narrower interval; docs/limits.md). Not with --estimator pooled."),
    ) -> None:
        """Fit the highest load each request mix carries while the SLA holds, with a 95% CI."""
        from bearing_lib.common.progress import progress_for, progress_wanted
        from bearing_lib.limits.sla import combine, load_sla_file, parse_sla
        from bearing_lib.limits.sourcepaths import relative_sources

        with bearing_errors():
            if tested_instances is not None and tested_instances < 1:
                raise ParameterError(f"--tested-instances: expected an integer >= 1, got {tested_instances}")
            if not sla and sla_file is None:
                raise SLAParseError("no SLA given: pass --sla 'p99(ttft) <= 500ms' (repeatable) or --sla-file F.yaml")
            parts = []
            if sla:
                parts.append(parse_sla(sla))
            if sla_file is not None:
                parts.append(load_sla_file(sla_file))
            sla_obj = combine(*parts) if len(parts) > 1 else parts[0]
            if engine is not None and engine not in ("embedded", "dask"):
                raise ParameterError(f"--engine must be embedded or dask, got {engine!r}")
            if scheduler is not None and engine != "dask":
                raise ParameterError("--scheduler names a Dask scheduler; pass --engine dask with it")
            mix_arg: object = mixes
            if mixes not in ("auto", "none"):
                if not Path(mixes).exists():
                    raise ParameterError(f"--mixes: expected auto, none or a mix file; {mixes!r} does not exist")
                mix_arg = Path(mixes)
            show = progress_wanted() and engine != "dask"  # Dask shows its own bars
            with progress_for("limits", enabled=show) as bar:
                result = _fit(traces, sla_obj, mix_arg, weights=weights, n_boot=n_boot, seed=seed,
                              min_share=min_share, format=format, mapping=mapping, option=option, pool=pool,
                              engine=engine, scheduler=scheduler, estimator=estimator, progress=bar,
                              shape_from=shape_from)
            stated_conditions(result, model=model, hardware=hardware, tested_instances=tested_instances)
            doc = relative_sources(result.to_dict(), json_out)  # read back from the JSON's folder
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            _table(result)
            for line in decision_lines(doc):
                typer.echo(line)
            typer.echo(f"wrote {json_out}")


def _fit(traces: list[str], sla_obj, mix_arg: object, *, weights: Path | None, n_boot: int, seed: int,  # noqa: ANN001
         min_share: float, format: str | None, mapping: Path | None, option: list[str], pool: bool,
         engine: str | None, scheduler: str | None, estimator: str, progress,  # noqa: ANN001
         shape_from: Path | None = None):  # noqa: ANN202
    """Read the inputs and fit the limits (``progress``: a terminal bar or None, advanced per file read
    and per run x mix group fitted)."""
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load

    if shape_from is not None and not shape_from.is_file():
        raise ParameterError(f"--shape-from: {shape_from} is not a file (expected the limits JSON of an earlier test)")
    if engine is not None:
        if len(traces) != 1 or format is not None or option or mapping is not None or pool:
            raise ParameterError("--engine reads one Parquet dataset of canonical columns; it does not "
                                 "combine with several inputs, --format, --option, --mapping or --pool")
        if progress is not None:
            progress.step(f"fitting {traces[0]} on the {engine} engine")
        return fit_limits(traces[0], sla_obj, mixes=mix_arg, weights=weights, n_boot=n_boot, seed=seed,
                          min_share=min_share, engine=engine, scheduler=scheduler, estimator=estimator,
                          shape_from=shape_from)  # fit_limits refuses the pair with an engine, in one place
    options = merge_loader_options(parse_loader_options(option), mapping=mapping)
    fmt = format or ("generic" if mapping is not None else None)
    datasets = []
    if progress is not None:
        progress.start(len(traces), "reading the load-test files")
    for p in traces:
        ds = load(Path(p), format=fmt, **options)
        if ds.kind not in ("requests", "loadpoints"):
            raise ParameterError(f"{p}: a {ds.kind} dataset holds no load test; limits need requests "
                                 "or load points from a stepped test")
        datasets.append(ds)
        if progress is not None:
            progress.advance(1)
    unchecked: list[str] = []
    if pool:  # one deployment's repeats are pooled, never two deployments (compare/identity.py)
        from bearing_lib.compare.identity import check_pool

        reqs = [d for d in datasets if d.kind == "requests"]
        unchecked = check_pool(reqs) if len(reqs) > 1 else []
    result = fit_limits(datasets, sla_obj, mixes=mix_arg, weights=weights, n_boot=n_boot, seed=seed,
                        min_share=min_share, pool_runs=pool, estimator=estimator, progress=progress,
                        shape_from=shape_from)
    result.notes.extend(unchecked)
    return result


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?")


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _num_text(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, int | float) and not isinstance(v, bool) else "?"


def not_judged_lines(mix: dict) -> list[str]:
    """Lines saying which steps of one mix (a limits-JSON ``mixes[]`` entry) were not judged and why.

    Steps whose ``status`` is ``undetermined`` or ``excluded`` are grouped by their reasons
    (numbers aside, so "83 successful" and "47 successful" group together); each group names
    its loads, or their range, and the reasons of its first step.
    """
    steps = [s for s in mix.get("steps") or [] if s.get("status") in ("undetermined", "excluded")]
    unit = (mix.get("q_ult") or {}).get("unit") or ""
    groups: dict[tuple[str, tuple[str, ...]], list[dict]] = {}
    for st in steps:
        reasons = tuple(str(r) for r in st.get("reasons") or []) or ("no reason recorded",)
        key = (str(st.get("status")), tuple(_NUMBER.sub("#", r) for r in reasons))
        groups.setdefault(key, []).append(st)
    lines = []
    for (status, _), members in groups.items():
        loads = [m.get("offered_load") for m in members]
        if len(members) == 1:
            # a step without a finite load (vLLM's rate inf, written null) is named by its number, not "at ? rps"
            where = (f"step at {_num_text(loads[0])} {unit}".rstrip() if _is_num(loads[0])
                     else f"step {members[0].get('step', '?')}")
        elif len(members) <= 3 and all(_is_num(v) for v in loads):
            where = f"{len(members)} steps at " + ", ".join(_num_text(v) for v in loads) + f" {unit}".rstrip()
        elif len(members) <= 3:
            where = f"{len(members)} steps (" + ", ".join(
                f"at {_num_text(v)} {unit}".rstrip() if _is_num(v) else f"step {m.get('step', '?')}"
                for v, m in zip(loads, members, strict=True)) + ")"
        else:
            nums = [v for v in loads if isinstance(v, int | float)]
            span = f"{_num_text(min(nums))}–{_num_text(max(nums))}" if nums else "?"
            where = f"{len(members)} steps at {span} {unit}".rstrip()
        word = "left out" if status == "excluded" else "not judged"
        first = "; ".join(str(r) for r in members[0].get("reasons") or []) or "no reason recorded"
        lines.append(f"{where} {word}: {first}" if len(members) == 1 else f"{where} {word}; the first: {first}")
    return lines


def decision_lines(doc: dict) -> list[str]:
    """From the limits JSON: per mix, the steps not judged (and why) and the mix's notes; then the
    conditions stated with --model, --hardware, --tested-instances. (The statements, skipped
    groups and the result's notes are printed with the table.)"""
    out = []
    for m in doc.get("mixes") or []:
        mix = m.get("mix") or {}
        # the follow-up test is printed under the mix's statement with the table: not twice
        lines = [*not_judged_lines(m), *(f"note: {n}" for n in m.get("notes") or []
                                         if not str(n).startswith("follow-up test:"))]
        if lines:
            out.append(f"{m.get('run_id')} / {mix.get('name') if isinstance(mix, dict) else mix}:")
            out.extend(f"  {line}" for line in lines)
    cond = doc.get("conditions") or {}
    stated = [f"{k} {cond[k]}" for k in ("model", "hardware", "instances") if cond.get(k) not in (None, "", [])]
    if stated:
        out.append("conditions: " + "; ".join(stated))
    return out


def stated_conditions(result, *, model: str | None, hardware: str | None, tested_instances: int | None) -> list[str]:
    """Record ``--model``, ``--hardware`` and ``--tested-instances`` in ``result.conditions``.

    ``conditions`` may be a dict or an object with those attributes. The analyst's statement
    wins (it is what the plan and the report read); when the load-test files name other
    models, a note in ``result.notes`` says so, and the returned lines repeat it.
    """
    cond = result.conditions

    def get(key: str) -> object:
        return cond.get(key) if isinstance(cond, dict) else getattr(cond, key, None)

    def put(key: str, value: object) -> None:
        if isinstance(cond, dict):
            cond[key] = value
        else:
            setattr(cond, key, value)

    said = []
    if model:
        found = get("model")
        in_files = [str(x) for x in (found if isinstance(found, list) else [found]) if x]
        if in_files and model not in in_files:
            said.append(f"--model {model!r} differs from the model(s) the load-test files name: {', '.join(in_files)}")
        put("model", model)
    if hardware:
        put("hardware", hardware)
    if tested_instances is not None:
        if tested_instances < 1:
            raise ParameterError(f"--tested-instances: expected an integer >= 1, got {tested_instances}")
        put("instances", tested_instances)
        if isinstance(cond, dict) or hasattr(cond, "instances_basis"):
            put("instances_basis", "stated with bearing limits --tested-instances")
    result.notes.extend(said)
    return said


__all__ = ["decision_lines", "not_judged_lines", "register", "stated_conditions"]
