"""``bearing next LIMITS.json --out FILE [--tool auto|...]``: the follow-up test.

Reads a limits document (``bearing limits --json``), designs the next test for each mix
whose limit is coarse, censored or not monotone (``followup.is_coarse``: a load-point limit
without a resolution by its interval's width; or every mix with ``--all``) and writes it as
input for the tool the first test used (``--tool auto``) or the one named, with the first
test's workload read from its own file (``bearing_lib.limits.nexttools``). One file per
run x mix, ``FILE.<run>.<mix><suffix>``; an existing file is never overwritten without
``--force``. The plan itself (loads, durations, model, workload, placeholders) is written
beside it as ``FILE.plan.json``.

Exit codes: 0 written; 1 a bearing error (unreadable document, nothing to design).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bearing_lib.cli._common import bearing_errors
from bearing_lib.common.errors import ParameterError
from bearing_lib.common.files import read_json

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult


def _read(path: Path) -> LimitsResult:
    """The limits document, validated once (every problem reported together; version 1 upgraded on read)."""
    from bearing_lib.limits.result import LimitsResult

    return LimitsResult.from_dict(read_json(path, "limits document (bearing limits --json)"), source=str(path))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _path_for(out: Path, run_id: str, mix: str, suffix: str) -> Path:
    """``OUT.<run>.<mix><suffix>``: one file per run x mix (the tool's suffix when ``OUT`` has none)."""
    ext = out.suffix or suffix
    stem = out.stem if out.suffix else out.name
    return out.with_name(f"{stem}.{_safe(run_id)}.{_safe(mix)}{ext}")


def register(app: typer.Typer) -> None:
    @app.command("next")
    def next_cmd(
        limits_json: Path = typer.Argument(..., help="A limits document written by 'bearing limits --json'."),
        out: Path = typer.Option(..., "--out", help="Where to write the follow-up test: OUT.<run>.<mix>.<suffix>, "
                                 "one file per run x mix, and OUT.plan.json."),
        tool: str = typer.Option("auto", "--tool", help="auto | vllm | sglang | guidellm | guidellm-0.6 | aiperf | "
                                 "genai-perf | llmperf | inference-perf | locust | k6 | jmeter | vegeta | lmbenchmark "
                                 "| csv. guidellm: a scenario JSON for 'guidellm run --scenario FILE' (GuideLLM "
                                 ">= 0.7); guidellm-0.6: the older 'guidellm benchmark' command line."),
        loads: int = typer.Option(4, "--loads", help="Loads spread across the 95% CI."),
        repeats: int = typer.Option(1, "--repeats", help="Runs of the whole ascending sequence."),
        budget_s: float | None = typer.Option(None, "--budget-s", help="Cap on the follow-up's total time "
                                              "(default 2 x the first test; 0 = none)."),
        all_mixes: bool = typer.Option(False, "--all", help="Design for every mix, not only coarse ones."),
        base_url: str | None = typer.Option(None, "--base-url", help="The server the tool targets (else the "
                                            "placeholder FILL_IN_BASE_URL)."),
        model: str | None = typer.Option(None, "--model", help="The model name the tool sends (else the first "
                                         "test's, or the placeholder FILL_IN_MODEL)."),
        force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    ) -> None:
        """Design the follow-up test that resolves a coarse limit, as a file your load-test tool runs."""
        from bearing_lib.limits.followup import design_followup, is_coarse
        from bearing_lib.limits.nexttools import (
            CONTINUOUS,
            SUFFIX,
            TOOLS,
            WRITERS,
            in_flight_curve,
            measure_workload,
            tool_of,
        )

        with bearing_errors():
            result = _read(limits_json)
            name = tool_of(result) if tool == "auto" else tool
            if name not in TOOLS:
                raise ParameterError(f"--tool: expected auto or one of {', '.join(TOOLS)}, got {tool!r}")
            docs = [m.to_dict() for m in result.mixes]
            chosen = [d for d in docs if all_mixes or is_coarse(d)]
            if not chosen:
                raise ParameterError(f"{limits_json}: no mix has a coarse or censored limit; pass --all to design "
                                     "a follow-up anyway")
            jobs = []
            for d in chosen:
                try:
                    plan = design_followup(d, n_loads=loads, repeats=repeats, budget_s=None if budget_s is None
                                           else (budget_s or None))
                except ParameterError as exc:
                    if not all_mixes or "no range to design" not in str(exc):
                        raise
                    # --all asks for every mix that can be designed: one without a range is said and skipped
                    typer.echo(f"skipped: {exc}", err=True)
                    continue
                jobs.append((d, plan, _path_for(out, plan.run_id, plan.mix, SUFFIX[name])))
            if not jobs:
                raise ParameterError(f"{limits_json}: no mix gives a range to design a follow-up in")
            plan_path = out.with_name(out.name + ".plan.json")
            paths = [p for _, _, p in jobs] + [plan_path]
            dup = sorted({str(p) for p in paths if paths.count(p) > 1})
            if dup:
                raise ParameterError(f"two follow-ups would be written to the same file: {', '.join(dup)}")
            exist = [str(p) for p in paths if p.exists()]
            if exist and not force:
                raise ParameterError(f"refusing to overwrite {', '.join(exist)}; pass --force to overwrite")
            out.parent.mkdir(parents=True, exist_ok=True)
            plans = []
            for d, plan, path in jobs:
                bounds = (d.get("mix") or {}).get("bounds") or {}
                wl = measure_workload(result.conditions.sources, plan.run_id, bounds, model=model,
                                      base_url=base_url, base_dir=limits_json.parent, mix_name=plan.mix)
                wl.in_flight = in_flight_curve(d.get("steps") or [])
                path.write_text(WRITERS[name](plan, wl), encoding="utf-8")
                how = ("one continuous run of the tool per repeat" if name in CONTINUOUS
                       else "one invocation of the tool per load, back to back")
                plans.append({"file": str(path), "tool": name, "workload": dict(wl.__dict__),
                              "placeholders": wl.unknown(), **plan.to_dict(), "order": f"ascending, {how}"})
                loads_txt = ", ".join(f"{s.load:.4g}" for s in plan.steps)
                durs = ", ".join(f"{s.duration_s:g}" for s in plan.steps)
                typer.echo(f"{plan.run_id} / {plan.mix}: loads {loads_txt} {plan.unit}, steps of {durs} s "
                           f"(total {plan.total_s:.0f} s), expected resolution ±{plan.expected_resolution:.1%}")
                for line in wl.lines():
                    typer.echo(f"  {line}")
                typer.echo(f"wrote {path} ({name})")
            plan_path.write_text(json.dumps({"source": str(limits_json), "plans": plans}, indent=2,
                                            ensure_ascii=False) + "\n", encoding="utf-8")
            typer.echo(f"wrote {plan_path} (the plan: loads, durations, queue model); after the run, pool both: "
                       "bearing limits FIRST SECOND --pool ...")


__all__ = ["register"]
