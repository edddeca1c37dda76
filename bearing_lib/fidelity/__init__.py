"""Fidelity of a load test to production: does the test that measured the limit look like the traffic the
limit is compared with? (docs/report.md, "Fidelity").

One module per concept: :mod:`.result` (the typed :class:`Fidelity` and its :class:`Dimension`), :mod:`.thresholds`
(the documented verdict rules), :mod:`.lengths` (input and output length: quantiles, Kolmogorov-Smirnov and
Wasserstein distances, the share outside the tested range), :mod:`.cache` (prefix-cache hit rate),
:mod:`.burstiness` (index of dispersion at the SLA's time scale), :mod:`.rate` (tested rates against the
production peak), :mod:`.identity` (model and endpoint), :mod:`.assess` (:func:`assess_fidelity`).

Names are imported on first use (PEP 562, :func:`bearing_lib.common.lazy.lazy_exports`): the report's
``summary.json`` reader needs the result types, not numpy and scipy, which only the assessment does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bearing_lib.common.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.fidelity.assess import assess_fidelity
    from bearing_lib.fidelity.result import VERDICTS, Dimension, Fidelity, Quantiles

_WHERE = {
    "Dimension": "bearing_lib.fidelity.result",
    "Fidelity": "bearing_lib.fidelity.result",
    "Quantiles": "bearing_lib.fidelity.result",
    "VERDICTS": "bearing_lib.fidelity.result",
    "assess_fidelity": "bearing_lib.fidelity.assess",
}

# a front door keeps plain sorted() order (tests/common/test_lazy.py, as bearing_lib.__all__ in
# tests/test_exported_members.py); ruff's RUF022 sorts constants first (isort style), which differs only here
__all__ = ["Dimension", "Fidelity", "Quantiles", "VERDICTS", "assess_fidelity"]  # noqa: RUF022


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
