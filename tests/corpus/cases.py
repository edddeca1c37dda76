"""The bad-input corpus: one case per broken input, grouped by class, with its expected outcome.

Each :class:`Case` writes its files (from :mod:`tests.corpus.recipes`) into a fresh
folder, runs one ``bearing`` command on them and expects an exit code and words in the
output: for an error, the file / row / column and what was expected; for a documented
flagged handling (exit 0), the finding's name. ``docs/bad-input.md`` lists the classes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.corpus.recipes import AZURE, HEADER, T0, azure, edited, stepped_csv, stepped_rows, to_csv

ROOT = Path(__file__).resolve().parents[2]
PLAN_FIXTURES = ROOT / "tests" / "fixtures" / "plan"

Files = dict[str, str | bytes]
Argv = Callable[[dict[str, Path], Path], list[str]]


@dataclass(frozen=True)
class Case:
    """One corpus entry: ``files`` (name → content), the command (``argv`` from the written
    paths and an output folder), the exit ``code`` and ``words`` that must all appear."""

    id: str
    klass: str
    files: Callable[[], Files]
    argv: Argv
    code: int
    words: tuple[str, ...]
    slow: bool = False


def _set(col: str, value: object, *, where: Callable[[dict], bool] = lambda r: True) -> Callable[[list[dict]], None]:
    def fn(rows: list[dict]) -> None:
        for r in rows:
            if where(r):
                r[col] = value
    return fn


def _first(col: str, value: object) -> Callable[[list[dict]], None]:
    def fn(rows: list[dict]) -> None:
        rows[0][col] = value
    return fn


def _times(factor: float) -> Callable[[list[dict]], None]:
    def fn(rows: list[dict]) -> None:
        for r in rows:
            r["start_s"] = repr(float(r["start_s"]) * factor)
            r["end_s"] = repr(float(r["end_s"]) * factor)
    return fn


def _all(*fns: Callable[[list[dict]], None]) -> Callable[[list[dict]], None]:
    def fn(rows: list[dict]) -> None:
        for f in fns:
            f(rows)
    return fn


def inspect(name: str = "t.csv") -> Argv:
    return lambda p, out: ["inspect", str(p[name])]


def limits(sla: str = "p95(ttft) <= 250ms", name: str = "t.csv", *extra: str) -> Argv:
    def argv(p: dict[str, Path], out: Path) -> list[str]:
        more = [str(p[e[1:]]) if e.startswith("@") else e for e in extra]
        return ["limits", str(p[name]), "--sla", sla, "--json", str(out / "limits.json"), "--n-boot", "0", *more]
    return argv


def profile(name: str = "t.csv") -> Argv:
    return lambda p, out: ["profile", str(p[name]), "--json", str(out / "profile.json"), "--mixes", "none"]


def plan(*extra: str) -> Argv:
    def argv(p: dict[str, Path], out: Path) -> list[str]:
        more = [str(p[e[1:]]) if e.startswith("@") else e for e in extra]
        return ["plan", "--limits", str(p["limits.json"]), "--profile", str(p["profile.json"]), *more]
    return argv


def canon(fn: Callable[[list[dict]], None] | None = None, header: list[str] | None = None) -> Callable[[], Files]:
    return lambda: {"t.csv": edited(fn, header) if fn else stepped_csv()}


def plan_docs(limits_edit: Callable[[dict], object] | None = None, profile_edit: Callable[[dict], object] | None = None,
              limits_text: str | None = None, profile_text: str | None = None) -> Callable[[], Files]:
    def files() -> Files:
        lim = json.loads((PLAN_FIXTURES / "limits_handmade.json").read_text(encoding="utf-8"))
        prof = json.loads((PLAN_FIXTURES / "profile_handmade.json").read_text(encoding="utf-8"))
        if limits_edit:
            limits_edit(lim)
        if profile_edit:
            profile_edit(prof)
        return {"limits.json": limits_text if limits_text is not None else json.dumps(lim),
                "profile.json": profile_text if profile_text is not None else json.dumps(prof)}
    return files


def _big_with_nul_in_model() -> Files:
    rows = stepped_rows(n_per_step=400)
    for r in rows:
        r["model"] = "llama"
    rows[-1]["model"] = "lla\x00ma"
    return {"t.csv": to_csv(rows)}


def _mooncake(lines: list[str]) -> Callable[[], Files]:
    return lambda: {"t.jsonl": "\n".join(lines) + "\n"}


MOON = '{"timestamp": %d, "input_length": 10, "output_length": 5, "hash_ids": [1]}'
GOOD_AZ = ["2023-11-16 18:17:03.9799600,5,1", "2023-11-16 18:17:04.9799600,6,2"]
HDR = ",".join(HEADER)
ROW = to_csv(stepped_rows()[:1]).splitlines()[1]


def _gz_truncated() -> Files:
    blob = gzip.compress(stepped_csv().encode())
    return {"t.csv.gz": blob[: len(blob) // 2]}


def _parquet_truncated() -> Files:
    import io

    import polars as pl

    buf = io.BytesIO()
    pl.read_csv(stepped_csv().encode()).write_parquet(buf)
    b = buf.getvalue()
    return {"t.parquet": b[: len(b) // 2]}


VLLM = ROOT / "tests" / "fixtures" / "vllm" / "llm-d-1p1d" / "benchmark_2025-05-11_23-00-27.json"


def _vllm(**change: object) -> Callable[[], Files]:
    """The real vLLM benchmark result (tests/fixtures/vllm) with keys changed."""
    def files() -> Files:
        doc = json.loads(VLLM.read_text(encoding="utf-8"))
        doc.update(change)
        return {"bench.json": json.dumps(doc)}
    return files


def _mixes(doc: object) -> Callable[[], Files]:
    return lambda: {"t.csv": stepped_csv(), "mixes.json": json.dumps(doc)}


def _weights(doc: object) -> Callable[[], Files]:
    return lambda: {"t.csv": stepped_csv(), "weights.json": json.dumps(doc)}


def _production(n: int = 600, factor: float = 1.0) -> str:
    rows = [{"request_id": f"p{i}", "start_s": repr((T0 + 0.5 * i) * factor), "latency_ms": 900.0,
             "input_tokens": 200 + i % 50, "output_tokens": 40 + i % 9, "status": "ok"} for i in range(n)]
    return to_csv(rows)


U = "units"
F = "out-of-range values"
S = "CSV/JSON structure"
M = "semantic"
G = "flagged handling"

CASES: list[Case] = [
    # ------------------------------------------------------------------ units off by 1000
    Case("epoch-ms", U, canon(_times(1e3)), inspect(), 1,
         ("t.csv", "field 'start_s'", "looks like epoch milliseconds", "divide by 1e3")),
    Case("epoch-us", U, canon(_times(1e6)), inspect(), 1, ("looks like epoch microseconds", "divide by 1e6")),
    Case("epoch-ns", U, canon(_times(1e9)), inspect(), 1, ("looks like epoch nanoseconds", "divide by 1e9")),
    Case("epoch-2128", U, canon(_times(3.0)), inspect(), 1,
         ("field 'start_s'", "expected epoch seconds between 2000-01-01 and 2100-01-01")),
    Case("latency-in-us", U, canon(_first("latency_ms", 9.0e10)), inspect(), 1,
         ("row 2", "field 'latency_ms'", "at most 86400000 ms (24 h)", "in us or ns")),
    Case("epoch-ms-limits", U, canon(_times(1e3)), limits(), 1, ("looks like epoch milliseconds",)),
    Case("epoch-ms-profile", U, lambda: {"t.csv": _production(factor=1e3)}, profile(), 1,
         ("looks like epoch milliseconds", "field 'start_s'")),
    Case("epoch-ms-plan-trace", U, lambda: {**plan_docs()(), "t.csv": _production(factor=1e3)},
         plan("--trace", "@t.csv"), 1, ("t.csv", "looks like epoch milliseconds")),
    # ------------------------------------------------------------------ out-of-range floats
    Case("latency-1e308", F, canon(_first("latency_ms", "1e308")), inspect(), 1,
         ("row 2", "field 'latency_ms'", "at most 86400000 ms", "1e+308")),
    Case("latency-inf", F, canon(_first("latency_ms", "inf")), inspect(), 1,
         ("field 'latency_ms'", "expected a finite latency in ms")),
    Case("ttft-nan", F, canon(_first("ttft_ms", "NaN")), inspect(), 1, ("field 'ttft_ms'", "finite latency")),
    Case("ttft-negative", F, canon(_first("ttft_ms", -5)), inspect(), 1,
         ("field 'ttft_ms'", "expected a non-negative number")),
    Case("tokens-negative", F, canon(_first("output_tokens", -1)), inspect(), 1,
         ("field 'output_tokens'", "non-negative")),
    Case("tokens-1e9", F, canon(_first("input_tokens", 10**9)), inspect(), 1,
         ("field 'input_tokens'", "at most 100,000,000 tokens")),
    Case("start-inf", F, canon(_first("start_s", "inf")), inspect(), 1, ("field 'start_s'", "finite time")),
    Case("end-before-start", F, canon(_first("end_s", T0 - 10)), inspect(), 1,
         ("field 'end_s'", "request ends before it starts")),
    Case("offered-negative", F, canon(_set("offered_load", -2.0, where=lambda r: r["step"] == 0)), limits(), 1,
         ("field 'offered_load'", "expected a positive offered load", "40 row(s)")),
    Case("offered-zero", F, canon(_set("offered_load", 0.0, where=lambda r: r["step"] == 0)), inspect(), 1,
         ("expected a positive offered load",)),
    Case("offered-unit-unknown", F, canon(_set("offered_load_unit", "qps")), inspect(), 1,
         ("field 'offered_load_unit'", "expected one of rps, concurrency")),
    Case("status-unknown", F, canon(_first("status", "OK!")), inspect(), 1,
         ("field 'status'", "expected one of ok, error")),
    Case("several-at-once", F, canon(_all(_first("ttft_ms", -1), _first("status", "weird"),
                                          _first("latency_ms", "1e300"))), inspect(), 1,
         ("3 problems", "field 'ttft_ms'", "field 'status'", "field 'latency_ms'")),
    Case("azure-tokens-negative", F, lambda: {"t.csv": azure(["2023-11-16 18:17:03.9799600,-5,1"])}, inspect(), 1,
         ("field 'input_tokens'", "non-negative")),
    Case("vllm-negative-rate", F, _vllm(request_rate=-4), inspect("bench.json"), 1,
         ("bench.json", "field 'request_rate'", "expected a non-negative request rate, found -4")),
    Case("vllm-ttft-1e308", F, _vllm(mean_ttft_ms=1e308), limits("p99(ttft) <= 1s", "bench.json"), 1,
         ("bench.json", "field 'ttft_ms_mean'", "at most 86400000 ms", "1e+308")),
    Case("mooncake-negative-time", F, _mooncake([MOON % 0, MOON % -5000]), inspect("t.jsonl"), 1,
         ("t.jsonl", "row 2", "field 'start_s'", "expected seconds from the trace start, >= 0")),
    # ------------------------------------------------------------------ CSV / JSON structure
    Case("duplicate-column", S, lambda: {"t.csv": "request_id,start_s,start_s,latency_ms\n1,1700000000,1,5\n"},
         inspect(), 1, ("field 'start_s'", "appears twice (columns 2 and 3)", "unique column names")),
    Case("azure-duplicate-column", S, lambda: {"t.csv": AZURE + ",GeneratedTokens\n" + GOOD_AZ[0] + ",1\n"},
         inspect(), 1, ("appears twice",)),
    Case("azure-short-row", S, lambda: {"t.csv": azure([GOOD_AZ[0], "2023-11-16 18:17:04.9799600,5"])},
         inspect(), 1, ("row 3", "too few fields: found 2, expected 3")),
    Case("azure-long-row", S, lambda: {"t.csv": azure([GOOD_AZ[0], GOOD_AZ[1] + ",7"])}, inspect(), 1,
         ("row 3", "too many fields: found 4, expected 3")),
    Case("canonical-short-rows", S, lambda: {"t.csv": stepped_csv() + ",".join(ROW.split(",")[:-2]) + "\n"
                                             + ",".join(ROW.split(",")[:-1]) + "\n"}, inspect(), 1,
         ("2 problems", "row 122", "row 123", "too few fields")),
    Case("short-row-profile", S, lambda: {"t.csv": azure([GOOD_AZ[0], "2023-11-16 18:17:04.9799600,5"])},
         profile(), 1, ("too few fields",)),
    Case("nul-bytes", S, lambda: {"t.csv": (HDR + "\n" + ROW + "\n").encode().replace(b"run", b"r\x00n", 1)},
         inspect(), 1, ("NUL bytes", "UTF-8")),
    Case("utf16", S, lambda: {"t.csv": stepped_csv().encode("utf-16")}, inspect(), 1, ("NUL bytes", "UTF-16")),
    Case("nul-in-value-past-head", S, _big_with_nul_in_model, inspect(), 1, ("field 'model'", "NUL byte")),
    Case("header-only", S, lambda: {"t.csv": HDR + "\n"}, inspect(), 1, ("header but no data rows",)),
    Case("header-only-azure", S, lambda: {"t.csv": AZURE + "\r\n"}, profile(), 1, ("header but no data rows",)),
    Case("empty-file", S, lambda: {"t.csv": ""}, inspect(), 1, ("t.csv", "an empty file")),
    Case("whitespace-file", S, lambda: {"t.csv": "\n \n\t\n"}, limits(), 1, ("t.csv", "an empty file")),
    Case("empty-folder", S, lambda: {"d/.keep": ""}, lambda p, out: ["inspect", str(p["d/.keep"].parent)], 1,
         ("the folder is empty",)),
    Case("empty-folder-limits", S, lambda: {"d/.keep": ""},
         lambda p, out: ["limits", str(p["d/.keep"].parent), "--sla", "p99(ttft) <= 1s", "--json",
                         str(out / "l.json")], 1, ("the folder is empty",)),
    Case("missing-path", S, lambda: {}, lambda p, out: ["inspect", str(out / "nope.csv")], 1,
         ("nope.csv", "no such file or folder")),
    Case("mixed-types", S, lambda: {"t.csv": azure([GOOD_AZ[0], "2023-11-16 18:17:04.9799600,five,1"])},
         inspect(), 1, ("row 3", "field 'ContextTokens'", "expected a whole number, found 'five'")),
    Case("mixed-types-two-columns", S,
         lambda: {"t.csv": azure(["2023-11-16 18:17:03.9799600,five,1", "2023-11-16 18:17:04.9799600,5,x"])},
         inspect(), 1, ("2 problems", "field 'ContextTokens'", "field 'GeneratedTokens'")),
    Case("fractional-tokens", S, lambda: {"t.csv": azure(["2023-11-16 18:17:03.9799600,5.5,1"])}, inspect(), 1,
         ("expected a whole number, found '5.5'",)),
    Case("text-in-latency", S, canon(_first("latency_ms", "fast")), limits(), 1,
         ("row 2", "field 'latency_ms'", "expected a number, found 'fast'")),
    Case("vllm-text-for-number", S, _vllm(mean_ttft_ms="fast"), inspect("bench.json"), 1,
         ("field 'mean_ttft_ms'", "expected a number in ms, found 'fast'")),
    Case("vllm-wrong-shape", S, _vllm(request_rate={"a": 1}), inspect("bench.json"), 1,
         ("bench.json", "field 'request_rate'", "expected a request rate (a number or 'inf')")),
    Case("jsonl-mixed-types", S, _mooncake([MOON % 0, MOON.replace("%d", '"soon"')]), inspect("t.jsonl"), 1,
         ("row 2", "field 'timestamp'", "expected a number, found 'soon'")),
    Case("bad-timestamp", S, lambda: {"t.csv": azure(["16/11/2023 18:17,5,1"])}, inspect(), 1,
         ("field 'TIMESTAMP'", "expected a timestamp like")),
    Case("mixed-timezones", S, lambda: {"t.csv": azure([GOOD_AZ[0], "2023-11-16 18:17:04.9799600+00:00,5,1"])},
         inspect(), 1, ("one convention",)),
    Case("missing-column", S, lambda: {"t.csv": "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9799600,5\n"},
         lambda p, out: ["inspect", str(p["t.csv"]), "--format", "azure-llm-inference"], 1,
         ("missing column(s) ['GeneratedTokens']", "found columns")),
    Case("jsonl-truncated", S, _mooncake([MOON % 0, MOON % 1000, '{"timestamp": 2000, "input_len']),
         inspect("t.jsonl"), 1, ("line 3", "looks truncated", "--skip-bad-lines")),
    Case("jsonl-not-object", S, _mooncake([MOON % 0, "[1, 2]", MOON % 1000]), inspect("t.jsonl"), 1,
         ("line 2", "expected a JSON object")),
    Case("gzip-truncated", S, _gz_truncated, inspect("t.csv.gz"), 1, ("gzip stream is truncated or corrupt",)),
    Case("parquet-truncated", S, _parquet_truncated, inspect("t.parquet"), 1,
         ("t.parquet", "not a readable Parquet file (truncated")),
    Case("binary-garbage", S, lambda: {"t.csv": bytes(range(1, 256)) * 8}, inspect(), 1, ("no known format fits",)),
    Case("json-wrong-shape-plan", S, plan_docs(lambda d: d.update(mixes=5)), plan(), 1,
         ("limits.json", "mixes: Input should be a valid list", "(found 5)")),
    Case("json-truncated-plan", S, plan_docs(limits_text='{"mixes": ['), plan(), 1,
         ("limits.json", "not valid JSON")),
    Case("json-empty-plan", S, plan_docs(profile_text=""), plan(), 1, ("profile.json",)),
    Case("json-array-plan", S, plan_docs(profile_text="[1, 2]"), plan(), 1, ("profile.json",)),
    # ------------------------------------------------------------------ semantic
    Case("sla-metric-absent", M, canon(_set("ttft_ms", None)), limits("p99(ttft) <= 500ms"), 1,
         ("SLA clause 'p99(ttft) <= 500ms'", "t.csv", "no ttft_ms value", "pick a metric")),
    Case("sla-metric-some-steps", M, canon(_set("ttft_ms", None, where=lambda r: r["step"] == 2)),
         limits("p95(ttft) <= 250ms"), 1, ("for only 2 of 3 steps", "run_id/step run/2", "have none")),
    Case("sla-two-clauses-absent", M, canon(_set("ttft_ms", None)),
         limits("p99(ttft) <= 500ms and goodput(itl<=50ms) >= 90%"), 1,
         ("2 problems", "'p99(ttft) <= 500ms'", "itl_ms")),
    Case("sla-unparseable", M, canon(), limits("p99(ttft) <= fast"), 1, ("SLA clause", "p99(ttft) <= fast")),
    Case("sla-unknown-metric", M, canon(), limits("p99(tbt) <= 5ms"), 1, ("SLA clause", "tbt")),
    Case("mixes-match-nothing", M, _mixes([{"name": "huge", "bounds": {"input_tokens": [1e6, 2e6]}}]),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "@mixes.json"), 1,
         ("matches none of the 120 requests", "'huge'", "input_tokens 100–1300")),
    Case("mixes-empty-bounds", M, _mixes([{"name": "m", "bounds": {"input_tokens": [10, 5]}}]),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "@mixes.json"), 1, ("bounds", "expected lo < hi")),
    Case("mixes-unknown-dimension", M, _mixes([{"name": "m", "bounds": {"prompt": [0, 5]}}]),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "@mixes.json"), 1, ("unknown dimension 'prompt'",)),
    Case("weights-sum-not-1", M, _weights({"all": 0.6}),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "none", "--weights", "@weights.json"), 1,
         ("shares must sum to 1", "found 0.6")),
    Case("weights-two-shares-off", M, _weights({"a": 0.7, "b": 0.2}),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "none", "--weights", "@weights.json"), 1,
         ("shares must sum to 1", "found 0.9", "a: 0.7, b: 0.2")),
    Case("weights-negative", M, _weights({"all": -1}),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "none", "--weights", "@weights.json"), 1,
         ("weight of 'all' must be ≥ 0",)),
    Case("loadpoints-for-profile", M, lambda: {}, lambda p, out: [
        "profile", str(ROOT / "tests/fixtures/guidellm/guidellm_report_v2.json"), "--json", str(out / "p.json")], 1,
         ("load-test results", "a traffic profile needs production requests")),
    Case("plan-unknown-tier", M, plan_docs(), plan("--tier", "gold"), 1, ("gold",)),
    # ------------------------------------------------------------------ documented flagged handling (exit 0)
    Case("unsorted-is-sorted", G, canon(lambda rows: rows.reverse()), inspect(), 0, ("unsorted", "sorted by start_s")),
    Case("duplicate-ids-kept", G, canon(_set("request_id", "same", where=lambda r: r["step"] == 1)), inspect(), 0,
         ("duplicate_ids", "40 rows share 1 request id(s)")),
    Case("timezone-assumed", G, lambda: {"t.csv": azure(GOOD_AZ)}, inspect(), 0, ("timezone_assumed",)),
    Case("relative-times", G, canon(_times(1e-6)), inspect(), 0, ("relative_times_assumed",)),
    Case("crlf-bom", G, lambda: {"t.csv": b"\xef\xbb\xbf" + stepped_csv().replace("\n", "\r\n").encode()},
         inspect(), 0, ("rows:     120",)),
    Case("weights-relative-counts", G, _weights({"all": 700}),
         limits("p95(ttft) <= 250ms", "t.csv", "--mixes", "none", "--weights", "@weights.json"), 0,
         ("blended capacity",)),
    Case("jsonl-truncated-skipped", G, _mooncake([MOON % 0, MOON % 1000, '{"timestamp": 2000, "input_len']),
         lambda p, out: ["inspect", str(p["t.jsonl"]), "--skip-bad-lines"], 0, ("skipped_lines",)),
    # ------------------------------------------------------------------ report / weekly (notebooks via papermill)
    Case("report-unknown-parameter", M, lambda: {}, lambda p, out: [
        "report", "--name", "x", "--reports-dir", str(out / "reports"), "-p", "bogus", "1"], 1,
         ("unknown parameter(s) 'bogus'",)),
    Case("weekly-bad-week", M, lambda: {}, lambda p, out: [
        "weekly", "--week", "2026-W99", "--reports-dir", str(out / "reports")], 1, ("2026-W99",)),
    Case("report-missing-production", M, plan_docs(), lambda p, out: [
        "report", "--name", "x", "--reports-dir", str(out / "reports"), "-p", "limits_json", str(p["limits.json"])],
         1, ("missing required parameter(s) production_trace",)),
    Case("report-limits-truncated", S, lambda: {"limits.json": '{"mixes": [', "prod.csv": _production()},
         lambda p, out: ["report", "--name", "x", "--reports-dir", str(out / "reports"), "-p", "limits_json",
                         str(p["limits.json"]), "-p", "production_trace", str(p["prod.csv"])], 1,
         ("limits.json", "not valid JSON"), slow=True),  # found before any kernel starts (docs/report.md)
    Case("weekly-production-epoch-ms", U, lambda: {**plan_docs()(), "prod.csv": _production(factor=1e3)},
         lambda p, out: ["weekly", "--week", "2026-W10", "--reports-dir", str(out / "reports"), "-p", "limits_json",
                         str(p["limits.json"]), "-p", "production_trace", str(p["prod.csv"])], 1,
         ("prod.csv", "row 2, field 'start_s'", "looks like epoch milliseconds"), slow=True),
    # found before any kernel starts (the week check loads the trace to read its clock): exit 1
    Case("report-loadtest-without-ttft", M, lambda: {"t.csv": edited(_set("ttft_ms", None)),
                                                     "prod.csv": _production()},
         lambda p, out: ["report", "--name", "x", "--reports-dir", str(out / "reports"), "-p", "loadtest",
                         str(p["t.csv"]), "-p", "sla", "p99(ttft) <= 500ms", "-p", "production_trace",
                         str(p["prod.csv"])], 1, ("bad input:", "no ttft_ms value"), slow=True),
]
