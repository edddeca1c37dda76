"""Exports from the plan JSON: the numbers (worked out by hand here), and every exported file checked
by the tool that consumes it (promtool, kubernetes-validate, check-jsonschema with KEDA's CRD, the
Envoy API protos, nginx -t). Each validator is also shown to refuse a broken file, so a pass means
something. A validator that is not installed skips its test, except under CI (``CI`` set)."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import SchemaError
from bearing_lib.ops import validate
from bearing_lib.ops.exports import FORMATS, ExportTarget, burn_factor, export, read_plan, token_bucket

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "tests" / "fixtures" / "report"
PLAN_FIX = ROOT / "tests" / "fixtures" / "plan"
runner = CliRunner()


def _need(check: validate.Check) -> validate.Check:
    if check.ok is None:
        if os.environ.get("CI"):
            pytest.fail(f"validator missing under CI: {check.output}")
        pytest.skip(check.output)
    return check


@pytest.fixture
def handmade(tmp_path):
    """The hand-made report plan (docs: tests/fixtures/report/README.md) with its limits JSON."""
    numbers = read_plan(REPORT / "plan.json", limits_path=REPORT / "limits.json")
    written = export(numbers, list(FORMATS), tmp_path / "out", ExportTarget(namespace="llm"))
    return numbers, written


def _y(path: str) -> dict:
    return yaml.safe_load(Path(path).read_text())


def test_numbers_from_the_handmade_plan(handmade):
    numbers, w = handmade
    # plan.json: instances.per_instance_allowable_rps 2.61, cbu.threshold 0.8, base 1, total 2,
    # elasticity.cool_down_s 1200, max_instances 2; no buffer_plan → min replicas = base
    assert numbers.per_instance_allowable_rps == 2.61 and numbers.cbu_threshold == 0.8
    assert numbers.scale_target_rps == pytest.approx(0.8 * 2.61)
    hpa = _y(w.files["hpa"][0])
    assert hpa["spec"]["minReplicas"] == 1 and hpa["spec"]["maxReplicas"] == 2
    assert hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "2088m"  # 2.088 req/s
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 1200
    keda = _y(w.files["keda"][0])
    assert keda["spec"]["triggers"][0]["metadata"]["threshold"] == "2.088"
    assert keda["spec"]["minReplicaCount"] == 1 and keda["spec"]["maxReplicaCount"] == 2
    assert keda["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"][
        "stabilizationWindowSeconds"] == 1200
    # nginx: 2.61 req/s = 156.6 per minute, rounded down
    http = Path(w.files["nginx"][0]).read_text()
    assert "rate=156r/m;" in http
    assert "burst=2 nodelay;" in Path(w.files["nginx"][1]).read_text()
    # envoy: 2 tokens every ceil(2000 / 2.61) = 767 ms → 2.6076 req/s, never above 2.61
    tb = _y(w.files["envoy"][0])["typed_config"]["token_bucket"]
    assert tb == {"max_tokens": 2, "tokens_per_fill": 2, "fill_interval": "0.767s"}
    assert 2 / 0.767 <= 2.61


def test_prometheus_rules_carry_the_plan_and_the_sla(handmade):
    _, w = handmade
    doc = _y(w.files["prometheus"][0])
    rec = {r["record"]: r["expr"] for r in doc["groups"][0]["rules"]}
    alerts = {r["alert"]: r for r in doc["groups"][1]["rules"]}
    assert rec["bearing:cbu:ratio"] == "bearing:request_throughput:rate1m / (bearing:instances:count * 2.61)"
    assert rec["bearing:request_throughput:rate1m"] == 'sum(rate(vllm:request_success_total{namespace="llm"}[1m]))'
    assert alerts["BearingCBUHigh"]["expr"] == "bearing:cbu:ratio > 0.8" and alerts["BearingCBUHigh"]["for"] == "5m"
    # error budget 1% over 30 days (720 h): 10% in 1 h → burn 72; 2% in 1 h → 14.4; 5% in 6 h → 6
    assert burn_factor(0.10, 1, 30) == pytest.approx(72) and burn_factor(0.02, 1, 30) == pytest.approx(14.4)
    assert burn_factor(0.05, 6, 30) == pytest.approx(6)
    assert alerts["BearingErrorBudget10PercentIn1h"]["expr"] == "bearing:request_errors:ratio_rate1h > 0.72"
    assert alerts["BearingErrorBudgetBurnFast"]["expr"] == (
        "bearing:request_errors:ratio_rate1h > 0.144 and bearing:request_errors:ratio_rate5m > 0.144")
    assert alerts["BearingErrorBudgetBurnSlow"]["expr"] == (
        "bearing:request_errors:ratio_rate6h > 0.06 and bearing:request_errors:ratio_rate30m > 0.06")
    # p99(ttft_ms) <= 1000 ms → the 0.99 quantile of vLLM's TTFT histogram above 1 s
    assert alerts["BearingSLATtftP99"]["expr"] == (
        'histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{namespace="llm"}[5m]))) '
        "> 1")


def test_token_bucket_never_exceeds_the_rate():
    for rps in (0.05, 0.7611, 1.0, 2.61, 7.3, 33.3, 950.0):
        tb = token_bucket(rps)
        seconds = float(tb["fill_interval"].removesuffix("s"))
        assert seconds >= 0.05
        k = tb["tokens_per_fill"]
        assert k / seconds <= rps * (1 + 1e-12)  # never above the allowable rate
        assert k / seconds >= k / (k / rps + 0.001)  # and below it only by the 1 ms rounding of the interval


def test_every_exported_file_passes_its_validator(handmade):
    _, w = handmade
    checks = validate.check_written(w.files)
    assert [c.validator.split(" ")[0] for c in checks] == ["promtool", "kubernetes-validate", "check-jsonschema",
                                                           "Envoy", "nginx"]
    for c in checks:
        _need(c)
        assert c.ok, f"{c.path}: {c.validator}: {c.output}"


def test_promtool_refuses_a_broken_rule(handmade, tmp_path):
    _, w = handmade
    doc = _y(w.files["prometheus"][0])
    doc["groups"][1]["rules"][0]["expr"] = "bearing:cbu:ratio >"
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    assert _need(validate.promtool(p)).ok is False


def test_kubernetes_validate_refuses_a_misspelt_hpa_field(handmade, tmp_path):
    _, w = handmade
    doc = _y(w.files["hpa"][0])
    doc["spec"]["minReplica"] = doc["spec"].pop("minReplicas")
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    c = _need(validate.kubernetes(p))
    assert c.ok is False and "minReplica" in c.output


def test_keda_schema_refuses_an_unknown_field_and_a_wrong_type(handmade, tmp_path):
    _, w = handmade
    doc = _y(w.files["keda"][0])
    doc["spec"]["maxReplicas"] = 3  # the HPA's name, not KEDA's (maxReplicaCount)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    assert _need(validate.keda(p)).ok is False
    doc = _y(w.files["keda"][0])
    doc["spec"]["minReplicaCount"] = "one"
    p.write_text(yaml.safe_dump(doc))
    assert _need(validate.keda(p)).ok is False


def test_envoy_protos_refuse_an_unknown_field(handmade, tmp_path):
    _, w = handmade
    doc = _y(w.files["envoy"][0])
    doc["typed_config"]["token_bukket"] = doc["typed_config"].pop("token_bucket")
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    c = _need(validate.envoy(p))
    assert c.ok is False and "token_bukket" in c.output


def test_nginx_refuses_a_bad_rate(handmade, tmp_path):
    _, w = handmade
    http = tmp_path / "http.conf"
    http.write_text(Path(w.files["nginx"][0]).read_text().replace("rate=156r/m", "rate=fast"))
    assert _need(validate.nginx(http, w.files["nginx"][1])).ok is False


def test_a_plan_missing_keys_names_every_one(tmp_path):
    doc = json.loads((REPORT / "plan.json").read_text())
    del doc["cbu"]["threshold"]
    del doc["instances"]["per_instance_allowable_rps"]
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SchemaError) as exc:
        read_plan(p)
    msg = str(exc.value)
    assert "cbu.threshold" in msg and "instances.per_instance_allowable_rps" in msg and str(p) in msg


def test_the_plan_the_cli_writes_exports_and_validates(tmp_path, monkeypatch):
    """End to end: `bearing plan` on the hand-made limits/profile, then `bearing export --check`."""
    monkeypatch.chdir(ROOT)
    plan = tmp_path / "plan.json"
    r = runner.invoke(app, ["plan", "--limits", str(PLAN_FIX / "limits_handmade.json"),
                            "--profile", str(PLAN_FIX / "profile_handmade.json"), "--json", str(plan)])
    assert r.exit_code == 0, r.output
    doc = json.loads(plan.read_text())
    a = doc["instances"]["per_instance_allowable_rps"]
    assert a == pytest.approx(doc["instances"]["per_instance_q_ult_rps"] / doc["tier"]["target_fos"])
    tools = [shutil.which("promtool"), shutil.which("nginx") or Path("/usr/sbin/nginx").exists()]
    args = ["export", str(tmp_path / "out"), "--plan", str(plan), "--limits", str(PLAN_FIX / "limits_handmade.json")]
    if all(tools):
        args.append("--check")
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    hpa = _y(str(tmp_path / "out" / "hpa.yaml"))
    assert hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == f"{math.floor(0.8 * a * 1000)}m"
    manifest = json.loads((tmp_path / "out" / "exports.json").read_text())
    assert sorted(manifest["files"]) == sorted(FORMATS)
    if all(tools):
        assert r.output.count(": passed") == 5
        # the manifest says which validator passed each format (what a report's closing note lists)
        assert {c["format"]: c["ok"] for c in manifest["checks"]} == dict.fromkeys(FORMATS, True)


def test_cli_error_for_a_missing_plan_is_one_line(tmp_path):
    r = runner.invoke(app, ["export", str(tmp_path / "out"), "--plan", str(tmp_path / "nope.json")])
    assert r.exit_code == 1 and "the plan JSON file not found" in r.output


def test_bottleneck_cli_aligns_a_scrape_series_to_the_trace_steps(tmp_path):
    """A trace with two steps (epoch seconds) and a series of scrapes: the queue grows and the GPU is
    busy in step 1 only, so CMP-1 names GPU compute at step 1 (the limit step given)."""
    t0 = 1_733_000_000
    rows = ["request_id,start_s,end_s,latency_ms,status,run_id,step"]
    for i in range(10):
        step = 0 if i < 5 else 1
        start = t0 + i * 12  # step 0: t0 .. t0+48+10, step 1: t0+60 .. t0+118
        rows.append(f"{i},{start},{start + 10},10000,ok,r,{step}")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    series = tmp_path / "scrapes"
    series.mkdir()
    samples = {t0 + 5: (0, 40), t0 + 30: (0, 45), t0 + 65: (4, 96), t0 + 90: (9, 98), t0 + 110: (15, 99)}
    for t, (waiting, util) in samples.items():
        (series / f"scrape-{t}.prom").write_text(
            f"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {waiting}\n"
            f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{gpu=\"0\"}} {util}\n"
        )
    out = tmp_path / "b.json"
    r = runner.invoke(app, ["bottleneck", str(series), "--trace", str(trace), "--step", "1", "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    b = doc["bottleneck"]
    assert b["resource"] == "GPU compute" and b["fired"][0]["rule"] == "CMP-1"
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    # step 1 holds the samples at +65, +90, +110: waiting mean (4 + 9 + 15) / 3, GPU (96 + 98 + 99) / 300
    assert sig[(1, "requests_waiting")]["mean"] == pytest.approx(28 / 3)
    assert sig[(1, "gpu_utilization")]["mean"] == pytest.approx(2.93 / 3)
    assert sig[(0, "requests_waiting")]["mean"] == 0.0


def test_large_and_tiny_targets_round_down_or_are_refused(tmp_path):
    doc = json.loads((REPORT / "plan.json").read_text())
    doc["instances"]["per_instance_allowable_rps"] = 5333.3333  # target 0.8 × A = 4266.66664 req/s
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    w = export(read_plan(p), ["hpa", "keda"], tmp_path / "out")
    assert _y(w.files["keda"][0])["spec"]["triggers"][0]["metadata"]["threshold"] == "4266.666"
    assert _y(w.files["hpa"][0])["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "4266666m"
    doc["instances"]["per_instance_allowable_rps"] = 0.001  # target 0.0008 req/s < 1m
    p.write_text(json.dumps(doc))
    from bearing_lib.common.errors import ParameterError

    with pytest.raises(ParameterError, match="below 0.001"):
        export(read_plan(p), ["hpa"], tmp_path / "out2")


def test_queue_target_adds_a_second_metric_and_trigger_that_still_validate(tmp_path):
    numbers = read_plan(REPORT / "plan.json")
    w = export(numbers, ["hpa", "keda"], tmp_path / "out", ExportTarget(queue_target=8))
    hpa = _y(w.files["hpa"][0])
    assert [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]] == ["vllm_requests_per_second",
                                                                              "vllm_num_requests_waiting"]
    assert hpa["spec"]["metrics"][1]["pods"]["target"]["averageValue"] == "8000m"
    trig = _y(w.files["keda"][0])["spec"]["triggers"]
    assert trig[1]["metadata"] == {"serverAddress": ExportTarget().prometheus_url,
                                   "query": 'sum(vllm:num_requests_waiting{namespace="default"})', "threshold": "8"}
    for c in validate.check_written(w.files):
        assert _need(c).ok, c.output


@pytest.mark.parametrize("bound", ["upper", "lower", "none"])
def test_a_bound_on_the_limit_is_said_in_every_exported_file(tmp_path, bound):
    """The hand-made plan with its blended FOS turned into a bound: an upper bound (the test failed at its
    first step) makes every exported number an overstatement, and each file's header says so; the files still
    pass their validators (the warning is a comment)."""
    doc = json.loads((REPORT / "plan.json").read_text())
    doc["fos"]["blended"]["bound"] = bound
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    numbers = read_plan(plan, limits_path=REPORT / "limits.json")
    assert numbers.limit_bound == bound
    w = export(numbers, list(FORMATS), tmp_path / "out", ExportTarget(namespace="llm"))
    for paths in w.files.values():
        text = Path(paths[0]).read_text()
        if bound == "upper":
            assert "# WARNING: the plan's limit is an UPPER bound" in text
        elif bound == "lower":
            assert "# note: the plan's limit is a lower bound" in text
        else:
            assert "bound" not in text.split("\n", 3)[2]  # the third header line is the first note, if any
    manifest = json.loads((tmp_path / "out" / "exports.json").read_text())
    assert ("limit" in manifest["notes"]) == (bound != "none")
    if bound == "upper":
        for c in validate.check_written(w.files):
            _need(c)
            assert c.ok, f"{c.path}: {c.validator}: {c.output}"


def test_a_failure_floor_is_said_in_every_exported_file(tmp_path):
    """A plan red for a failure floor (round 21: the JMeter run whose 2.1 % of samples fail at every load): its
    exports are the other clauses' numbers, which no rate limit or instance count makes meet the SLA; each file's
    header says so, a lower bound is "never failed on the other clauses", and the files still validate. A plan
    without the key (written before round 21) reads as having none."""
    doc = json.loads((REPORT / "plan.json").read_text())
    assert "failure_floors" not in doc
    doc["fos"]["blended"]["bound"] = "lower"
    doc["failure_floors"] = ["mix all: the SLA fails at every tested load because about 2.1% of requests fail"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    numbers = read_plan(plan, limits_path=REPORT / "limits.json")
    assert numbers.floors
    w = export(numbers, list(FORMATS), tmp_path / "out", ExportTarget(namespace="llm"))
    for paths in w.files.values():
        text = Path(paths[0]).read_text()
        assert "# WARNING: the plan's limit is a lower bound (the load test never failed on the other clauses)" in text
        assert "a failure floor breaks the SLA at every load tested: these numbers are the other clauses'" in text
        assert "not a rate limit or more instances" in text
    # a floor seen at one load only: the test cannot show whether more instances would help, and the header does not
    # claim they cannot (the plan's failure_floors_one_load, round 22)
    doc["failure_floors_one_load"] = True
    plan.write_text(json.dumps(doc))
    numbers = read_plan(plan, limits_path=REPORT / "limits.json")
    assert numbers.floors and numbers.floors_one_load
    w = export(numbers, list(FORMATS), tmp_path / "out1", ExportTarget(namespace="llm"))
    for paths in w.files.values():
        text = Path(paths[0]).read_text()
        assert "with one load tested, whether more instances would help is untested" in text
        assert "more instances (" not in text and "not a rate limit or more instances" not in text
    for c in validate.check_written(w.files):
        _need(c)
        assert c.ok, f"{c.path}: {c.validator}: {c.output}"
