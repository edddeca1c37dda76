"""Repeated findings said once (bearing_lib.report.flag_digest) and codes in words (bearing_lib.report.wording),
on HAND-MADE findings whose merged lines are written out by hand below."""

from __future__ import annotations

from bearing_lib.report.flag_digest import digest
from bearing_lib.report.model import Flag
from bearing_lib.report.templating import environment
from bearing_lib.report.wording import plain, words


def test_step_findings_that_say_the_same_are_one_line_naming_the_steps():
    src = "limits · a"
    flags = [Flag(src, "warning", "step_flagged", f"step {i} at offered load {x}: too_few_for_p99")
             for i, x in enumerate(["0.5", "1", "1.5", "2", "2.5"])]
    flags += [Flag(src, "warning", "step_invalid", "step 8 at offered load 4.5: too_short (excluded from the fit)"),
              Flag(src, "warning", "step_invalid", "step 9 at offered load 5: too_short (excluded from the fit)"),
              Flag(src, "warning", "step_invalid", "step 12 at offered load 6.5: too_short (excluded from the fit)"),
              Flag(src, "info", "note", "mixes=auto"), Flag(src, "info", "note", "mixes=auto"),
              Flag(src, "info", "note", "another note")]
    lines = digest(flags)
    assert [(ln.label, ln.count, ln.message) for ln in lines] == [
        ("load step flagged (still judged)", 5, "steps 0–4 at offered loads 0.5–2.5: too few requests for a P99"),
        ("load step left out of the fit", 3,
         "steps 8, 9, 12 at offered loads 4.5–6.5: steady window too short (< 30 s) (excluded from the fit)"),
        ("note", 2, "mixes=auto"),
        ("note", 1, "another note"),
    ]
    # one step stays as it was written
    one = digest([Flag(src, "warning", "step_flagged", "step 3 at offered load 2: not_steady")])
    assert one[0].message == "step 3 at offered load 2: not steady (latency and requests in flight still rising)"


def test_codes_and_step_flags_in_words_and_file_names_untouched():
    assert words("too_few_for_p99_9") == "too few requests for a P99.9"
    assert words("some_new_code") == "some new code"
    # every censoring the limits write has words of its own, not "censored no data" (a new user's read, round 22)
    assert words("censored_no_data") == "no limit: the steps cannot place it"
    assert words("censored_above_other_clauses") == ("limit is a lower bound (the test never failed on the other "
                                                     "clauses)")
    assert words("censored_not_monotone") == "limit flagged: the curve passed again after failing"
    assert plain("seq_len.csv holds seq_len, too_few_for_p95") == (
        "seq_len.csv holds sequence length, too few requests for a P95")


def test_parameters_not_given_and_raw_json_keeps_its_keys():
    env = environment()
    t = env.from_string("{% for k, v in p.items() %}{{ k }}={% if k|not_given(v) %}not given{% else %}{{ v }}"
                        "{% endif %};{% endfor %}|{{ raw|rawjson }}")
    out = t.render(p={"gpu_mem_gib": 0.0, "price_per_hour": 0.0, "gpu_count": 1, "metrics_offset_s": 0.0,
                      "concurrency": 0, "week": "", "tier": "standard"}, raw={"seq_len": 1})
    assert out.split("|")[0] == ("gpu_mem_gib=not given;price_per_hour=not given;gpu_count=1;metrics_offset_s=0.0;"
                                 "concurrency=not given;week=not given;tier=standard;")
    assert '&#34;seq_len&#34;: 1' in out.split("|")[1]
    # tested_instances 0 means "not stated" (the notebooks' parameter cell): the table read "0" beside the plan's
    # "1 assumed" (a new user's case, round 22)
    assert t.render(p={"tested_instances": 0}, raw={}).split("|")[0] == "tested_instances=not given;"
    assert t.render(p={"tested_instances": 2}, raw={}).split("|")[0] == "tested_instances=2;"
    # an empty option set or list was an empty row ("production_options |", a new user's read, round 22)
    assert t.render(p={"production_options": {}, "compare": []}, raw={}).split("|")[0] == (
        "production_options=not given;compare=not given;")

