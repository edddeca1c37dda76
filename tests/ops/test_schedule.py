"""Scheduled scaling (ops/schedule.py): KEDA cron triggers from the profile's hour-of-day slots.

By hand: the floor per UTC hour is ceil(hour P95 / per-instance allowable), spread over the
failure domains when the plan has them; end to end on a two-day trace whose per-minute rate is
known by construction, through `bearing plan` and `bearing export --profile`, with the
ScaledObject checked against KEDA's CRD schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.data.mixes import MixSpec
from bearing_lib.ops.exports import read_plan
from bearing_lib.ops.schedule import daily_schedule, schedule_from_profile
from bearing_lib.traffic.profile import profile_traffic
from tests.factories import request_trace

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "plan"
runner = CliRunner()
HOURS = {**dict.fromkeys(range(8), 2.0), **dict.fromkeys(range(8, 18), 10.0), **dict.fromkeys(range(18, 24), 4.0)}


def test_floor_per_hour_by_hand():
    s = daily_schedule(HOURS, 3.0)
    # ceil(2 / 3) = 1 off-peak, ceil(10 / 3) = 4 from 08:00 to 18:00, ceil(4 / 3) = 2 from 18:00 to midnight
    assert s.floor == 1
    assert [(w.start_hour, w.end_hour, w.replicas) for w in s.windows] == [(8, 18, 4), (18, 24, 2)]
    assert [w.trigger() for w in s.windows] == [
        {"type": "cron", "metadata": {"timezone": "Etc/UTC", "start": "0 8 * * *", "end": "0 18 * * *",
                                      "desiredReplicas": "4"}},
        {"type": "cron", "metadata": {"timezone": "Etc/UTC", "start": "0 18 * * *", "end": "0 0 * * *",
                                      "desiredReplicas": "2"}}]
    # three zones, one lost: 4 -> ceil(4 / 2) = 2 per zone = 6; 2 and 1 -> 1 per zone = 3 (the floor)
    z = daily_schedule(HOURS, 3.0, zones=3)
    assert z.floor == 3 and [(w.start_hour, w.end_hour, w.replicas) for w in z.windows] == [(8, 18, 6)]
    assert "3 replicas off-peak; 08:00-18:00 UTC: 6 replicas" in z.statement()
    flat = daily_schedule(dict.fromkeys(range(24), 1.0), 3.0)
    assert flat.windows == () and "all day" in flat.statement()
    with pytest.raises(ParameterError):
        daily_schedule({25: 1.0}, 3.0)


def _two_day_profile(tmp_path: Path) -> Path:
    # two UTC days from 2026-11-02 00:00; every minute holds exactly 60 x the hour's rate, evenly spaced
    day0 = 1793577600.0
    rates = [HOURS[h] for h in range(24)] * 2
    starts = np.concatenate([day0 + 3600 * i + np.arange(int(r * 3600)) / r for i, r in enumerate(rates)])
    starts = np.append(starts, day0 + 2 * 86400 + 1)  # closes the last minute
    tr = request_trace({"start_s": starts, "input_tokens": np.full(starts.size, 100),
                        "output_tokens": np.full(starts.size, 10)})
    p = tmp_path / "profile.json"
    spec = MixSpec.from_dict(json.loads((FIX / "limits_handmade.json").read_text())["mix_spec"])
    p.write_text(json.dumps(profile_traffic(tr, mix_spec=spec, n_boot=0).to_dict(), default=lambda o: None))
    return p


def test_export_profile_writes_cron_triggers_that_keda_accepts(tmp_path):
    prof = _two_day_profile(tmp_path)
    doc = json.loads(prof.read_text())
    assert [r["p95_rps"] for r in doc["slots"]["hour_of_day"]["rows"]] == pytest.approx([HOURS[h] for h in range(24)])
    plan = tmp_path / "plan.json"
    r = runner.invoke(app, ["plan", "--limits", str(FIX / "limits_handmade.json"), "--profile", str(prof),
                            "--json", str(plan)])
    assert r.exit_code == 0, r.output
    numbers = read_plan(plan, limits_path=FIX / "limits_handmade.json")
    a = numbers.per_instance_allowable_rps  # every request is in the short mix: 12 req/s / FOS 1.5 = 8
    assert a == pytest.approx(12 / 1.5)
    out = tmp_path / "out"
    r = runner.invoke(app, ["export", str(out), "--plan", str(plan), "--limits", str(FIX / "limits_handmade.json"),
                            "--profile", str(prof), "--format", "keda", "--check"])
    assert r.exit_code == 0, r.output
    # ceil(2 / 8) = 1, ceil(10 / 8) = 2 from 08:00 to 18:00, ceil(4 / 8) = 1
    assert "schedule: 1 replicas off-peak; 08:00-18:00 UTC: 2 replicas" in r.output
    keda = yaml.safe_load((out / "keda-scaledobject.yaml").read_text())
    assert keda["spec"]["minReplicaCount"] == 1
    crons = [t for t in keda["spec"]["triggers"] if t["type"] == "cron"]
    assert crons == [{"type": "cron", "metadata": {"timezone": "Etc/UTC", "start": "0 8 * * *",
                                                   "end": "0 18 * * *", "desiredReplicas": "2"}}]
    assert keda["spec"]["triggers"][0]["type"] == "prometheus"
    manifest = json.loads((out / "exports.json").read_text())
    assert all(c["ok"] in (True, None) for c in manifest["checks"])
    assert any("scheduled floor" in n for n in manifest["notes"]["keda"])


def test_a_profile_without_hour_slots_is_refused_with_its_reason(tmp_path):
    numbers = read_plan(FIX.parent / "report" / "plan.json") if (FIX.parent / "report" / "plan.json").exists() \
        else None
    if numbers is None:
        pytest.skip("no plan fixture")
    with pytest.raises(SchemaError, match="no hour-of-day slots"):
        schedule_from_profile(FIX / "profile_handmade.json", numbers)
