"""The report's "Bottleneck and operational settings" section (report/ops_section.py).

The bottleneck is checked on the real inference-perf KubeCon vLLM run (its per-stage Prometheus
reports): the limit stage and the queue lengths are read from the raw JSON here. The exports are
written next to the report, every one checked by its validator (promtool, kubernetes-validate,
check-jsonschema with the vendored KEDA CRD, the Envoy protos, nginx -t) — each validator's
verdict is re-derived here by running the tool on the file — and linked relative to the report,
so the links still resolve after the report folder is moved. A headless browser opens the moved
report and follows every link.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bearing_lib.report.model import OpsSection, build_report
from bearing_lib.report.ops_section import load_metrics, ops_section
from bearing_lib.report.render import write_report

from .conftest import hand_made, provenance

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KUBECON_VLLM = FIXTURES / "inference-perf" / "k8s-sigs-kubecon-na-2025" / "vllm"


def _report(out: Path, metrics_path: str = "", plan: dict | None = None) -> tuple[Path, OpsSection]:
    plan = plan or hand_made("plan")
    limits = hand_made("limits")
    ops = ops_section(plan_doc=plan, limits_doc=limits, output_dir=out, metrics=load_metrics(metrics_path),
                      metrics_path=metrics_path)
    m = build_report(limits=limits, profile=hand_made("profile"), plan=plan, provenance=provenance(), name="ops",
                     ops=ops)
    return write_report(m, out)["html"], m.ops.data


def _ops_html(html_path: Path) -> str:
    html = html_path.read_text(encoding="utf-8")
    ops = html[html.index('<section id="ops">'):]
    return ops[:ops.index("</section>")]


def test_without_metrics_the_section_says_so_and_how_to_give_them(tmp_path):
    html, data = _report(tmp_path / "r")
    assert data.bottleneck.given is False and data.bottleneck.statement == "no server metrics given"
    ops = _ops_html(html)
    assert "no server metrics given" in ops and "-p server_metrics PATH" in ops
    # the hand-made plan JSON has no economics section: said, not invented
    assert "the plan has no economics section" in ops


def test_bottleneck_on_the_real_inference_perf_reports(tmp_path):
    # independently: the first stage whose achieved rate is > 10 % below the requested rate, and its queue
    life = {s: json.loads((KUBECON_VLLM / f"stage_{s}_lifecycle_metrics.json").read_text())["load_summary"]
            for s in range(7)}
    limit = min(s for s in range(7) if life[s]["achieved_rate"] < 0.9 * life[s]["requested_rate"])
    queue = {s: json.loads((KUBECON_VLLM / f"stage_{s}_prometheus_metrics.json").read_text())["successes"]
             ["queue_len"]["mean"] for s in (limit - 1, limit)}
    html, data = _report(tmp_path / "r", str(KUBECON_VLLM))
    b = data.bottleneck
    assert b.given and b.format == "inference-perf-prometheus"  # the folder's lifecycle files are skipped
    assert b.steps == list(range(7))
    # the hand-made limits have no failing step at the metrics' stages for these mixes: the saturated stage is used
    for r in b.rows:
        assert r.limit_step == limit == 4
        assert r.resource == "engine queue" and [f.rule for f in r.rules] == ["CMP-2"]
        assert f"requests_waiting mean {queue[limit]:.4g} at step {limit}, {queue[limit - 1]:.4g} at step " \
               f"{limit - 1}" in r.statement
    ops = _ops_html(html)
    assert "<strong>engine queue</strong>" in ops and "no server metrics given" not in ops


def _validator_passes(fmt: str, path: Path, folder: Path) -> bool | None:
    """Run the validator on the file independently of bearing_lib.ops.validate (None: tool missing)."""
    if fmt == "prometheus":
        exe = shutil.which("promtool")
        return None if exe is None else subprocess.run([exe, "check", "rules", str(path)],
                                                      capture_output=True).returncode == 0
    if fmt == "keda":
        from bearing_lib.ops.validate import KEDA_SCHEMA

        return subprocess.run([sys.executable, "-m", "check_jsonschema", "--schemafile", str(KEDA_SCHEMA), str(path)],
                              capture_output=True).returncode == 0
    if fmt == "hpa":
        import kubernetes_validate
        import yaml

        try:
            kubernetes_validate.validate(yaml.safe_load(path.read_text()), kubernetes_validate.latest_version(),
                                         strict=True)
        except kubernetes_validate.ValidationError:
            return False
        return True
    return None


def test_exports_are_written_validated_and_linked_relative_to_the_moved_report(tmp_path):
    html, data = _report(tmp_path / "r")
    x = data.exports
    assert x.written and x.folder == "exports"
    files = {f.path: f for f in x.files}
    assert set(files) == {"exports/prometheus-rules.yaml", "exports/hpa.yaml", "exports/keda-scaledobject.yaml",
                          "exports/envoy-local-ratelimit.yaml", "exports/nginx-limit-req-http.conf",
                          "exports/nginx-limit-req-location.conf", "exports/plan.json", "exports/limits.json",
                          "exports/exports.json"}
    folder = tmp_path / "r"
    for path, f in files.items():
        if f.validator is None:
            continue
        independent = _validator_passes(f.format, folder / path, folder)
        if independent is not None:
            assert f.ok is independent is True, f
        assert f.verdict == ("passed" if f.ok else "FAILED" if f.ok is False else "not run")
    # the per-pod target the HPA gets: cbu.threshold 0.8 x per-instance allowable 2.61 req/s (hand-made plan)
    assert x.numbers.scale_target_rps == pytest.approx(0.8 * 2.61)
    # nothing written names the report's absolute folder (it is renamed after the run)
    for p in (folder / "exports").iterdir():
        assert str(folder) not in p.read_text(), p.name
    # move the report folder: every link still resolves
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(str(folder), moved)
    links = re.findall(r'<a href="([^"]+)">', _ops_html(moved / "report.html"))
    assert sorted(links) == sorted(files)
    assert all((moved / h).is_file() for h in links)


def test_a_format_that_cannot_be_written_is_said_and_the_rest_are_written(tmp_path):
    plan = hand_made("plan")
    plan["instances"]["per_instance_allowable_rps"] = 0.01  # 0.6 requests a minute: below nginx's 1r/m
    _, data = _report(tmp_path / "r", plan=plan)
    by_fmt = {f.format: f for f in data.exports.files}
    assert by_fmt["nginx"].verdict == "not written" and "1 request per minute" in by_fmt["nginx"].output
    assert by_fmt["hpa"].path == "exports/hpa.yaml" and (tmp_path / "r" / "exports" / "hpa.yaml").is_file()


def test_an_unavailable_plan_writes_no_exports(tmp_path):
    from bearing_lib.common.unavailable import Unavailable

    sec = ops_section(plan_doc=Unavailable("no limits: the test failed"), limits_doc=hand_made("limits"),
                      output_dir=tmp_path)
    assert sec.data.exports.to_dict() == {"written": False, "reason": "no capacity plan: no limits: the test failed",
                                   "files": []}
    assert not (tmp_path / "exports").exists()


def test_metrics_that_are_not_metrics_are_refused(tmp_path):
    from bearing_lib.common.errors import BearingError

    with pytest.raises(BearingError, match="not server metrics"):
        load_metrics(str(FIXTURES / "vllm" / "llm-d-1p1d"))


@pytest.mark.browser
def test_browser_renders_the_section_of_a_moved_report_and_every_link_opens(tmp_path):
    from tests.report.test_browser import ARGS, CHROMIUM, _need

    _need(CHROMIUM.exists() or shutil.which("chromium") is not None, "Chromium (/usr/bin/chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        _need(False, "the playwright Python package")
    _report(tmp_path / "r", str(KUBECON_VLLM))
    moved = tmp_path / "moved"
    shutil.move(str(tmp_path / "r"), moved)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = b.new_page()
        outside: list[str] = []
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                   else (outside.append(r.request.url), r.abort()))
        page.goto((moved / "report.html").as_uri())
        section = page.locator("section#ops")
        assert section.is_visible()
        assert section.locator("h2").inner_text() == "Bottleneck and operational settings"
        assert "engine queue" in section.locator("#ops-bottleneck").inner_text()
        hrefs = section.locator("#ops-exports a").evaluate_all("as => as.map(a => a.href)")
        assert len(hrefs) == 9
        for href in hrefs:  # the browser resolves each link against the moved file; the file opens
            assert href.startswith((moved / "exports").as_uri() + "/"), href
            want = Path(href.removeprefix("file://")).read_text()
            tab = b.new_page()
            from playwright.sync_api import Error

            downloads: list = []
            tab.on("download", lambda d, seen=downloads: seen.append(d))
            try:  # shown by the browser, or (an unknown type such as .yaml) offered as a download
                tab.goto(href)
                got = tab.evaluate("document.body.innerText")
            except Error as exc:
                if "Download is starting" not in str(exc):
                    raise
                tab.wait_for_timeout(200)
                got = Path(downloads[0].path()).read_text()
            assert got.strip() == want.strip(), href
            tab.close()
        b.close()
    assert outside == []


@pytest.mark.slow
def test_bearing_report_with_server_metrics_names_the_binding_resource_and_writes_the_exports(tmp_path):
    """End to end: limits fitted on the KubeCon vLLM sweep, its per-stage Prometheus reports as the
    server metrics, the bundled Azure conversation trace as production, an instance price."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    root = Path(__file__).resolve().parents[2]
    limits = tmp_path / "limits.json"
    r = CliRunner().invoke(app, ["limits", str(KUBECON_VLLM), "--sla", "p90(ttft) <= 2s", "--json", str(limits)])
    assert r.exit_code == 0, r.output
    # independently: the first stage whose P90 TTFT exceeds 2 s, in offered-load order
    life = {s: json.loads((KUBECON_VLLM / f"stage_{s}_lifecycle_metrics.json").read_text()) for s in range(7)}
    order = sorted(range(7), key=lambda s: life[s]["load_summary"]["requested_rate"])
    first_fail = next(s for s in order if life[s]["successes"]["latency"]["time_to_first_token"]["p90"] > 2.0)
    queue = {s: json.loads((KUBECON_VLLM / f"stage_{s}_prometheus_metrics.json").read_text())["successes"]
             ["queue_len"]["mean"] for s in range(7)}
    prev = order[order.index(first_fail) - 1]
    reports = tmp_path / "reports"
    r = CliRunner().invoke(app, [
        "report", "--name", "kubecon", "--reports-dir", str(reports), "-p", "limits_json", str(limits),
        "-p", "production_trace", str(root / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"),
        "-p", "server_metrics", str(KUBECON_VLLM), "-p", "price_per_hour", "4.1", "-p", "budget_per_month", "20000",
        "-p", "memory_preset", "llama-3.1-8b", "-p", "twin", "false", "-p", "n_boot", "100"])
    assert r.exit_code == 0, r.output
    d = reports / "kubecon"
    ops = json.loads((d / "summary.json").read_text())["ops"]["data"]
    (row,) = ops["bottleneck"]["rows"]
    assert row["limit_step"] == first_fail and row["resource"] == "engine queue"
    assert f"requests_waiting mean {queue[first_fail]:.4g} at step {first_fail}, {queue[prev]:.4g} at step " \
           f"{prev}" in row["statement"]
    assert "<strong>engine queue</strong>" in _ops_html(d / "report.html")
    # the plan section's scaling triggers: the queue at the last step that held the SLA, as the KEDA file has it
    b = json.loads((d / "summary.json").read_text())["plan"]["data"]["triggers"]["binding"]
    assert (b["resource"], b["signal"], b["failing_step"]) == ("engine queue", "requests_waiting", first_fail)
    assert b["threshold"] >= 1 and "threshold = requests_waiting at the last step that held the SLA" in b["evidence"]
    keda = (d / "exports" / "keda-scaledobject.yaml").read_text()
    assert "sum(vllm:num_requests_waiting" in keda
    assert "binding resource: engine queue" in (d / "report.html").read_text()
    for f in ops["exports"]["files"]:
        assert (d / f["path"]).is_file()
        if f["validator"]:
            assert f["verdict"] in ("passed", "not run"), f
    plan = json.loads((d / "exports" / "plan.json").read_text())
    money, tok = plan["economics"]["money"], plan["economics"]["tokens"]
    a = plan["instances"]["per_instance_allowable_rps"]
    assert money["usd_per_million_output_tokens"] == pytest.approx(4.1 / (a * tok["mean_output_tokens"] * 3600) * 1e6)
    assert money["monthly_cost_base"] == pytest.approx(plan["instances"]["base"] * 4.1 * 730)


def _scrapes_and_trace(tmp_path: Path) -> tuple[Path, Path]:
    """A per-request trace with two steps (epoch seconds) and a folder of vLLM + DCGM scrapes: in step 1
    the queue grows and the GPU is busy; the engine reports 8 running requests, KV usage and its pool."""
    t0 = 1_733_000_000
    rows = ["request_id,start_s,end_s,latency_ms,status,run_id,step"]
    for i in range(10):
        start = t0 + i * 12  # step 0: t0 .. t0+58, step 1: t0+60 .. t0+118
        rows.append(f"{i},{start},{start + 10},10000,ok,r,{0 if i < 5 else 1}")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    series = tmp_path / "scrapes"
    series.mkdir()
    samples = {t0 + 5: (0, 40, 0.02), t0 + 30: (0, 45, 0.03), t0 + 65: (4, 96, 0.10), t0 + 90: (9, 98, 0.12),
               t0 + 110: (15, 99, 0.14)}
    for t, (waiting, util, kv) in samples.items():
        (series / f"scrape-{t}.prom").write_text(
            f"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {waiting}\n"
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 8\n"
            f"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc {kv}\n"
            '# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="16",num_gpu_blocks="2000"} 1\n'
            f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{gpu=\"0\"}} {util}\n"
        )
    return series, trace


def test_timed_scrapes_are_put_in_the_load_tests_steps_for_the_bottleneck_and_the_kv_check(tmp_path):
    from bearing_lib.plan.memory import kv_metrics_check
    from bearing_lib.report.ops_section import bottleneck_part
    from bearing_lib.servers.kv_check import kv_gauge

    series, trace = _scrapes_and_trace(tmp_path)
    metrics = load_metrics(str(series), trace=str(trace))
    limits = {"mixes": [{"mix": {"name": "all"}, "run_id": "r", "q_ult": None,
                         "steps": [{"step": 0, "offered_load": 1.0, "status": "pass"},
                                   {"step": 1, "offered_load": 2.0, "status": "fail"}]}]}
    b = bottleneck_part(metrics, limits, metrics_path=str(series))
    (row,) = b.rows
    # step 1 holds +65, +90, +110: waiting mean 28/3 > 0 at step 0, GPU (96 + 98 + 99) / 300 >= 0.90
    assert row.limit_step == 1 and row.resource == "GPU compute" and row.rules[0].rule == "CMP-1"
    assert f"requests_waiting mean {28 / 3:.4g} at step 1" in row.statement
    # KV check at step 1: 8 running x ceil((1,000 + 200/2) / 16) = 69 blocks = 552 / 2,000 = 0.276 predicted;
    # measured mean (0.10 + 0.12 + 0.14) / 3 = 0.12
    c = kv_metrics_check(kv_gauge(metrics), mean_input_tokens=1000, mean_output_tokens=200)
    assert c.step == 1 and c.predicted_usage == pytest.approx(0.276)
    assert c.measured_usage == pytest.approx(0.12)
    # without the trace the samples have no step: the section says how to give one
    b0 = bottleneck_part(load_metrics(str(series)), limits, metrics_path=str(series))
    assert b0.rows == [] and "-p metrics_trace" in b0.statement


KUBECON_CONFIGS = ["vllm", "vllm_batch_size", "vllm_chunking_and_prefix_caching", "vllm_eagle", "vllm_quantization",
                   "vllm_v0_engine"]


@pytest.mark.shared_data
@pytest.mark.parametrize("config", KUBECON_CONFIGS)
def test_the_section_names_each_kubecon_configurations_bottleneck_from_its_raw_reports(shared_data, config):
    """The six vLLM configurations of the KubeCon NA 2025 inference-perf demo, read in place. The limit
    stage, the queue, the KV gauge and the preemptions are read from the raw JSON here, and the rule
    expected from them by the documented order (KV-1, KV-2, CMP-2: no GPU utilisation in these files)."""
    from bearing_lib.report.ops_section import bottleneck_part

    folder = shared_data(f"loadtests/inference-perf/k8s-sigs-kubecon-na-2025/{config}")
    stages = sorted(int(p.name.split("_")[1]) for p in folder.glob("stage_*_prometheus_metrics.json"))
    life = {s: json.loads((folder / f"stage_{s}_lifecycle_metrics.json").read_text())["load_summary"] for s in stages}
    prom = {s: json.loads((folder / f"stage_{s}_prometheus_metrics.json").read_text())["successes"] for s in stages}
    by_rate = sorted(stages, key=lambda s: life[s]["requested_rate"])
    limit = next((s for s in by_rate if life[s]["achieved_rate"] < 0.9 * life[s]["requested_rate"]), None)
    (row,) = bottleneck_part(load_metrics(str(folder)), None, metrics_path=str(folder)).rows
    assert row.limit_step == limit
    if limit is None:
        assert row.resource is None and "no limit step" in row.statement
        return
    prev = max(s for s in stages if s < limit)

    def mean(s, key, stat="mean"):
        return (prom[s].get(key) or {}).get(stat)

    expected = []
    kv = mean(limit, "kv_cache_usage_percentage", "p99")
    if kv is not None and kv >= 0.95:
        expected.append("KV-1")
    pre_now, pre_before = mean(limit, "num_preemptions_total"), mean(prev, "num_preemptions_total")
    if pre_now is not None and pre_before is not None and pre_now > pre_before:
        expected.append("KV-2")
    q_now, q_before = mean(limit, "queue_len"), mean(prev, "queue_len")
    if q_now is not None and q_now >= 1 and q_before is not None and q_now > q_before:
        expected.append("CMP-2")
    assert [f.rule for f in row.rules] == expected
    names = {"KV-1": "KV cache", "KV-2": "KV cache", "CMP-2": "engine queue"}
    assert row.resource == (names[expected[0]] if expected else None)


def test_bottleneck_at_limit_picks_the_run_or_names_the_runs():
    """The one orchestration `bearing bottleneck` and the ops section share: the only run of the metrics, else
    the asked run; several runs and none asked (or an unknown one) is an error naming them."""
    import polars as pl

    from bearing_lib.common.errors import ParameterError
    from bearing_lib.servers.bottleneck import bottleneck_at_limit

    def rows(run: str, kv_at_2: float) -> list[dict]:
        return [{"run_id": run, "step": s, "signal": "kv_cache_usage", "mean": v, "high": v, "first": v, "last": v,
                 "increase": None, "trend_per_s": None} for s, v in ((1, 0.5), (2, kv_at_2))]

    two = pl.DataFrame(rows("a", 0.97) + rows("b", 0.40))
    assert bottleneck_at_limit(two, limit_step=2, run_id="a").resource == "KV cache"  # 0.97 >= 0.95: rule KV-1
    b = bottleneck_at_limit(two, limit_step=2, run_id="b")
    assert b.resource is None and b.run_id == "b"  # 0.40: no rule fires
    with pytest.raises(ParameterError, match=r"the metrics hold 2 runs \(a, b\) and none is run 'c'"):
        bottleneck_at_limit(two, limit_step=2, run_id="c")
    with pytest.raises(ParameterError, match="none is named"):
        bottleneck_at_limit(two, limit_step=2)
    one = pl.DataFrame(rows("a", 0.97))
    assert bottleneck_at_limit(one, limit_step=2, run_id="other").run_id == "a"  # the only run is the run


def test_an_open_limit_is_said_open_in_the_fos_table_and_the_ops_sections_figures(tmp_path):
    """The short mix's limit CI open above ([5.6, null] rps): the report's FOS table and statement say "≥ …, open
    above", and the ops section's tokens row "≥ … (open above)" while its $ per 1M tokens, fleet cost and near-term
    count are open below, each a number only at its closed end (the plan's typed economics, not a dict)."""
    from bearing_lib.plan.capacity_plan import CapacityPlan
    from bearing_lib.plan.economics import PlanEconomics

    limits = hand_made("limits")
    limits["mixes"][0]["q_ult"]["ci95"] = [5.6, None]
    profile = hand_made("profile")
    profile["seq_len"] = json.loads((FIXTURES / "plan" / "profile_handmade.json").read_text())["seq_len"]
    profile["seq_len"].update(input_tokens={"mean": 1000.0}, output_tokens={"mean": 250.0})
    plan = CapacityPlan.build(json.loads(json.dumps(limits)), profile, price_per_hour=4.0).to_dict()
    out = tmp_path / "r"
    ops = ops_section(plan_doc=plan, limits_doc=limits, output_dir=out, write_exports=False)
    assert isinstance(ops.data.economics, PlanEconomics)
    m = build_report(limits=limits, profile=profile, plan=plan, provenance=provenance(), name="open", ops=ops)
    html = write_report(m, out)["html"].read_text(encoding="utf-8")
    fos = html[html.index('<section id="fos">'):]
    fos = fos[:fos.index("</section>")]
    lo = plan["fos"]["per_mix"][0]["fos"]["ci95"][0]
    assert plan["fos"]["per_mix"][0]["fos"]["ci95"][1] is None
    assert f"(≥ {lo:.2f}, open above)" in fos and "open above: no step above the limit failed a clause" in fos
    o = _ops_html(out / "report.html")
    tok = plan["economics"]["tokens"]["at_q_ult"]["total_tokens_per_s_ci95"]
    assert tok[1] is None and f"≥ {tok[0]:,.0f}" in o and "(open above)" in o
    usd = plan["economics"]["money"]["usd_per_million_output_tokens_ci95"]
    assert usd[0] is None and "(open below)" in o and f"≤ {usd[1]:.3f}" in o
    near = plan["economics"]["staged"]["near_term"]["instances_ci95"]
    assert near[0] is None and f"≤ {near[1]}" in o
