"""JMeter XML JTL (``<testResults>``).

The first test writes the Apache-2.0 CSV fixture (``tests/fixtures/jmeter/HTMLReportTestFile.csv``)
as the XML JMeter would save for the same samples (one ``<sample>`` per row, the CSV fields
as attributes) and checks every canonical value against the CSV rows read with the csv
module. The others are small hand-written files whose expected values are read off them.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from bearing_lib import InputError, load_trace
from bearing_lib.loaders import detect

APACHE = Path(__file__).resolve().parents[1] / "fixtures" / "jmeter" / "HTMLReportTestFile.csv"
ATTR = {"timeStamp": "ts", "elapsed": "t", "Latency": "lt", "Connect": "ct", "IdleTime": "it", "success": "s",
        "label": "lb", "responseCode": "rc", "responseMessage": "rm", "threadName": "tn", "dataType": "dt",
        "bytes": "by", "sentBytes": "sby", "grpThreads": "ng", "allThreads": "na"}


def _rows():
    with open(APACHE, newline="") as fh:
        return list(csv.DictReader(fh))


def _xml(rows) -> str:
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<testResults version="1.2">']
    for r in rows:
        attrs = " ".join(f"{a}={quoteattr(r[c])}" for c, a in ATTR.items())
        inner = ""
        if r["failureMessage"]:
            inner = (f"<assertionResult><name>check</name><failure>true</failure><error>false</error>"
                     f"<failureMessage>{r['failureMessage']}</failureMessage></assertionResult>")
        out.append(f"<sample {attrs}>{inner}<java.net.URL>http://h/x</java.net.URL></sample>")
    out.append("</testResults>")
    return "\n".join(out) + "\n"


def test_xml_of_the_apache_file_reads_like_its_csv(tmp_path):
    rows = _rows()
    p = tmp_path / "results.jtl"
    p.write_text(_xml(rows))
    assert detect(p).name == "jmeter-jtl-xml"
    f = load_trace(p, ttfb_as_ttft=True).frame.sort("source_row")
    assert f.height == len(rows) == 255
    assert f["source_row"].to_list() == list(range(1, 256))
    assert f["start_s"].to_list() == pytest.approx([int(r["timeStamp"]) / 1000 for r in rows])
    assert f["latency_ms"].to_list() == [float(r["elapsed"]) for r in rows]
    assert f["ttft_ms"].to_list() == [float(r["Latency"]) for r in rows]
    assert f["status"].to_list() == ["ok" if r["success"] == "true" else "error" for r in rows]
    errors = [f"{r['responseCode']}: {r['failureMessage'] or r['responseMessage']}" for r in rows
              if r["success"] == "false"]
    assert f.filter(f["status"] == "error")["error"].to_list() == errors
    assert set(f["offered_load"]) == {float(rows[0]["allThreads"])}
    # the same file as CSV gives the same canonical frame
    g = load_trace(APACHE, ttfb_as_ttft=True).frame.sort("source_row")
    for col in ("start_s", "end_s", "latency_ms", "ttft_ms", "status", "error", "offered_load"):
        assert f[col].to_list() == g[col].to_list(), col


XML = """<?xml version="1.0" encoding="UTF-8"?>
<testResults version="1.2">
<sample t="300" lt="0" ts="1700000000000" s="false" lb="TC checkout" rc="" tn="TG 1-1" dt="" by="0" ng="1" na="1"
 rm="Number of samples in transaction : 2, number of failing samples : 1">
  <httpSample t="100" lt="40" ts="1700000000000" s="true" lb="GET cart" rc="200" rm="OK" tn="TG 1-1" dt="text"
   by="10" ng="1" na="1"><java.net.URL>http://h/cart</java.net.URL></httpSample>
  <httpSample t="200" lt="60" ts="1700000000100" s="false" lb="POST pay" rc="429" rm="Too Many Requests"
   tn="TG 1-1" dt="text" by="5" ng="1" na="1"><java.net.URL>http://h/pay</java.net.URL></httpSample>
</sample>
<httpSample t="500" lt="50" ts="1700000001000" s="true" lb="GET home" rc="200" rm="OK" tn="TG 1-1" dt="text" by="9"
 ng="1" na="1">
  <httpSample t="20" lt="20" ts="1700000001000" s="true" lb="GET home-0" rc="302" rm="Found" tn="TG 1-1" dt="text"
   by="1" ng="1" na="1"/>
  <httpSample t="480" lt="30" ts="1700000001020" s="true" lb="GET home-1" rc="200" rm="OK" tn="TG 1-1" dt="text"
   by="8" ng="1" na="1"/>
</httpSample>
<httpSample t="30000" lt="0" ts="1700000002000" s="false" lb="GET slow"
 rc="Non HTTP response code: java.net.SocketTimeoutException" rm="Non HTTP response message: Read timed out"
 tn="TG 1-1" dt="text" by="0" ng="1" na="1"/>
<httpSample t="80" lt="30" ts="1700000003000" s="false" lb="GET check" rc="200" rm="OK" tn="TG 1-1" dt="text"
 by="3" ng="1" na="1">
  <assertionResult><name>body</name><failure>true</failure><error>false</error>
   <failureMessage>Test failed: text expected to contain /ok/</failureMessage></assertionResult>
</httpSample>
"""


def test_nesting_statuses_and_a_cut_file(tmp_path):
    p = tmp_path / "run.xml"
    p.write_text(XML + "</testResults>\n")
    tr = load_trace(p)
    f = tr.frame.sort("source_row")
    # TC parent left out, its two children are requests; the redirect sub-results are not
    assert f["latency_ms"].to_list() == [100.0, 200.0, 500.0, 30000.0, 80.0]
    t0 = 1_700_000_000.0
    assert f["start_s"].to_list() == pytest.approx([t0, t0 + 0.1, t0 + 1, t0 + 2, t0 + 3])
    assert f["status"].to_list() == ["ok", "rejected", "ok", "timeout", "error"]
    assert f["error"][4] == "200: Test failed: text expected to contain /ok/"
    codes = {x.code: x for x in tr.provenance.findings}
    assert codes["transaction_controller_parents"].count == 1
    assert "truncated_xml" not in codes
    # the same file cut in the middle of the last sample (gzip too)
    cut = tmp_path / "cut.jtl.gz"
    cut.write_bytes(gzip.compress(XML[: XML.rindex("<assertionResult>")].encode()))
    tr2 = load_trace(cut)
    assert tr2.frame.height == 4
    assert {x.code for x in tr2.provenance.findings} >= {"truncated_xml"}


def test_xml_that_is_not_a_jtl(tmp_path):
    p = tmp_path / "x.xml"
    p.write_text('<?xml version="1.0"?><testResults version="1.2"></testResults>')
    with pytest.raises(InputError, match="no sample"):
        load_trace(p)
    q = tmp_path / "y.jtl"
    q.write_text("<testResults version='1.2'><httpSample ts='1' t='1' lb='a' s='true'/>"
                 "<httpSample ts='x' t='1' lb='a' s='true'/></testResults>")
    with pytest.raises(InputError, match="whole number") as exc:
        load_trace(q)
    assert "row 2, field 'timeStamp'" in str(exc.value)  # the row is the sample's number in the file
    r = tmp_path / "z.xml"
    r.write_text("<?xml version='1.0'?><testResults><unclosed></testResults>")
    with pytest.raises(InputError, match="not a readable XML JTL"):
        load_trace(r)


def test_a_sample_without_a_required_attribute_is_named(tmp_path):
    p = tmp_path / "r.jtl"
    p.write_text("<testResults version='1.2'><httpSample ts='1700000000000' t='5' lb='a' s='true'/>"
                 "<httpSample ts='1700000000100' t='5' lb='a'/></testResults>")
    with pytest.raises(InputError, match=r"row 2, field 's': a sample without the attribute\(s\) \['s'\]"):
        load_trace(p)
