"""Plain words for the internal codes that reach a reader: finding codes (``step_flagged``) and load-step
flags (``too_few_for_p99``). The report shows the words; the codes stay in ``summary.json`` and the raw JSON.
"""

from __future__ import annotations

import re

STEP_FLAGS: dict[str, str] = {
    "generator_behind": "the load generator fell behind the offered rate",
    "too_short": "steady window too short (< 30 s)",
    "not_steady": "not steady (latency and requests in flight still rising)",
    "throughput_below_offered": "completed rate below 70 % of the offered one",
    "rate_lower_bound": ("completed rate a lower bound: the send window was shorter than a typical request, so the "
                         "rate is read over the busy span"),
    "no_times": "no per-request times",
    "no_ci": "no confidence interval (the file holds summaries only)",
    "steadiness_unknown": "steadiness could not be checked",
    "littles_law": ("requests in flight differ from what the offered load implies (Little's law: a client queue, a "
                    "generator behind, or users pausing between requests)"),
}
"""The load-step flags of :mod:`bearing_lib.limits.curves` in words (``too_few_for_pNN`` is handled apart)."""

CODES: dict[str, str] = {
    "step_flagged": "load step flagged (still judged)",
    "step_invalid": "load step left out of the fit",
    "note": "note",
    "mix_skipped": "mix not fitted",
    "loader_notes": "how the files were read",
    "censored_above": "limit is a lower bound (the test never failed)",
    "censored_above_other_clauses": "limit is a lower bound (the test never failed on the other clauses)",
    "censored_below": "limit is an upper bound (failed at the first step)",
    "censored_no_data": "no limit: the steps cannot place it",
    "censored_not_monotone": "limit flagged: the curve passed again after failing",
    "absent_requests_failed": "requests missing from the files, put back as failed",
    "absent_requests_unknown": "requests missing from the files, outcome unknown",
    "no_error_column": "no error column: error rate unknown",
    "timezone_assumed": "time zone assumed (UTC)",
}
"""Finding codes in words; a code not listed here reads as its words (underscores as spaces)."""

TERMS: dict[str, str] = {
    "seq_len": "sequence length",
    "kv_bytes_per_token": "KV bytes per token",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cycle_correlation": "the cycle correlation",
}
"""Variable names that formulas and notes of the plan carry, in words."""

_TOO_FEW = re.compile(r"\btoo_few_for_p(\d+)(?:_(\d+))?\b")
_WORDS = {**STEP_FLAGS, **TERMS}
_KNOWN = re.compile(r"(?<![\w./-])(" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")(?![\w/-]|\.\w)")


def _too_few(m: re.Match[str]) -> str:
    q = m.group(1) + (f".{m.group(2)}" if m.group(2) else "")
    return f"too few requests for a P{q}"


def words(code: str) -> str:
    """A finding code or a load-step flag in words.

    >>> words("too_few_for_p99"), words("step_flagged"), words("slots_not_available")
    ('too few requests for a P99', 'load step flagged (still judged)', 'slots not available')
    """
    if code in CODES:
        return CODES[code]
    if code in STEP_FLAGS:
        return STEP_FLAGS[code]
    m = _TOO_FEW.fullmatch(code)
    if m:
        return _too_few(m)
    return code.replace("_", " ")


def plain(text: str) -> str:
    """``text`` with every load-step flag name and plan variable (:data:`TERMS`) in it replaced by words.

    >>> plain("step 0 at offered load 0.5: too_few_for_p95, littles_law")[:81]
    'step 0 at offered load 0.5: too few requests for a P95, requests in flight differ'
    """
    return _KNOWN.sub(lambda m: _WORDS[m.group(1)], _TOO_FEW.sub(_too_few, text))


__all__ = ["CODES", "STEP_FLAGS", "TERMS", "plain", "words"]
