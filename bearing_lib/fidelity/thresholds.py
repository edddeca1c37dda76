"""The thresholds a fidelity verdict is judged against (docs/report.md, "Fidelity").

They are effect sizes, not significance tests: with thousands of production requests any
difference is "significant", and what a reviewer needs to know is whether it is large enough
to move the limit.

Lengths (input, output tokens)
    **differs** when the two-sample Kolmogorov-Smirnov statistic ``D`` (the largest gap between
    the two empirical CDFs, ``scipy.stats.ks_2samp``) exceeds :data:`KS_DIFFERS`, or when more
    than :data:`OUTSIDE_DIFFERS` of production's requests lie outside the range the test sent
    (longer than its longest or shorter than its shortest): the limit then extrapolates. A
    ``D`` of 0.2 means that at some length the two CDFs are 20 points apart, e.g. 70 % of the
    test's prompts but only 50 % of production's are below it.
Prefix-cache hit rate
    the token hit ratio (cached prompt tokens / prompt tokens); **differs** when the two
    differ by more than :data:`CACHE_DIFFERS` (absolute): a cache hit skips prefill, so a test
    with 0 % hits measures a slower server than one with 40 %.
Burstiness
    the index of dispersion (variance / mean) of request counts in bins of the SLA's time
    scale; **differs** when one is more than :data:`IOD_RATIO` times the other and they are
    more than :data:`IOD_ABS` apart (a Poisson stream is 1; a fixed schedule is 0).
Request rate
    **differs** when the test's highest rate is below production's peak (the target load):
    the limit was never measured at the load it is compared with on one deployment, and the
    plan's instance count assumes capacity adds up linearly.
Model
    **differs** when both name a model and the names differ after lower-casing and dropping an
    organisation prefix (``meta-llama/``).
"""

from __future__ import annotations

KS_DIFFERS = 0.2
OUTSIDE_DIFFERS = 0.05
CACHE_DIFFERS = 0.10
IOD_RATIO = 2.0
IOD_ABS = 0.5
MIN_TEST_REQUESTS = 20
"""Fewer test requests with a length than this: the length dimension is ``unknown``."""
DEFAULT_TIME_SCALE_S = 60.0
"""Bin width of the burstiness counts when the SLA names no latency threshold."""

LENGTH_RULE = (f"differs when the Kolmogorov-Smirnov statistic D > {KS_DIFFERS:g} or more than "
               f"{OUTSIDE_DIFFERS:.0%} of production lies outside the tested range")
CACHE_RULE = f"differs when the cached-token ratios differ by more than {CACHE_DIFFERS:.0%} (absolute)"
IOD_RULE = (f"differs when one index of dispersion is more than {IOD_RATIO:g}× the other and they are more than "
            f"{IOD_ABS:g} apart (Poisson = 1, fixed schedule = 0)")
RATE_RULE = "differs when the test's highest rate is below production's peak (the target load)"
MODEL_RULE = "differs when both name a model and the names differ (case and organisation prefix ignored)"

__all__ = ["CACHE_DIFFERS", "CACHE_RULE", "DEFAULT_TIME_SCALE_S", "IOD_ABS", "IOD_RATIO", "IOD_RULE", "KS_DIFFERS",
           "LENGTH_RULE", "MIN_TEST_REQUESTS", "MODEL_RULE", "OUTSIDE_DIFFERS", "RATE_RULE"]
