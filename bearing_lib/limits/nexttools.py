"""The follow-up test in the first test's own words: its workload, and one writer per tool.

:func:`measure_workload` reads the first test's own file (``conditions.sources`` of the limits
document) with bearing's loader and takes, for the mix's run (and the mix's bounds):

* **request lengths**: median and P90 of ``input_tokens`` and ``output_tokens`` over the
  successful requests of a request trace; a load-point table gives only the mean per request
  (``input_tokens_per_s / throughput_rps``, the median over its steps), said as such;
* **dataset**: ``sharegpt`` when the source or run names ShareGPT (vLLM bench and SGLang bench
  then get ``--dataset-name sharegpt``; the others the measured lengths);
* **model**: the most frequent ``model`` value;
* **streaming**: a trace whose requests have a time to first token below their latency streamed.

What is not known (no readable source, a tool that does not record it; the base URL is never in
the files) becomes an explicit, named placeholder (``FILL_IN_MODEL``, ``FILL_IN_BASE_URL``,
``FILL_IN_INPUT_TOKENS`` …), listed in the file's header and on the terminal, never a silent
default. ``--model`` and ``--base-url`` of ``bearing next`` fill them in.

Writers (:data:`WRITERS`), one continuous run where the tool can:

* ``guidellm``: a scenario for ``guidellm run --scenario FILE`` (GuideLLM >= 0.7, the current
  format; 0.7.2 and later have no ``guidellm benchmark``): one run, a ``constant`` profile with the
  rates in turn and a ``max_duration`` constraint with one duration per step
  (:func:`guidellm_scenario`); ``guidellm-0.6``: the older command line, one ``guidellm benchmark
  --rate-type constant --rate r1,r2,…`` per run of equal step durations (``--max-seconds`` is one
  value per invocation);
* ``locust``: a ``LoadTestShape`` (users on constant pacing for a rate; ``ceil`` of a concurrency);
* ``k6``: one ``ramping-arrival-rate`` (rate) or ``ramping-vus`` (concurrency) scenario whose
  stages hold each load;
* ``inference-perf``: one YAML config whose ``load.stages`` are the steps;
* separate invocations where the tool takes one load per run (said in the file): ``vllm``,
  ``sglang``, ``aiperf``, ``genai-perf``, ``llmperf``, ``vegeta``;
* a schedule CSV where bearing does not write the tool's own file: ``jmeter`` (integer threads),
  ``lmbenchmark`` (QPS), ``csv``.

Closed-loop tools get integer users: a concurrency is rounded up, a rate becomes
``ceil(rate × pacing)`` users on a fixed pacing (LLMPerf: the first test's mean number in flight
at that load, interpolated, or beyond its loads ``ceil(rate × W(rate))`` by Little's law with the
plan's queue model), and the file says the rate it approximates. Rate-based tools
get rates.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.followup import FollowUp, FollowUpStep
    from bearing_lib.limits.result import LimitsResult

PACING_S = 20.0
"""Closed-loop tools on a rate: each user starts one request every ``PACING_S`` seconds."""

PLACEHOLDERS = {"model": "FILL_IN_MODEL", "base_url": "FILL_IN_BASE_URL",
                "input_tokens": "FILL_IN_INPUT_TOKENS", "output_tokens": "FILL_IN_OUTPUT_TOKENS",
                "dataset_path": "FILL_IN_SHAREGPT_JSON"}

TOOLS = ("vllm", "sglang", "guidellm", "guidellm-0.6", "aiperf", "genai-perf", "llmperf", "inference-perf", "locust",
         "k6", "jmeter", "vegeta", "lmbenchmark", "csv")

# loader format name prefix -> writer
_FORMAT_TOOL = (("vllm", "vllm"), ("sglang", "sglang"), ("guidellm", "guidellm"), ("aiperf", "aiperf"),
                ("genai-perf", "genai-perf"), ("llmperf", "llmperf"), ("inference-perf", "inference-perf"),
                ("locust", "locust"), ("k6", "k6"), ("jmeter", "jmeter"), ("vegeta", "vegeta"),
                ("lmbench", "lmbenchmark"))


def tool_of(result: LimitsResult) -> str:
    """The tool the first test used, from the limits' sources' loader format (``csv`` when none fits).

    GuideLLM before 0.7 has no ``guidellm run --scenario`` (0.7.2 replaced the ``benchmark`` command line,
    ``src/guidellm/cli/__init__.py``): a first test whose source states such a version gets ``guidellm-0.6``.
    """
    for src in result.conditions.sources:
        fmt = (src.format or "").lower()
        text = (src.tool or "").lower()
        name = next((n for p, n in _FORMAT_TOOL if fmt.startswith(p)), None) or next(
            (n for p, n in _FORMAT_TOOL if p in text), None)
        if name is not None:
            return "guidellm-0.6" if name == "guidellm" and _before(src.tool_version, (0, 7)) else name
    return "csv"


def _before(version: str | None, bound: tuple[int, int]) -> bool:
    """Whether a stated version (``0.5.1``, ``v0.6.0``, the loader's ``before 0.5 (...)``) is below ``bound``;
    unstated or unreadable: False."""
    m = re.search(r"(\d+)\.(\d+)", version or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) < bound


# --------------------------------------------------------------------------------------
# the workload


@dataclass
class Workload:
    """What the follow-up sends; ``None`` = unknown (written as a named placeholder)."""

    model: str | None = None
    base_url: str | None = None
    input_tokens: int | None = None
    """The median input length (tokens)."""
    output_tokens: int | None = None
    input_p90: int | None = None
    output_p90: int | None = None
    dataset: str | None = None
    streaming: bool | None = None
    endpoint: str = "/v1/completions"
    seed: int = 0
    in_flight: list[tuple[float, float]] = field(default_factory=list)
    """The first test's measured ``(load, mean requests in flight)`` per step (:func:`in_flight_curve`)."""
    tokenizer: dict[str, object] | None = None
    """The tokenizer GuideLLM's first run counted tokens with (its report's ``config.spec.tokenizer``)."""
    basis: str = "no source file read"
    notes: list[str] = field(default_factory=list)

    def value(self, name: str) -> str:
        v = getattr(self, name)
        return PLACEHOLDERS[name] if v is None else str(v)

    def unknown(self) -> list[str]:
        """The placeholders this workload writes, with what each stands for."""
        out = []
        for name in ("model", "base_url", "input_tokens", "output_tokens"):
            if getattr(self, name) is None:
                out.append(f"{PLACEHOLDERS[name]} ({name.replace('_', ' ')}: not in the first test's file)")
        if self.dataset == "sharegpt":
            out.append(f"{PLACEHOLDERS['dataset_path']} (the ShareGPT JSON the first test read)")
        if self.streaming is None:
            out.append("streaming (unknown: not set; add the tool's streaming option if the first test streamed)")
        return out

    def lines(self) -> list[str]:
        length = (f"input {self.value('input_tokens')} tokens (P90 {self.input_p90}), output "
                  f"{self.value('output_tokens')} tokens (P90 {self.output_p90})"
                  if self.input_p90 is not None or self.output_p90 is not None else
                  f"input {self.value('input_tokens')} tokens, output {self.value('output_tokens')} tokens")
        out = [f"workload of the first test ({self.basis}): {length}; model {self.value('model')}; "
               f"streaming {'unknown' if self.streaming is None else ('yes' if self.streaming else 'no')}"
               + (f"; dataset {self.dataset}" if self.dataset else "")]
        out += self.notes
        out.append(f"assumed, not in the first test's file: the OpenAI-compatible API (endpoint {self.endpoint} for "
                   "HTTP tools, '--endpoint-type chat' for AIPerf / GenAI-Perf, '--backend openai' for vLLM); "
                   "change it if the first test used another")
        unk = self.unknown()
        if unk:
            out.append("PLACEHOLDERS to fill in before running: " + "; ".join(unk))
        return out


def in_flight_curve(steps: Sequence[Mapping[str, object]]) -> list[tuple[float, float]]:
    """``(load_axis, concurrency_mean)`` of the first test's steps (recovery steps left out), by load."""
    pts = []
    for s in steps:
        x, c = s.get("load_axis"), s.get("concurrency_mean")
        if x is None or c is None or s.get("recovery_step"):
            continue
        if math.isfinite(float(x)) and math.isfinite(float(c)):
            pts.append((float(x), float(c)))
    return sorted(pts)


def _q(values: np.ndarray, q: float) -> int | None:
    v = values[np.isfinite(values)]
    return int(round(float(np.percentile(v, q)))) if v.size else None


def _in_bounds(frame, name: str, bounds: Mapping[str, Sequence[float | None]]):  # noqa: ANN001, ANN202
    """The requests inside the mix, by bearing's own mix rule (``bearing_lib.data.mixes.Mix.expr``)."""
    from bearing_lib.data.mixes import Mix

    if not bounds:
        return frame
    mix = Mix.from_dict({"name": name, "bounds": {k: list(v) for k, v in bounds.items()}})
    return frame.filter(mix.expr(frame.columns))


def measure_workload(sources: Sequence[object], run_id: str, mix_bounds: Mapping[str, Sequence[float | None]] | None
                     = None, *, model: str | None = None, base_url: str | None = None,
                     base_dir: Path | None = None, mix_name: str = "mix") -> Workload:
    """The first test's workload for one run (and mix), read from its source files (module docstring).

    ``sources`` are the limits document's ``conditions.sources`` (objects with ``path`` and
    ``format``); a relative path is tried as given, then under ``base_dir`` (the limits
    document's folder). ``model`` / ``base_url`` given by the user win over the file's.
    """
    import polars as pl

    from bearing_lib.common.errors import BearingError
    from bearing_lib.loaders.registry import load

    w = Workload(model=model, base_url=base_url)
    for src in sources:
        path = Path(str(getattr(src, "path", "") or ""))
        cands = [path] + ([base_dir / path] if base_dir is not None and not path.is_absolute() else [])
        found = next((p for p in cands if p.exists()), None)
        if found is None:
            w.notes.append(f"the first test's file {path} is not readable here: its workload is unknown")
            continue
        try:
            ds = load(found, format=getattr(src, "format", None) or None)
        except (BearingError, OSError) as exc:
            w.notes.append(f"could not read {found}: {exc}")
            continue
        frame = ds.frame
        if "run_id" in frame.columns and frame.height:
            runs = frame["run_id"].cast(pl.String)
            sel = frame.filter(runs == run_id)
            if sel.height == 0:
                continue  # another run's file
            frame = sel
        if "sharegpt" in f"{found} {run_id}".lower():
            w.dataset = "sharegpt"
        if "model" in frame.columns and w.model is None:
            names = [m for m in frame["model"].to_list() if m]
            if names:
                w.model = Counter(names).most_common(1)[0][0]
        if ds.kind == "requests":
            frame = _in_bounds(frame, mix_name, mix_bounds or {})
            if "status" in frame.columns:
                frame = frame.filter(pl.col("status") == "ok")
            if frame.height == 0:
                continue
            for col, med, p90 in (("input_tokens", "input_tokens", "input_p90"),
                                  ("output_tokens", "output_tokens", "output_p90")):
                if col in frame.columns:
                    v = frame[col].cast(pl.Float64).fill_null(float("nan")).to_numpy()
                    setattr(w, med, _q(v, 50))
                    setattr(w, p90, _q(v, 90))
            if {"ttft_ms", "latency_ms"} <= set(frame.columns):
                both = frame.select(["ttft_ms", "latency_ms"]).drop_nulls()
                if both.height:
                    w.streaming = bool((both["ttft_ms"] < 0.9 * both["latency_ms"]).mean() > 0.5)
            w.basis = (f"median and P90 of {frame.height} successful requests of run {run_id} in {found}"
                       + (" within the mix's bounds" if mix_bounds else ""))
        elif ds.kind == "loadpoints" and "throughput_rps" in frame.columns:
            per = {}
            for col in ("input_tokens_per_s", "output_tokens_per_s"):
                if col in frame.columns:
                    f = frame.filter(pl.col(col).is_not_null() & (pl.col("throughput_rps") > 0))
                    if f.height:
                        per[col] = int(round(float(np.median((f[col] / f["throughput_rps"]).to_numpy()))))
            w.input_tokens = per.get("input_tokens_per_s", w.input_tokens)
            w.output_tokens = per.get("output_tokens_per_s", w.output_tokens)
            w.basis = (f"mean tokens per request (median over the steps of run {run_id} in {found}; the tool "
                       "reports no per-request lengths, so no P90)")
        if str(ds.provenance.format).startswith("guidellm") and found.is_file():
            _guidellm_spec(found, w, model_given=model is not None, url_given=base_url is not None)
        break
    return w


def _guidellm_spec(path: Path, w: Workload, *, model_given: bool, url_given: bool) -> None:
    """What GuideLLM >= 0.7 keeps of its own run in the report (``config.spec``, the ``BenchmarkArgs`` it ran:
    vllm-project/guidellm ``src/guidellm/benchmark/schemas/generative/report.py``): the target, the model, the
    request format and the tokenizer, so the follow-up sends what the first run sent and counts tokens alike."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    spec = (doc.get("config") or {}).get("spec") if isinstance(doc, dict) and isinstance(doc.get("config"), dict) \
        else None
    if not isinstance(spec, dict):
        return
    backend = spec.get("backend") if isinstance(spec.get("backend"), dict) else {}
    if not url_given and isinstance(backend.get("target"), str):
        w.base_url = backend["target"]
    if not model_given and isinstance(backend.get("model"), str):
        w.model = backend["model"]
    if backend.get("request_format") in GUIDELLM_REQUEST_FORMATS:
        w.endpoint = str(backend["request_format"])
    tok = spec.get("tokenizer")
    if isinstance(tok, dict) and isinstance(tok.get("kind"), str) and tok.get("model"):
        w.tokenizer = {k: tok[k] for k in ("kind", "model", "load_kwargs") if tok.get(k) not in (None, {})}
        w.notes.append(f"tokenizer of the first run: {tok['model']} (GuideLLM's config.spec.tokenizer)")


# --------------------------------------------------------------------------------------
# the writers: (plan, workload) -> file text


def _all_steps(plan: FollowUp) -> list[FollowUpStep]:
    return [s for _ in range(plan.repeats) for s in plan.steps]


def _conc(plan: FollowUp) -> bool:
    return plan.unit == "concurrency"


def _users(load: float) -> int:
    """A concurrency as an integer number of users (rounded up)."""
    return max(1, int(math.ceil(load - 1e-9)))


def _paced_users(rate: float) -> int:
    return max(1, int(math.ceil(rate * PACING_S - 1e-9)))


def _header(plan: FollowUp, w: Workload, comment: str, how: str) -> str:
    lines = [f"bearing next: follow-up test for run {plan.run_id} / mix {plan.mix}",
             f"loads ({plan.unit}) ascending: " + ", ".join(f"{s.load:.4g}" for s in plan.steps)
             + f"; repeats {plan.repeats}; total {plan.total_s:.0f} s",
             f"expected resolution after it: ±{plan.expected_resolution:.1%} (the loads' spacing)",
             f"how it runs: {how}"]
    lines += w.lines() + plan.notes
    return "".join(f"{comment} {line}\n" if comment else f"{line}\n" for line in lines)


def _sh(plan: FollowUp, w: Workload, how: str, cmds: list[str]) -> str:
    return "\n".join(["#!/bin/sh", _header(plan, w, "#", how).rstrip("\n"), "set -e", *cmds]) + "\n"


SEPARATE = "one invocation per load, run back to back in ascending order (the tool takes one load per run)"


def write_vllm(plan: FollowUp, w: Workload) -> str:
    """One ``vllm bench serve`` per step: a Poisson rate (``--burstiness 1``), or ``--max-concurrency``."""
    cmds = []
    for i, s in enumerate(_all_steps(plan)):
        n = max(1, int(round(s.load * s.duration_s)))
        if w.dataset == "sharegpt":
            data = f"--dataset-name sharegpt --dataset-path {PLACEHOLDERS['dataset_path']}"
        else:
            data = (f"--dataset-name random --random-input-len {w.value('input_tokens')} "
                    f"--random-output-len {w.value('output_tokens')}")
        load = (f"--request-rate inf --max-concurrency {_users(s.load)}" if _conc(plan)
                else f"--request-rate {s.load:.4f} --burstiness 1.0")
        cmds.append(f"vllm bench serve --backend openai --base-url {w.value('base_url')} --model {w.value('model')} "
                    f"{data} {load} --num-prompts {n} --seed {w.seed + i} "
                    f"--save-result --result-filename followup_step{i:02d}_{s.load:.4f}{plan.unit}.json")
    return _sh(plan, w, SEPARATE, cmds)


def write_sglang(plan: FollowUp, w: Workload) -> str:
    """One ``python3 -m sglang.bench_serving`` per step (a request rate, or ``--max-concurrency``)."""
    cmds = []
    for i, s in enumerate(_all_steps(plan)):
        n = max(1, int(round(s.load * s.duration_s)))
        data = ("--dataset-name sharegpt --dataset-path " + PLACEHOLDERS["dataset_path"] if w.dataset == "sharegpt"
                else f"--dataset-name random --random-input-len {w.value('input_tokens')} "
                     f"--random-output-len {w.value('output_tokens')} --random-range-ratio 1.0")
        load = (f"--max-concurrency {_users(s.load)}" if _conc(plan) else f"--request-rate {s.load:.4f}")
        cmds.append(f"python3 -m sglang.bench_serving --backend sglang-oai --base-url {w.value('base_url')} "
                    f"--model {w.value('model')} {data} {load} --num-prompts {n} --seed {w.seed + i} "
                    f"--output-file followup_{plan.mix}.jsonl")
    return _sh(plan, w, SEPARATE, cmds)


def guidellm_groups(plan: FollowUp) -> list[tuple[float, list[float]]]:
    """``(max_seconds, [loads])``: consecutive steps of equal duration share one invocation."""
    groups: list[tuple[float, list[float]]] = []
    for s in _all_steps(plan):
        load = float(_users(s.load)) if _conc(plan) else round(s.load, 4)
        if groups and groups[-1][0] == s.duration_s:
            groups[-1][1].append(load)
        else:
            groups.append((s.duration_s, [load]))
    return groups


def write_guidellm(plan: FollowUp, w: Workload) -> str:
    """``guidellm benchmark`` with the loads as one ``--rate`` list per run of equal step durations."""
    groups = guidellm_groups(plan)
    how = ("one guidellm invocation, its rates run in turn" if len(groups) == 1 else
           f"{len(groups)} guidellm invocations (--max-seconds is one value per invocation; steps of equal "
           "duration share one)")
    how += ("; written for the guidellm 0.3-0.6 command line 'guidellm benchmark' (checked with 0.5.4's parser); "
            "guidellm 0.7.2 and later have no 'benchmark' command: use --tool guidellm, a scenario for 'guidellm run'")
    rate_type = "concurrent" if _conc(plan) else "constant"
    data = f"prompt_tokens={w.value('input_tokens')},output_tokens={w.value('output_tokens')}"
    cmds = []
    for k, (dur, loads) in enumerate(groups):
        rates = ",".join(f"{x:g}" if not _conc(plan) else str(int(x)) for x in loads)
        cmds.append(f"guidellm benchmark --target {w.value('base_url')} --model {w.value('model')} "
                    f"--rate-type {rate_type} --rate {rates} --max-seconds {dur:g} --data {shlex.quote(data)} "
                    f"--random-seed {w.seed} --output-path followup_{k:02d}.json")
    return _sh(plan, w, how, cmds)


GUIDELLM_REQUEST_FORMATS = ("/v1/completions", "/v1/chat/completions")
"""``backend.request_format`` values of GuideLLM's ``openai_http`` backend that a text follow-up can use
(vllm-project/guidellm ``src/guidellm/backends/openai/http.py``, ``OpenAIHTTPBackendArgs``)."""


def guidellm_scenario(plan: FollowUp, w: Workload) -> dict[str, object]:
    """The follow-up as a GuideLLM scenario (``guidellm run --scenario FILE``, GuideLLM >= 0.7; ``guidellm
    benchmark`` is gone since 0.7.2, ``src/guidellm/cli/__init__.py``): every step of every repeat in ONE run,
    each with its own duration.

    Read from vllm-project/guidellm (main at ee7a774; the fields used are the same at v0.7.3):
    ``src/guidellm/benchmark/schemas/entrypoints.py`` (``BenchmarkScenario``: ``metadata`` with extra fields
    allowed, ``spec`` a ``BenchmarkArgs`` that forbids unknown fields), ``benchmark/profiles/asynchronous.py``
    (profile ``constant``: ``rate`` a list, one strategy per rate, in order) and ``profiles/concurrent.py``
    (``concurrent``: ``streams``), ``scheduler/constraints/request.py`` (``max_duration``: ``seconds`` a list,
    the i-th strategy stops after the i-th value), ``data/deserializers/synthetic.py`` (``synthetic_text``:
    ``prompt_tokens``, ``output_tokens`` and their ``_min``/``_max``), ``backends/openai/http.py``
    (``openai_http``: ``target``, ``model``, ``request_format``), ``benchmark/schemas/random.py`` (``static``
    seed) and ``benchmark/outputs/serialized.py`` (``json`` output ``path``). Unknown lengths, model or URL stay
    the named placeholders, which GuideLLM's reader refuses until they are filled in."""
    steps = _all_steps(plan)
    profile: dict[str, object] = ({"kind": "concurrent", "streams": [_users(s.load) for s in steps]} if _conc(plan)
                                  else {"kind": "constant", "rate": [round(s.load, 4) for s in steps]})
    data: dict[str, object] = {"kind": "synthetic_text"}
    for key, name in (("prompt_tokens", "input_tokens"), ("output_tokens", "output_tokens")):
        v = getattr(w, name)
        data[key] = PLACEHOLDERS[name] if v is None else int(v)
    backend: dict[str, object] = {"kind": "openai_http", "target": w.value("base_url"), "model": w.value("model")}
    if w.endpoint in GUIDELLM_REQUEST_FORMATS:
        backend["request_format"] = w.endpoint
    extra: dict[str, object] = {"tokenizer": dict(w.tokenizer)} if w.tokenizer else {}
    how = ("one guidellm run (guidellm run --scenario THIS_FILE), its " +
           ("concurrencies" if _conc(plan) else "constant rates") + " run in turn, each for its own duration")
    return {
        "metadata": {"labels": {"generator": "bearing next", "run": str(plan.run_id), "mix": str(plan.mix)},
                     "bearing_next": _header(plan, w, "", how).splitlines()},
        "spec": {
            "backend": backend,
            "profile": profile,
            "constraints": [{"kind": "max_duration", "seconds": [float(s.duration_s) for s in steps]}],
            **extra,
            "data": [data],
            "seed": {"kind": "static", "value": int(w.seed)},
            "outputs": [{"kind": "json", "path": f"followup_{_slug(plan.run_id)}_{_slug(plan.mix)}.json"}],
        },
    }


def _slug(text: object) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text)).strip("_") or "run"


def write_guidellm_scenario(plan: FollowUp, w: Workload) -> str:
    """:func:`guidellm_scenario` as the JSON file ``guidellm run --scenario`` reads."""
    return json.dumps(guidellm_scenario(plan, w), indent=2, ensure_ascii=False) + "\n"


def _aiperf_like(prog: str, plan: FollowUp, w: Workload) -> str:
    cmds = []
    for i, s in enumerate(_all_steps(plan)):
        n = max(1, int(round(s.load * s.duration_s)))
        warm = int(round(s.load * s.warmup_s))
        load = f"--concurrency {_users(s.load)}" if _conc(plan) else f"--request-rate {s.load:.4f}"
        stream = " --streaming" if w.streaming else ""
        cmds.append(f"{prog} profile --model {w.value('model')} --url {w.value('base_url')} --endpoint-type chat"
                    f"{stream} {load} --request-count {n} --warmup-request-count {warm} "
                    f"--synthetic-input-tokens-mean {w.value('input_tokens')} --synthetic-input-tokens-stddev 0 "
                    f"--output-tokens-mean {w.value('output_tokens')} --random-seed {w.seed + i} "
                    f"--artifact-dir followup_step{i:02d}")
    return _sh(plan, w, SEPARATE + f"; {prog} takes no list of rates", cmds)


def write_aiperf(plan: FollowUp, w: Workload) -> str:
    """One ``aiperf profile`` per step (fixed request rate or concurrency, and request count)."""
    return _aiperf_like("aiperf", plan, w)


def write_genai_perf(plan: FollowUp, w: Workload) -> str:
    """One ``genai-perf profile`` per step."""
    return _aiperf_like("genai-perf", plan, w)


def write_llmperf(plan: FollowUp, w: Workload) -> str:
    """One ``token_benchmark_ray.py`` per step: LLMPerf sets a concurrency, not a rate."""
    mu, w0 = plan.model.mu, plan.model.w0_s
    cmds, approx = [], []
    for i, s in enumerate(_all_steps(plan)):
        if _conc(plan):
            c = _users(s.load)
        elif w.in_flight and w.in_flight[0][0] <= s.load <= w.in_flight[-1][0]:
            xs, cs = zip(*w.in_flight, strict=True)
            c = _users(float(np.interp(s.load, xs, cs)))
            approx.append(f"{s.load:.4g} rps -> {c} concurrent (the first test's mean in flight at that load, "
                          "interpolated)")
        else:
            wx = float(w0) / (1.0 - s.rho) if w0 else 1.0
            c = _users(s.load * wx)
            approx.append(f"{s.load:.4g} rps -> {c} concurrent (beyond the first test's loads: Little, rate x "
                          f"W = {s.load:.4g} x {wx:.3g} s)")
        n = max(1, int(round(s.load * s.duration_s)))
        sd_in = max(0, (w.input_p90 or 0) - (w.input_tokens or 0))
        sd_out = max(0, (w.output_p90 or 0) - (w.output_tokens or 0))
        cmds.append(f"python token_benchmark_ray.py --model {w.value('model')} "
                    f"--mean-input-tokens {w.value('input_tokens')} --stddev-input-tokens {int(sd_in / 1.2816)} "
                    f"--mean-output-tokens {w.value('output_tokens')} --stddev-output-tokens {int(sd_out / 1.2816)} "
                    f"--max-num-completed-requests {n} --num-concurrent-requests {c} --timeout {s.duration_s:g} "
                    f"--results-dir followup_step{i:02d} --llm-api openai")
    how = SEPARATE + "; OPENAI_API_BASE=" + w.value("base_url") + "/v1"
    if approx:
        how += (f"; LLMPerf sets a concurrency: each rate becomes the first test's mean number in flight at "
                f"that load, or beyond its loads Little's law with the plan's W(x) = W0/(1 - x/mu), W0 {w0}, "
                f"mu {mu}: " + "; ".join(approx))
    return _sh(plan, w, how, cmds)


def inference_perf_config(plan: FollowUp, w: Workload) -> dict[str, object]:
    """An inference-perf config: one run, ``load.stages`` = the steps."""
    def dist(med: int | None, p90: int | None) -> dict[str, object]:
        if med is None:
            return {"mean": PLACEHOLDERS["input_tokens"], "std": 0, "min": 1, "max": PLACEHOLDERS["input_tokens"]}
        sd = max(0, int(((p90 or med) - med) / 1.2816))
        return {"mean": med, "std": sd, "min": max(1, med - 3 * sd), "max": med + 3 * sd}

    data: dict[str, object]
    if w.dataset == "sharegpt":
        data = {"type": "shareGPT"}
    else:
        data = {"type": "random", "input_distribution": dist(w.input_tokens, w.input_p90),
                "output_distribution": dist(w.output_tokens, w.output_p90)}
        if w.output_tokens is None:
            data["output_distribution"] = {"mean": PLACEHOLDERS["output_tokens"], "std": 0, "min": 1,
                                           "max": PLACEHOLDERS["output_tokens"]}
    stages = [{"rate": round(s.load, 4), "duration": int(s.duration_s)} for s in _all_steps(plan)]
    return {"load": {"type": "constant", "stages": stages},
            "api": {"type": "completion", "streaming": bool(w.streaming)},
            "server": {"type": "vllm", "model_name": w.value("model"), "base_url": w.value("base_url")},
            "data": data, "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}}}


def write_inference_perf(plan: FollowUp, w: Workload) -> str:
    import yaml

    how = "one inference-perf run, its load stages in turn"
    if _conc(plan):
        how += "; the plan's loads are concurrencies but inference-perf stages take rates: CHECK the stage rates"
    return (_header(plan, w, "#", how) + "# Run: inference-perf --config_file THIS_FILE\n"
            + yaml.safe_dump(inference_perf_config(plan, w), sort_keys=False))


def _body(w: Workload) -> dict[str, object]:
    n = w.input_tokens
    out_tokens = w.output_tokens if w.output_tokens is not None else PLACEHOLDERS["output_tokens"]
    return {"model": w.value("model"), "prompt": "PROMPT", "max_tokens": out_tokens,
            "stream": bool(w.streaming), "_prompt_words": n if n is not None else PLACEHOLDERS["input_tokens"]}


def locust_stages(plan: FollowUp) -> list[tuple[float, int, float]]:
    """``(end time s, users, load it approximates)`` per step."""
    out, end = [], 0.0
    for s in _all_steps(plan):
        end += s.duration_s
        if _conc(plan):
            out.append((end, _users(s.load), s.load))
        else:
            u = _paced_users(s.load)
            out.append((end, u, u / PACING_S))
    return out


def write_locust(plan: FollowUp, w: Workload) -> str:
    """A locustfile with a ``LoadTestShape``: one continuous run, integer users per step."""
    stages = locust_stages(plan)
    stage_text = ",\n".join(f"    ({e:g}, {u}, {r:.6g})" for e, u, r in stages)
    if _conc(plan):
        how = ("one continuous locust run (LoadTestShape); users = the concurrency rounded up, each sending "
               "back to back")
        wait = "constant(0)"
    else:
        how = (f"one continuous locust run (LoadTestShape); users on constant pacing of {PACING_S:g} s: users = "
               f"ceil(rate x {PACING_S:g}), approximating the rate users / {PACING_S:g} (while a request takes "
               f"less than {PACING_S:g} s)")
        wait = f"constant_pacing({PACING_S:g})"
    n_words = w.input_tokens if w.input_tokens is not None else PLACEHOLDERS["input_tokens"]
    max_tokens = w.output_tokens if w.output_tokens is not None else PLACEHOLDERS["output_tokens"]
    return (
        _header(plan, w, "#", how)
        + f"""# Run: locust -f THIS_FILE --headless --host {w.value('base_url')}
# The prompt is {n_words} words, about as many tokens; set ignore_eos on vLLM to get the full output length.
from locust import HttpUser, LoadTestShape, constant, constant_pacing, task  # noqa: F401

MODEL = {w.value('model')!r}
INPUT_TOKENS = {n_words!r}
OUTPUT_TOKENS = {max_tokens!r}
STREAM = {bool(w.streaming)!r}
# (end time s, users, {plan.unit} it approximates), ascending
STAGES = [
{stage_text},
]


MISSING = [v for v in (MODEL, INPUT_TOKENS, OUTPUT_TOKENS) if str(v).startswith("FILL_IN_")]


def body():
    return {{"model": MODEL, "prompt": "hi " * INPUT_TOKENS, "max_tokens": OUTPUT_TOKENS, "stream": STREAM}}


class Completion(HttpUser):
    wait_time = {wait}

    def on_start(self):
        if MISSING:
            raise RuntimeError(f"fill in the placeholders first: {{MISSING}}")

    @task
    def completion(self):
        self.client.post("{w.endpoint}", json=body())


class FollowUpShape(LoadTestShape):
    def tick(self):
        now = self.get_run_time()
        for end, users, _load in STAGES:
            if now < end:
                return users, users  # reach the step's users within a second
        return None
"""
    )


def k6_options(plan: FollowUp) -> dict[str, object]:
    """One scenario whose stages hold each load: ``ramping-arrival-rate`` (a rate, per 100 s to keep
    0.01 rps in k6's integer rates) or ``ramping-vus`` (a concurrency, rounded up)."""
    stages: list[dict[str, object]] = []
    steps = _all_steps(plan)
    if _conc(plan):
        for s in steps:
            u = _users(s.load)
            stages += [{"duration": "1s", "target": u}, {"duration": f"{s.duration_s - 1:g}s", "target": u}]
        sc = {"executor": "ramping-vus", "startVUs": _users(steps[0].load), "stages": stages, "exec": "completion"}
    else:
        for s in steps:
            r = max(1, int(round(s.load * 100)))
            stages += [{"duration": "1s", "target": r}, {"duration": f"{s.duration_s - 1:g}s", "target": r}]
        vus = max(1, int(math.ceil(max(s.load for s in steps) * 30)))
        sc = {"executor": "ramping-arrival-rate", "startRate": max(1, int(round(steps[0].load * 100))),
              "timeUnit": "100s", "preAllocatedVUs": vus, "maxVUs": 4 * vus, "stages": stages, "exec": "completion"}
    return {"scenarios": {"followup": sc}}


def write_k6(plan: FollowUp, w: Workload) -> str:
    how = "one continuous k6 run: one scenario whose stages hold each load (1 s to move between loads)"
    body = json.dumps(_body(w))
    return (
        _header(plan, w, "//", how)
        + "// Run: k6 run THIS_FILE\nimport http from 'k6/http';\n\n"
        + "export const options = " + json.dumps(k6_options(plan), indent=2) + ";\n\n"
        + f"const BODY = {body};\n"
        + "export function setup() {\n  const missing = JSON.stringify(BODY).match(/FILL_IN_[A-Z_]+/g);\n"
        + "  if (missing) { throw new Error('fill in the placeholders first: ' + missing.join(', ')); }\n}\n"
        + "const WORDS = BODY._prompt_words;\n"
        + "export function completion() {\n"
        + "  const b = Object.assign({}, BODY, {prompt: 'hi '.repeat(WORDS)});\n  delete b._prompt_words;\n"
        + f"  http.post('{w.value('base_url')}{w.endpoint}', JSON.stringify(b), "
        + "{headers: {'Content-Type': 'application/json'}});\n}\n"
    )


def write_vegeta(plan: FollowUp, w: Workload) -> str:
    """One ``vegeta attack`` per step at the step's rate (``-rate=N/100s``), or ``-max-workers`` for a concurrency."""
    body = {k: v for k, v in _body(w).items() if k != "_prompt_words"}
    body["prompt"] = "hi " * w.input_tokens if w.input_tokens is not None else PLACEHOLDERS["input_tokens"]
    import base64

    target = json.dumps({"method": "POST", "url": f"{w.value('base_url')}{w.endpoint}",
                         "header": {"Content-Type": ["application/json"]},
                         "body": base64.b64encode(json.dumps(body).encode()).decode()})
    cmds = [f"cat > followup_target.json <<'EOF'\n{target}\nEOF"]
    for i, s in enumerate(_all_steps(plan)):
        load = (f"-rate=0 -max-workers={_users(s.load)}" if _conc(plan)
                else f"-rate={max(1, int(round(s.load * 100)))}/100s")
        cmds.append(f"vegeta attack -format=json -targets=followup_target.json {load} -duration={s.duration_s:g}s "
                    f"> followup_step{i:02d}.bin")
    return _sh(plan, w, SEPARATE, cmds)


def _schedule_csv(plan: FollowUp, w: Workload, how: str, cols: list[str], row) -> str:  # noqa: ANN001
    buf = io.StringIO()
    buf.write(_header(plan, w, "#", how))
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["order", "repeat", *cols, "duration_s", "warmup_s", "relaxation_s", "rho", "expected_requests"])
    k = 0
    for r in range(plan.repeats):
        for s in plan.steps:
            wr.writerow([k, r, *row(s), f"{s.duration_s:g}", f"{s.warmup_s:.1f}", f"{s.relaxation_s:.2f}",
                         f"{s.rho:.3f}", s.expected_requests])
            k += 1
    return buf.getvalue()


def write_jmeter(plan: FollowUp, w: Workload) -> str:
    """Threads per step (integers) for a stepping thread group (Concurrency / Ultimate Thread Group)."""
    if _conc(plan):
        how = "one continuous JMeter run with a stepping thread group: threads = the concurrency rounded up"
        return _schedule_csv(plan, w, how, ["threads", "approximates_concurrency"],
                             lambda s: [_users(s.load), f"{s.load:.6g}"])
    how = (f"one continuous JMeter run with a stepping thread group; each thread paced at one request per "
           f"{PACING_S:g} s (Constant Throughput Timer {60 / PACING_S:g}/min per thread): threads = "
           f"ceil(rate x {PACING_S:g}), approximating the rate threads / {PACING_S:g}")
    return _schedule_csv(plan, w, how, ["threads", "approximates_rps", "target_rps"],
                         lambda s: [_paced_users(s.load), f"{_paced_users(s.load) / PACING_S:.6g}", f"{s.load:.6g}"])


def write_lmbenchmark(plan: FollowUp, w: Workload) -> str:
    """The QPS per step (LMBenchmark runs one QPS per invocation; its flags are not pinned here)."""
    how = (SEPARATE + "; LMBenchmark takes a QPS per run: run its "
           + ("ShareGPT workload" if w.dataset == "sharegpt" else "workload with the lengths below")
           + " at each load below for duration_s")
    return _schedule_csv(plan, w, how, ["qps"] if not _conc(plan) else ["concurrency"],
                         lambda s: [f"{s.load:.6g}"] if not _conc(plan) else [_users(s.load)])


def write_csv(plan: FollowUp, w: Workload) -> str:
    how = "load and duration per step, for a tool bearing does not write"
    return _schedule_csv(plan, w, how, [f"load_{plan.unit}"], lambda s: [f"{s.load:.6g}"])


WRITERS = {"vllm": write_vllm, "sglang": write_sglang, "guidellm": write_guidellm_scenario,
           "guidellm-0.6": write_guidellm, "aiperf": write_aiperf,
           "genai-perf": write_genai_perf, "llmperf": write_llmperf, "inference-perf": write_inference_perf,
           "locust": write_locust, "k6": write_k6, "jmeter": write_jmeter, "vegeta": write_vegeta,
           "lmbenchmark": write_lmbenchmark, "csv": write_csv}
CONTINUOUS = {"guidellm", "guidellm-0.6", "inference-perf", "locust", "k6", "jmeter"}
"""Tools whose file runs the loads in one invocation (GuideLLM 0.6 and older: per run of equal step durations)."""
SUFFIX = {"vllm": ".sh", "sglang": ".sh", "guidellm": ".json", "guidellm-0.6": ".sh", "aiperf": ".sh",
          "genai-perf": ".sh", "llmperf": ".sh",
          "inference-perf": ".yaml", "locust": ".py", "k6": ".js", "jmeter": ".csv", "vegeta": ".sh",
          "lmbenchmark": ".csv", "csv": ".csv"}

__all__ = ["CONTINUOUS", "GUIDELLM_REQUEST_FORMATS", "PACING_S", "PLACEHOLDERS", "SUFFIX", "TOOLS", "WRITERS",
           "Workload", "guidellm_groups", "guidellm_scenario", "in_flight_curve", "inference_perf_config", "k6_options",
           "locust_stages", "measure_workload", "tool_of"]
