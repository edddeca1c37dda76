"""Fidelity of a load test to production: does the test that measured the limit look like the traffic the
limit is compared with? (docs/report.md, "Fidelity").

One module per concept: :mod:`.result` (the typed :class:`Fidelity` and its :class:`Dimension`), :mod:`.thresholds`
(the documented verdict rules), :mod:`.lengths` (input and output length: quantiles, Kolmogorov-Smirnov and
Wasserstein distances, the share outside the tested range), :mod:`.cache` (prefix-cache hit rate),
:mod:`.burstiness` (index of dispersion at the SLA's time scale), :mod:`.rate` (tested rates against the
production peak), :mod:`.identity` (model and endpoint), :mod:`.assess` (:func:`assess_fidelity`).
"""

from __future__ import annotations

from bearing_lib.fidelity.assess import assess_fidelity
from bearing_lib.fidelity.result import VERDICTS, Dimension, Fidelity, Quantiles

__all__ = ["Dimension", "Fidelity", "Quantiles", "VERDICTS", "assess_fidelity"]
