"""Idle GPUs left out of the DCGM CSV and Prometheus (text and query JSON) loaders, as for AIPerf/GenAI-Perf.

The fixtures are written here, not by a DCGM exporter: field names, units and label names as NVIDIA's
dcgm-exporter writes them (NVIDIA/dcgm-exporter ``etc/default-counters.csv``: ``DCGM_FI_DEV_GPU_UTIL`` gauge
"GPU utilization (in %)", ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE`` gauges "Framebuffer memory used/free
(in MiB)", ``DCGM_FI_DEV_POWER_USAGE`` "Power draw (in W)"; every series labelled ``gpu``, ``UUID``,
``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``, as in its README's sample
scrape). One node, two GPUs over two scrapes: GPU 0 serves (87 % then 90 %, 70,000 then 71,000 MiB used of
81,000), GPU 1 holds nothing (0 %, 0 MiB at both). Expected values are worked out by hand from those numbers.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib.loaders import load

SERVING = {"gpu": "0", "util": (87, 90), "used": (70000, 71000)}
IDLE = {"gpu": "1", "util": (0, 0), "used": (0, 0)}
T = (1796240000, 1796240015)
TOTAL_MIB = 81000


def _labels(gpu: str) -> dict[str, str]:
    return {"gpu": gpu, "UUID": f"GPU-0000000{gpu}-aaaa-bbbb-cccc-dddddddddddd", "pci_bus_id": f"00000000:0{gpu}:00.0",
            "device": f"nvidia{gpu}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-a",
            "DCGM_FI_DRIVER_VERSION": "570.86.15"}


def _scrape(k: int) -> str:
    out = []
    for name, kind, help_ in (("DCGM_FI_DEV_GPU_UTIL", "util", "GPU utilization (in %)."),
                              ("DCGM_FI_DEV_FB_USED", "used", "Framebuffer memory used (in MiB)."),
                              ("DCGM_FI_DEV_FB_FREE", "free", "Framebuffer memory free (in MiB).")):
        out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
        for g in (SERVING, IDLE):
            v = TOTAL_MIB - g["used"][k] if kind == "free" else g[kind][k]
            lab = ",".join(f'{a}="{b}"' for a, b in _labels(g["gpu"]).items())
            out.append(f"{name}{{{lab}}} {v}")
    return "\n".join(out) + "\n"


def _finding(ds, code: str):
    (f,) = [f for f in ds.provenance.findings if f.code == code]
    return f


def _by_signal(ds, signal: str) -> list[tuple[str, float]]:
    f = ds.frame.filter(ds.frame["signal"] == signal).sort(["gpu", "time_s"])
    return list(zip(f["gpu"].to_list(), f["value"].to_list(), strict=True))


def _check(ds, n_null_idle: int) -> None:
    idle = _finding(ds, "idle_gpus")
    assert idle.level == "warning" and idle.count == 1
    assert "GPU 1 of node-a" in idle.message and "serving: GPU 0 of node-a" in idle.message
    # GPU 1's rows stay, unmapped; GPU 0's signals are the raw values in bearing's units
    assert _by_signal(ds, "gpu_utilization") == [("0", pytest.approx(0.87)), ("0", pytest.approx(0.90))]
    assert _by_signal(ds, "gpu_memory_used_bytes") == [("0", 70000 * 1048576.0), ("0", 71000 * 1048576.0)]
    gpu1 = ds.frame.filter(ds.frame["gpu"] == "1")
    assert gpu1.height == n_null_idle and gpu1["signal"].null_count() == n_null_idle


def test_a_dcgm_exporter_scrape_series_leaves_the_idle_gpu_out(tmp_path):
    folder = tmp_path / "scrapes"
    folder.mkdir()
    for k, t in enumerate(T):
        (folder / f"dcgm-{t}.prom").write_text(_scrape(k))
    ds = load(folder)
    assert ds.provenance.format == "prometheus-text"
    _check(ds, n_null_idle=2 * 3)  # 2 scrapes x 3 fields


def test_a_dcgm_csv_leaves_the_idle_gpu_out_with_its_memory_share(tmp_path):
    p = tmp_path / "dcgm.csv"
    lines = ["timestamp,gpu,Hostname,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_DEV_FB_USED,DCGM_FI_DEV_FB_FREE"]
    for k, t in enumerate(T):
        for g in (SERVING, IDLE):
            lines.append(f"{t},{g['gpu']},node-a,{g['util'][k]},{g['used'][k]},{TOTAL_MIB - g['used'][k]}")
    p.write_text("\n".join(lines) + "\n")
    ds = load(p)
    assert ds.provenance.format == "dcgm-csv"
    _check(ds, n_null_idle=2 * 4)  # 2 samples x (3 fields + the derived used share)
    assert _by_signal(ds, "gpu_memory_used_fraction") == [("0", pytest.approx(70000 / 81000)),
                                                          ("0", pytest.approx(71000 / 81000))]


def test_a_query_range_result_leaves_the_idle_gpu_out(tmp_path):
    result = []
    for name, kind in (("DCGM_FI_DEV_GPU_UTIL", "util"), ("DCGM_FI_DEV_FB_USED", "used")):
        for g in (SERVING, IDLE):
            result.append({"metric": {"__name__": name, **_labels(g["gpu"])},
                           "values": [[t, str(g[kind][k])] for k, t in enumerate(T)]})
    p = tmp_path / "query.json"
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    ds = load(p)
    assert ds.provenance.format == "prometheus-query-json"
    _check(ds, n_null_idle=2 * 2)


def test_a_gpu_that_held_memory_at_one_scrape_is_not_idle(tmp_path):
    # GPU 1 loads a model between the scrapes (0 then 512 MiB): it served, nothing is left out
    folder = tmp_path / "scrapes"
    folder.mkdir()
    IDLE_LATER = dict(IDLE, used=(0, 512))
    for k, t in enumerate(T):
        text = _scrape(k)
        if k == 1:
            text = text.replace('Hostname="node-a",DCGM_FI_DRIVER_VERSION="570.86.15"} 0\n# HELP DCGM_FI_DEV_FB_FREE',
                                f'Hostname="node-a",DCGM_FI_DRIVER_VERSION="570.86.15"}} {IDLE_LATER["used"][1]}\n'
                                "# HELP DCGM_FI_DEV_FB_FREE")
        (folder / f"dcgm-{t}.prom").write_text(text)
    ds = load(folder)
    assert not [f for f in ds.provenance.findings if f.code == "idle_gpus"]
    used = _by_signal(ds, "gpu_memory_used_bytes")
    assert ("1", 512 * 1048576.0) in used and len(used) == 4
