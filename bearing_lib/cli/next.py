"""``bearing next LIMITS.json --tool vllm|guidellm|aiperf|locust|k6|csv --out FILE``: the follow-up test.

Reads a limits document (``bearing limits --json``), designs the next test for each mix
whose limit is coarse, censored or not monotone (or every mix with ``--all``; ``bearing_lib.limits.followup``) and
writes it as input for the tool the first test used (``--tool auto``) or the one named.
Several mixes go to ``FILE`` with the mix name before the suffix. The plan itself (loads,
durations, model, expected resolution) is written beside it as ``FILE.plan.json``.

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
    from bearing_lib.limits.result import LimitsResult, MixLimit


def _read(path: Path) -> LimitsResult:
    """The limits document, validated once (every problem reported together; version 1 upgraded on read)."""
    from bearing_lib.limits.result import LimitsResult

    return LimitsResult.from_dict(read_json(path, "limits document (bearing limits --json)"), source=str(path))


def _needs_followup(m: MixLimit) -> bool:
    q = m.q_ult
    return q is not None and (bool(q.resolution and q.resolution.coarse)
                              or q.censored in ("above", "below", "not_monotone"))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def register(app: typer.Typer) -> None:
    @app.command("next")
    def next_cmd(
        limits_json: Path = typer.Argument(..., help="A limits document written by 'bearing limits --json'."),
        out: Path = typer.Option(..., "--out", help="Where to write the follow-up test."),
        tool: str = typer.Option("auto", "--tool", help="auto | vllm | guidellm | aiperf | locust | k6 | csv."),
        loads: int = typer.Option(4, "--loads", help="Loads spread across the 95% CI."),
        repeats: int = typer.Option(1, "--repeats", help="Runs of the whole ascending sequence."),
        budget_s: float | None = typer.Option(None, "--budget-s", help="Cap on the follow-up's total time "
                                              "(default 2 x the first test; 0 = none)."),
        all_mixes: bool = typer.Option(False, "--all", help="Design for every mix, not only coarse ones."),
        base_url: str = typer.Option("http://localhost:8000", "--base-url", help="The server the tool targets."),
        model: str = typer.Option("MODEL", "--model", help="The model name the tool sends."),
    ) -> None:
        """Design the follow-up test that resolves a coarse limit, as a file your load-test tool runs."""
        from bearing_lib.limits.followup import TOOLS, WRITERS, Target, design_followup, tool_of

        with bearing_errors():
            result = _read(limits_json)
            name = tool_of(result) if tool == "auto" else tool
            if name not in TOOLS:
                raise ParameterError(f"--tool: expected auto or one of {', '.join(TOOLS)}, got {tool!r}")
            chosen = [m for m in result.mixes if all_mixes or _needs_followup(m)]
            if not chosen:
                raise ParameterError(f"{limits_json}: no mix has a coarse or censored limit; pass --all to design "
                                     "a follow-up anyway")
            target = Target(base_url=base_url, model=model)
            out.parent.mkdir(parents=True, exist_ok=True)
            plans = []
            for m in chosen:
                plan = design_followup(m.to_dict(), n_loads=loads, repeats=repeats, budget_s=None if budget_s is None
                                       else (budget_s or None))
                path = out if len(chosen) == 1 else out.with_name(f"{out.stem}.{_safe(plan.mix)}{out.suffix}")
                path.write_text(WRITERS[name](plan, target), encoding="utf-8")
                plans.append({"file": str(path), "tool": name, **plan.to_dict()})
                loads_txt = ", ".join(f"{s.load:.4g}" for s in plan.steps)
                durs = ", ".join(f"{s.duration_s:g}" for s in plan.steps)
                typer.echo(f"{plan.run_id} / {plan.mix}: loads {loads_txt} {plan.unit}, steps of {durs} s "
                           f"(total {plan.total_s:.0f} s), expected resolution ±{plan.expected_resolution:.1%}")
                typer.echo(f"wrote {path} ({name})")
            plan_path = out.with_name(out.name + ".plan.json")
            plan_path.write_text(json.dumps({"source": str(limits_json), "plans": plans}, indent=2,
                                            ensure_ascii=False) + "\n", encoding="utf-8")
            typer.echo(f"wrote {plan_path} (the plan: loads, durations, queue model); after the run, pool both: "
                       "bearing limits FIRST SECOND --pool ...")


__all__ = ["register"]
