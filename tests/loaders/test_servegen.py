"""ServeGen aggregates loader, on the real files.

Expected values are computed independently in the test with gzip + csv (rates) and
json + ast.literal_eval (length PMFs), and match the traces README facts: m-large 162
clients, 2,016 windows, aggregate mean / peak / min 195.8 / 583.0 / 48.4 req/s;
deepseek-r1 73 clients, 16.0 / 42.5 / 4.3, rate-weighted mean input / output tokens
1,268 / 1,527; mm-image 35 clients, 9.47 / 13.3 / 4.85. One client (mm-image chunk 25,
Apache-2.0) is bundled under tests/fixtures/servegen/ so a clone can run the single-file tests.
"""

from __future__ import annotations

import ast
import csv
import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from bearing_lib import BadValueError, InputError, load, load_trace
from bearing_lib.data.ratewindows import RateWindows
from bearing_lib.loaders import detect
from bearing_lib.loaders.servegen import rate_weighted_mean

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "servegen" / "mm-image"


def _rates(folder: Path) -> dict[str, list[tuple[float, float]]]:
    out = {}
    for p in sorted(folder.glob("chunk-*-trace.csv.gz")):
        cid = re.match(r"chunk-(\d+)-trace", p.name).group(1)
        with gzip.open(p, "rt", newline="") as fh:
            out[cid] = [(float(r[0]), float(r[1])) for r in csv.reader(fh)]
    return out


def _aggregate(rates):
    per_window: dict[float, float] = defaultdict(float)
    for rows in rates.values():
        for t, r in rows:
            per_window[t] += r
    return per_window


def _as_printed(value: float, text: str) -> bool:
    """``value`` rounds to ``text`` as the README printed it (same number of decimals)."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(value - float(text)) <= 0.5 * 10**-decimals + 1e-12


def _weighted_mean(folder: Path, rates, field):
    num = den = 0.0
    for p in sorted(folder.glob("chunk-*-dataset.json.gz")):
        cid = re.match(r"chunk-(\d+)-dataset", p.name).group(1)
        with gzip.open(p, "rt") as fh:
            doc = json.load(fh)
        starts = sorted(float(w) for w in doc)
        for k, w in enumerate(starts):
            pmf = ast.literal_eval(doc[next(x for x in doc if float(x) == w)][field])
            if not pmf or sum(pmf.values()) == 0:
                continue
            mean = sum(v * p for v, p in pmf.items()) / sum(pmf.values())
            hi = starts[k + 1] if k + 1 < len(starts) else float("inf")
            weight = sum(r for t, r in rates[cid] if w <= t < hi)
            num += mean * weight
            den += weight
    return num / den


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "rel,clients,windows,mean,peak,low,fits",
    [
        ("language/m-large", 162, 2016, "195.8", "583.0", "48.4", (78_842, 20_997)),
        ("reason/deepseek-r1", 73, 144, "16.0", "42.5", "4.3", (2_589, 522)),
        ("multimodal/mm-image", 35, 144, "9.47", "13.3", "4.85", (1_755, 339)),
    ],
)
def test_servegen_folders_in_place(shared_data, rel, clients, windows, mean, peak, low, fits):
    folder = shared_data(f"traces/servegen-aggregates/{rel}")
    assert detect(folder).name == "servegen"
    rw = load(folder)
    assert isinstance(rw, RateWindows) and rw.kind == "rates"
    rates = _rates(folder)
    per_window = _aggregate(rates)
    agg = rw.aggregate()
    assert rw.frame["client"].n_unique() == len(rates) == clients
    assert agg.height == len(per_window) == windows
    assert agg["window_start_s"].to_list() == sorted(per_window)
    assert agg["rate_rps"].to_list() == pytest.approx([per_window[t] for t in sorted(per_window)])
    vals = list(per_window.values())
    assert _as_printed(sum(vals) / len(vals), mean)
    assert _as_printed(max(vals), peak)
    assert _as_printed(min(vals), low)
    assert agg["rate_rps"].mean() == pytest.approx(sum(vals) / len(vals))
    assert set(rw.frame["window_s"].to_list()) == {600.0}
    # non-empty client-windows by fitted inter-arrival family (README: Gamma / Weibull)
    patterns = rw.frame.filter(pl.col("rate_rps") > 0)["pattern"].value_counts()
    counts = dict(zip(patterns["pattern"].to_list(), patterns["count"].to_list(), strict=True))
    assert (counts.get("Gamma"), counts.get("Weibull")) == fits
    assert sum(counts.values()) == sum(1 for rows in rates.values() for _, r in rows if r > 0)
    assert rw.provenance.time_origin == "relative"
    assert len(rw.provenance.files) == len(list(folder.iterdir()))
    if rel == "language/m-large":
        assert rw.length_pmfs == {}
        assert rw.frame["window_start_s"].max() == 1_209_000.0  # 14 days of 600 s windows


@pytest.mark.shared_data
def test_servegen_rate_weighted_lengths(shared_data):
    folder = shared_data("traces/servegen-aggregates/reason/deepseek-r1")
    rw = load(folder)
    rates = _rates(folder)
    for field, truth in (("input_tokens", 1268), ("output_tokens", 1527)):
        expected = _weighted_mean(folder, rates, field)
        assert round(expected) == truth
        assert rate_weighted_mean(rw, field) == pytest.approx(expected, rel=1e-12)
    # PMFs parsed to the same numbers as ast.literal_eval on the raw strings
    with gzip.open(folder / "chunk-5-dataset.json.gz", "rt") as fh:
        doc = json.load(fh)
    raw = ast.literal_eval(doc["21600"]["output_tokens"])
    assert rw.length_pmfs["chunk-5"][21600.0]["output_tokens"] == {float(k): v for k, v in raw.items()}


def test_servegen_single_bundled_chunk_file():
    path = HERE / "chunk-25-trace.csv.gz"
    assert detect(path).name == "servegen"
    rw = load(path)
    with gzip.open(path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    f = rw.frame
    assert f.height == len(rows) == 144
    assert f["client"].unique().to_list() == ["chunk-25"]
    assert f["rate_rps"].to_list() == pytest.approx([float(r[1]) for r in rows])
    assert f["cv"].to_list() == pytest.approx([float(r[2]) for r in rows])
    assert f["pattern"].to_list() == [r[3] or None for r in rows]  # empty windows: no fitted pattern
    assert f["shape"].to_list() == pytest.approx([float(r[4]) for r in rows])
    assert rw.length_pmfs == {}  # a single trace file carries no PMFs


def test_servegen_bundled_folder_with_pmfs(tmp_path):
    # the bundled client as a one-client folder (copies in tmp_path; the originals are untouched)
    for p in HERE.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    rw = load(tmp_path)
    with gzip.open(HERE / "chunk-25-dataset.json.gz", "rt") as fh:
        doc = json.load(fh)
    assert rw.length_pmfs["chunk-25"][0.0]["image_tokens"] == {192.0: 0.5, 300.0: 0.5}
    assert set(rw.length_pmfs["chunk-25"]) == {float(w) for w in doc}
    rates = _rates(tmp_path)
    assert rate_weighted_mean(rw, "text_tokens") == pytest.approx(_weighted_mean(tmp_path, rates, "text_tokens"))
    with pytest.raises(InputError, match="no length distribution named 'input_tokens'"):
        rate_weighted_mean(rw, "input_tokens")


def test_servegen_bad_pattern_names_row(tmp_path):
    p = tmp_path / "chunk-1-trace.csv"
    p.write_text("0,0.5,1.0,Gamma,1.0,2.0\n600,0.5,1.0,Lognormal,1.0,2.0\n")
    with pytest.raises(BadValueError, match=r"row 2, field 'pattern': expected Gamma or Weibull or empty, found 'Lo"):
        load(p)


def test_servegen_is_not_a_request_trace():
    with pytest.raises(InputError, match=r"holds rates \(servegen\), not one row per request"):
        load_trace(HERE / "chunk-25-trace.csv.gz")
