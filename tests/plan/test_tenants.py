"""Tenants (plan/tenants.py): per-tenant P99 60 s peaks, max-min fair quotas of the allowable capacity, worked
out by hand; the per-tenant nginx and Envoy rate limits written from them and checked by their tools."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.plan.tenants import max_min_fair, tenant_quotas

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "plan"
runner = CliRunner()


def test_max_min_fair_by_hand():
    # capacity 9 over demands 1, 4, 10: 1 fits (9/3 = 3), 4 fits (8/2 = 4), the last gets the 4 left
    assert max_min_fair({"a": 1.0, "b": 4.0, "c": 10.0}, 9.0) == {"a": 1.0, "b": 4.0, "c": 4.0}
    # capacity 6 over 5, 5, 5: 2 each
    assert max_min_fair({"x": 5.0, "y": 5.0, "z": 5.0}, 6.0) == pytest.approx({"x": 2.0, "y": 2.0, "z": 2.0})
    # everything fits: each gets its demand, 10 - 3 = 7 left over
    q = max_min_fair({"a": 1.0, "b": 2.0}, 10.0)
    assert q == {"a": 1.0, "b": 2.0}
    with pytest.raises(ParameterError):
        max_min_fair({"a": 1.0}, -1.0)


def test_tenant_peaks_and_quotas_by_hand():
    # 100 minutes; tenant a: 60 requests in every minute (1 req/s); tenant b: 600 in minutes 0..4, else 0
    starts, labels = [], []
    for m in range(100):
        starts += list(m * 60 + np.linspace(0.5, 59.5, 60))
        labels += ["a"] * 60
        if m < 5:
            starts += list(m * 60 + np.linspace(0.5, 59.5, 600))
            labels += ["b"] * 600
    t = tenant_quotas(starts, labels, 4.0, column="T", capacity_basis="given")
    rows = {r.tenant: r for r in t.tenants}
    assert rows["a"].peak_rps == pytest.approx(1.0)
    # b's per-minute counts: five 600s and ninety-five 0s; P99 (linear) at rank 0.99 x 99 = 98.01: 600 -> 10 req/s
    assert rows["b"].peak_rps == pytest.approx(10.0)
    # quotas of 4 req/s: a gets 1 (fits 4/2), b the 3 left
    assert rows["a"].quota_rps == pytest.approx(1.0) and rows["b"].quota_rps == pytest.approx(3.0)
    assert rows["b"].capped and not rows["a"].capped
    assert rows["b"].share_of_capacity == pytest.approx(10.0 / 4.0)
    assert t.sum_of_quotas_rps == pytest.approx(4.0) and t.unallocated_rps == pytest.approx(0.0)


def _trace(path: Path) -> Path:
    """An Azure-format CSV with a TENANT column: per minute alice 900, bob 120, carol 30 requests, 30 minutes."""
    t0 = dt.datetime(2023, 11, 16, 18, 0, 0)
    rows = []
    for m in range(30):
        for tenant, n in (("alice", 900), ("bob", 120), ("carol", 30)):
            rows += [(t0 + dt.timedelta(seconds=m * 60 + float(s)), tenant) for s in np.linspace(0.5, 59.5, n)]
    rows.sort()
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,TENANT\n"
                    + "".join(f"{t.strftime('%Y-%m-%d %H:%M:%S.%f')},100,20,{x}\n" for t, x in rows))
    return path


def test_cli_tenants_and_per_tenant_rate_limits(tmp_path):
    trace = _trace(tmp_path / "trace.csv")
    plan = tmp_path / "plan.json"
    r = runner.invoke(app, ["plan", "--limits", str(FIX / "limits_handmade.json"), "--profile",
                            str(FIX / "profile_handmade.json"), "--trace", str(trace), "--tenant-column", "TENANT",
                            "--target-rps", "3", "--json", str(plan)])
    assert r.exit_code == 0, r.output
    doc = json.loads(plan.read_text())
    # allowable 8 / 1.5 = 5.333 per instance; instances.total 2 -> 10.667 req/s shared
    cap = doc["instances"]["total"] * 8 / 1.5
    assert doc["tenants"]["capacity_rps"] == pytest.approx(cap)
    q = {x["tenant"]: x for x in doc["tenants"]["tenants"]}
    # peaks 15, 2, 0.5 req/s; carol 0.5 fits (cap / 3), bob 2 fits ((cap - 0.5) / 2), alice gets the rest
    assert (q["alice"]["peak_rps"], q["bob"]["peak_rps"], q["carol"]["peak_rps"]) == pytest.approx((15.0, 2.0, 0.5))
    assert q["carol"]["quota_rps"] == pytest.approx(0.5) and q["bob"]["quota_rps"] == pytest.approx(2.0)
    assert q["alice"]["quota_rps"] == pytest.approx(cap - 2.5)
    assert sum(x["quota_rps"] for x in q.values()) <= cap + 1e-9
    assert "tenant alice: peak 15 req/s" in r.output
    r = runner.invoke(app, ["export", str(tmp_path / "out"), "--plan", str(plan), "--limits",
                            str(FIX / "limits_handmade.json"), "--format", "envoy,nginx", "--check"])
    assert r.exit_code == 0, r.output
    http = (tmp_path / "out" / "nginx-limit-req-http.conf").read_text()
    assert "rate=490r/m;  # alice" in http  # (32 / 3 - 2.5) x 60 = 490 and "rate=120r/m;  # bob" in http
    assert "rate=30r/m;  # carol" in http and "$http_x_tenant_id" in http
    import yaml

    envoy = yaml.safe_load((tmp_path / "out" / "envoy-local-ratelimit.yaml").read_text())
    desc = {d["entries"][0]["value"]: d["token_bucket"] for d in envoy["typed_config"]["descriptors"]}
    assert set(desc) == {"alice", "bob", "carol"}
    b = desc["bob"]
    assert b["tokens_per_fill"] / float(b["fill_interval"].rstrip("s")) <= 2.0 + 1e-9
    if "not run" not in r.output:
        assert r.output.count(": passed") == 2


def test_tenant_column_needs_the_trace():
    r = runner.invoke(app, ["plan", "--limits", str(FIX / "limits_handmade.json"), "--profile",
                            str(FIX / "profile_handmade.json"), "--tenant-column", "TENANT"])
    assert r.exit_code != 0 and "--trace" in r.output
