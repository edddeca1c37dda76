"""Where a traffic profile came from and how it was computed: the profile JSON's ``source`` and ``parameters``.

:class:`ProfileSource` is the provenance of the profiled input as the profile JSON writes it (``source``:
the file, its hash, format and tool, what kind of data it held, its clock and row count, and, as the
producer adds them, the Parquet dataset's files and engine, the Prometheus counter and its step, the
Parquet copy a large text trace was converted to). :class:`ProfileParameters` are the generator's own
settings (``parameters``: the target's quantile and growth, the burst rule, the SLO objective, the
bootstrap), with the counters' extra settings for a profile from Prometheus metrics.

Both are written by ``to_dict`` with exactly the keys the producers wrote before they were typed (a key
a producer does not set is left out, never written as ``null``) and read back by ``from_dict``
(validated once, ``bearing_lib.common.schema``). :class:`~bearing_lib.traffic.document.TrafficProfile`
reads ``source`` as a :class:`ProfileSource`: every field is optional there (a hand-written or older
profile may name only its path or format), and keys no producer writes are not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bearing_lib.common.errors import SchemaError
from bearing_lib.data.engine import EngineRun  # where a Parquet dataset's profile was computed: one type with limits


@dataclass(frozen=True)
class ProfileSource:
    """The profile JSON's ``source``: the profiled input (see the module docstring).

    The first eight fields are written by every producer (``null`` when unknown); the others only by
    the producer that sets them: ``n_files`` and ``engine`` a Parquet dataset (``traffic/dataset.py``),
    ``request_metric`` and ``time_resolution_s`` Prometheus counters (``traffic/metrics_profile.py``),
    ``parquet_cache`` a text trace converted once to Parquet (``traffic/convert.py``).
    """

    path: str | None = None
    sha256: str | None = None
    format: str | None = None
    tool: str | None = None
    kind: str | None = None
    """``requests`` (per-request records), ``rates`` (rate windows) or ``metrics`` (Prometheus counters)."""
    time_origin: str | None = None
    timezone: str | None = None
    n_rows: int | None = None
    n_files: int | None = None
    engine: EngineRun | None = None
    request_metric: str | None = None
    time_resolution_s: float | None = None
    parquet_cache: str | None = None

    _ALWAYS = ("path", "sha256", "format", "tool", "kind", "time_origin", "timezone", "n_rows")
    _IF_SET = ("n_files", "engine", "request_metric", "time_resolution_s", "parquet_cache")

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {k: getattr(self, k) for k in self._ALWAYS}
        for k in self._IF_SET:
            v = getattr(self, k)
            if v is not None:
                out[k] = v.to_dict() if isinstance(v, EngineRun) else v
        return out

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "profile source") -> ProfileSource:
        """The ``to_dict`` form read back, validated once (every problem together, with its key)."""
        from bearing_lib.common.schema import parse

        if not isinstance(d, dict):
            raise SchemaError(f"{source}: expected an object, found {type(d).__name__}")
        return parse(cls, d, what=source)

    @classmethod
    def of(cls, prov: Any, kind: str, n_rows: int) -> ProfileSource:
        """The source of a loaded trace or rate windows (its :class:`~bearing_lib.data.provenance.Provenance`)."""
        return cls(path=prov.source, sha256=prov.sha256, format=prov.format, tool=prov.tool, kind=kind,
                   time_origin=prov.time_origin, timezone=prov.timezone, n_rows=n_rows)


@dataclass(frozen=True)
class CounterParameters:
    """The settings of a profile from Prometheus counters (``traffic/metrics_profile.py``), written after
    the generator's own in ``parameters``."""

    request_metric: str
    mix_label: str | None
    mix_spec_ignored: str | None = None
    """Why a mix spec given with counters was not used (set only when one was given)."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"request_metric": self.request_metric, "mix_label": self.mix_label}
        if self.mix_spec_ignored is not None:
            out["mix_spec_ignored"] = self.mix_spec_ignored
        return out


@dataclass(frozen=True)
class ProfileParameters:
    """The profile JSON's ``parameters``: how the profile was computed (``profile_traffic``'s arguments)."""

    quantile: float
    growth: float
    burst_k: float
    burst_merge_gap_bins: int
    slo_objective: float
    n_boot: int
    seed: int
    counters: CounterParameters | None = None
    """A profile from Prometheus counters: its counter and label (their keys follow the others)."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"quantile": self.quantile, "growth": self.growth, "burst_k": self.burst_k,
                               "burst_merge_gap_bins": self.burst_merge_gap_bins,
                               "slo_objective": self.slo_objective, "n_boot": self.n_boot, "seed": self.seed}
        if self.counters is not None:
            out.update(self.counters.to_dict())
        return out

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "profile parameters") -> ProfileParameters:
        """The ``to_dict`` form read back, validated once; the counters' keys (``request_metric``,
        ``mix_label``, ``mix_spec_ignored``) make :attr:`counters`."""
        from bearing_lib.common.schema import parse

        if not isinstance(d, dict):
            raise SchemaError(f"{source}: expected an object, found {type(d).__name__}")
        own = {k: v for k, v in d.items() if k not in CounterParameters.__dataclass_fields__}
        rest = {k: v for k, v in d.items() if k in CounterParameters.__dataclass_fields__}
        if rest:
            own["counters"] = rest
        return parse(cls, own, what=source)


__all__ = ["CounterParameters", "EngineRun", "ProfileParameters", "ProfileSource"]
