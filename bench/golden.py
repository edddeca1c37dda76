"""Golden outputs: run the CLI's JSON outputs on real inputs into a folder, or compare two folders.

Used before and after a refactor ("keep numbers stable"): every difference must be intended.

    python bench/golden.py write OUTDIR      # run the commands below, write their JSON
    python bench/golden.py diff OLD NEW      # list every differing leaf (path, old, new)

The inputs are the bundled data plus, when ``BEARING_SHARED_DATA`` is set, real files read
in place from the shared folder. Not a test: it runs the whole CLI and takes a few minutes.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BEARING_SHARED_DATA", ROOT.parent / "shared" / "data"))
BEARING = [sys.executable, "-m", "bearing_lib.cli.main"]
LMB = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
AZ = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
MOON = ROOT / "data/traces/mooncake-fast25/conversation_trace.jsonl"

# (name, args); {out} is the JSON path
LIMITS = [
    ("limits_lmbench", [str(LMB), "--sla", "p95(ttft) <= 1s", "--sla", "error_rate <= 1%", "--n-boot", "200"]),
    ("limits_vllm_sweep", [str(SHARED / "loadtests/vllm-bench-serve/er0080-vllm-benchmarking/vllm_sweep_v0.25.1"),
                           "--sla", "p99(ttft) <= 2s", "--mixes", "none", "--n-boot", "200"]),
    ("limits_llmperf_yi", [str(SHARED / "loadtests/llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED"),
                           "--sla", "p99(ttft) <= 2s", "--mixes", "none", "--n-boot", "0"]),
]
PROFILES = [
    ("profile_azure", [str(AZ)]),
    ("profile_mooncake", [str(MOON)]),
    ("profile_servegen", [str(SHARED / "traces/servegen-aggregates/language/m-large")]),
    ("profile_azure_lmbmix", [str(AZ), "--mixes", "{limits_lmbench}"]),
    ("profile_mooncake_lmbmix", [str(MOON), "--mixes", "{limits_lmbench}"]),
]
PLANS = [
    ("plan_lmbench_azure", ["--limits", "{limits_lmbench}", "--profile", "{profile_azure_lmbmix}",
                            "--run", "llm-d-70b-2replicas/sharegpt"]),
    ("plan_lmbench_mooncake", ["--limits", "{limits_lmbench}", "--profile", "{profile_mooncake_lmbmix}",
                               "--tier", "critical", "--run", "llm-d-70b-2replicas/sharegpt"]),
    ("plan_short_azure", ["--limits", "{limits_lmbench}", "--profile", "{profile_azure_lmbmix}",
                          "--run", "llm-d-70b-2replicas/short_input", "--tested-instances", "2"]),
]


def _run(cmd: list[str], out: Path) -> None:
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    (out.with_suffix(".log")).write_text(f"$ {' '.join(cmd)}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}")
    print(f"{out.name}: exit {r.returncode}")


def write(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=False)
    paths: dict[str, str] = {}
    for group, cmd in ((LIMITS, "limits"), (PROFILES, "profile"), (PLANS, "plan")):
        for name, args in group:
            out = outdir / f"{name}.json"
            paths[name] = str(out)
            args = [a.format(**paths) for a in args]
            _run([*BEARING, cmd, *args, "--json", str(out)], out)


def _leaves(x: object, path: str = ""):
    if isinstance(x, dict):
        for k in sorted(x):
            yield from _leaves(x[k], f"{path}.{k}" if path else str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


IGNORE = ("bearing_version", "sha256", "generated")


def diff(old: Path, new: Path) -> int:
    n = 0
    for f in sorted(old.glob("*.json")):
        g = new / f.name
        if not g.exists():
            print(f"{f.name}: missing in {new}")
            n += 1
            continue
        # the output folders' own paths appear inside the documents (sources): compare without them
        a = dict(_leaves(json.loads(f.read_text().replace(str(old.resolve()), "OUT").replace(str(old), "OUT"))))
        b = dict(_leaves(json.loads(g.read_text().replace(str(new.resolve()), "OUT").replace(str(new), "OUT"))))
        for k in sorted(set(a) | set(b)):
            if any(s in k for s in IGNORE):
                continue
            if k not in a:
                print(f"{f.name}: + {k} = {b[k]!r}")
            elif k not in b:
                print(f"{f.name}: - {k} (was {a[k]!r})")
            elif not _same(a[k], b[k]):
                print(f"{f.name}: ~ {k}: {a[k]!r} -> {b[k]!r}")
            else:
                continue
            n += 1
    print(f"{n} difference(s)")
    return n


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(1 if diff(Path(sys.argv[2]), Path(sys.argv[3])) else 0)
    else:
        sys.exit(__doc__)
