"""The twin's result objects: a calibrated twin, its validation, and a predicted limit.

Each has ``to_dict()`` (JSON-shaped) and ``from_dict()`` (parsed with
:func:`bearing_lib.common.schema.parse`, so a bad document gets one error listing every
problem). A predicted limit is an :class:`~bearing_lib.common.estimate.Estimate` with basis
``offered`` and carries ``kind: "predicted"`` beside it, so it is never taken for a measured
limit (``bearing limits``' ``q_ult``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from bearing_lib.common.estimate import Estimate

TWIN_VERSION = 1


def _plain(o: object) -> object:
    """JSON-ready: numpy scalars to Python, tuples to lists."""
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_plain(v) for v in o]
    if hasattr(o, "item") and callable(o.item):
        return o.item()
    return o


@dataclass
class TwinParam:
    """One calibrated parameter: value, 95 % CI, whether the test identified it, and from which steps."""

    name: str
    value: float | None
    ci95: tuple[float | None, float | None]
    unit: str
    identified: bool
    bound: Literal["none", "lower", "upper", "unbounded"]
    steps: list[int]
    note: str

    def text(self) -> str:
        if self.value is None:
            return f"{self.name}: not identified ({self.note})"
        sign = {"lower": "≥ ", "upper": "< "}.get(self.bound, "")
        ci = "" if self.ci95[0] is None or self.ci95[1] is None else f" (95% CI {self.ci95[0]:.4g}–{self.ci95[1]:.4g})"
        return f"{self.name} = {sign}{self.value:.4g} {self.unit}{ci}"


@dataclass
class StepCheck:
    """Measured vs twin-predicted figures of one step (``held_out``: the step was left out of the calibration)."""

    step: int
    offered_load: float | None
    held_out: bool
    measured: dict[str, float | None]
    predicted: dict[str, float | None]
    sla_pass_measured: bool | None
    sla_pass_predicted: bool | None
    run_id: str = "run"


@dataclass
class Validation:
    """How well the twin reproduces the test it came from."""

    sla: str
    rows: list[StepCheck]
    trusted: bool
    reasons: list[str]
    rules: str

    def table(self) -> list[dict[str, object]]:
        """One flat dict per step (the report's validation table)."""
        out = []
        for r in self.rows:
            d: dict[str, object] = {"run_id": r.run_id, "step": r.step, "offered_load": r.offered_load,
                                    "held_out": r.held_out}
            for k in r.measured:
                d[f"{k}_measured"] = r.measured[k]
                d[f"{k}_predicted"] = r.predicted.get(k)
            d["sla_pass_measured"] = r.sla_pass_measured
            d["sla_pass_predicted"] = r.sla_pass_predicted
            out.append(d)
        return out


@dataclass
class Reach:
    """What the calibration test covered, per factor a cost parameter depends on (docs/twin.md "Reach"): ranges
    ``[low, high]`` (``None`` where the test had no value), the time per output token at the lowest- and
    highest-load steps (P25, P50, P75; ``None`` when the step had fewer than 10 requests with one). A range the
    test cannot show (a twin written before ``reach``, read through ``tested_ranges``) is ``None``."""

    input_tokens: list[float] | None = None
    output_tokens: list[float] | None = None
    total_tokens_max: float | None = None
    cache_hit_share: float | None = None
    cached_share: float | None = None
    batch_p5_p95: list[float | None] | None = None
    batch_max: float | None = None
    context_ktokens_p5_p95: list[float | None] | None = None
    context_per_request_ktokens: float | None = None
    offered_load: list[float | None] | None = None
    tpot_lowest_load_ms: list[float | None] | None = None
    tpot_highest_load_ms: list[float | None] | None = None

    OPTIONAL = ("tpot_lowest_load_ms", "tpot_highest_load_ms")  # left out of the JSON when not measured

    def to_dict(self) -> dict[str, object]:
        d = _plain(asdict(self))
        return {k: v for k, v in d.items() if not (k in self.OPTIONAL and v is None)}  # type: ignore[union-attr]


@dataclass
class ParamIdentification:
    """Per cost parameter: the factor that identifies it, the range of it the test covered (``tested``), whether
    it was identified, the estimate and interval, and (unidentified) the prior range a prediction that depends on
    it carries; for a split the test could not make, the fitted total it splits (``decode_ms_at_batch``:
    [iteration ms, median batch]; ``prefill_ms_at_tokens``: [prefill ms, median uncached tokens])."""

    parameter: str
    factor: str
    tested: list[float | None] | None
    identified: bool
    value: float | None
    ci95: list[float | None]
    bound: str
    prior: list[float] | None
    note: str
    decode_ms_at_batch: list[float] | None = None
    prefill_ms_at_tokens: list[float] | None = None

    OPTIONAL = ("decode_ms_at_batch", "prefill_ms_at_tokens")  # left out of the JSON when not set

    def to_dict(self) -> dict[str, object]:
        d = _plain(asdict(self))
        return {k: v for k, v in d.items() if not (k in self.OPTIONAL and v is None)}  # type: ignore[union-attr]


@dataclass
class Twin:
    """A calibrated twin: parameters (with CIs and identification), bootstrap draws, the test's own mix."""

    source: str
    params: list[TwinParam]
    draws: list[list[float]]  # bootstrap draws of (prefill_base_ms, prefill_ms_per_token, decode_base_ms, ...)
    n_requests: int
    steps: list[int]
    highest_load: float | None
    load_unit: str
    test_mix: dict[str, list[float]]
    notes: list[str] = field(default_factory=list)
    validation: Validation | None = None
    version: int = TWIN_VERSION
    kv_policy: str = "reserve"  # "reserve" or "paged" (docs/twin.md "The model"); twins before it reserved
    kv_policy_note: str = ""
    given: dict[str, float | str] = field(default_factory=dict)  # engine settings given, not fitted
    # what the test covered per factor, and per cost parameter whether it identified it (docs/twin.md "Reach");
    # twins written before read as empty (predictions then take the tested ranges from test_mix)
    reach: Reach | None = None
    identification: list[ParamIdentification] = field(default_factory=list)
    replicas: int = 1  # replicas behind a round-robin router in the test; the twin is one replica's server
    kind: Literal["twin"] = "twin"  # what the document is (twins written before it read as twins)

    DRAW_PARAMS = ("prefill_base_ms", "prefill_ms_per_token", "decode_base_ms", "decode_ms_per_seq",
                   "decode_ms_per_kctx")

    def param(self, name: str) -> TwinParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def values(self) -> dict[str, float | str | None]:
        return {**{p.name: p.value for p in self.params}, "kv_policy": self.kv_policy}

    @property
    def trusted(self) -> bool:
        return self.validation is not None and self.validation.trusted

    def summary(self) -> str:
        lines = [f"twin of {self.source} ({self.n_requests} requests, steps {self.steps})"]
        lines += ["  " + p.text() for p in self.params]
        r = self.reach
        if r is not None and r.input_tokens and r.output_tokens:
            ld = r.offered_load or [None, None]
            lines.append(f"  reach: prompts {r.input_tokens[0]:,.0f}–{r.input_tokens[1]:,.0f} tokens, outputs "
                         f"{r.output_tokens[0]:,.0f}–{r.output_tokens[1]:,.0f}, cache hits "
                         f"{float(r.cache_hit_share or 0):.1%}"
                         + (f", loads {ld[0]:.3g}–{ld[1]:.3g} rps" if ld[0] is not None else ""))
        for e in self.identification:
            if not e.identified and e.prior:
                lines.append(f"  not identified: {e.parameter} (prior {e.prior[0]:.3g}–{e.prior[1]:.3g})")
        if self.validation is not None:
            lines.append("  validation: " + ("trusted" if self.validation.trusted else
                                             "UNTRUSTED: " + "; ".join(self.validation.reasons)))
        return "\n".join(lines)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        from html import escape

        rows = "".join(
            f"<tr><td>{escape(p.name)}</td><td>{escape(p.text().split(' = ', 1)[-1])}</td>"
            f"<td>{'yes' if p.identified else 'no'}</td><td>{escape(str(p.steps))}</td><td>{escape(p.note)}</td></tr>"
            for p in self.params)
        trust = ("not validated" if self.validation is None else "trusted" if self.validation.trusted else
                 "UNTRUSTED: " + "; ".join(self.validation.reasons))
        return (f"<p><b>twin of {escape(self.source)}</b> ({self.n_requests:,} requests) — {escape(trust)}</p>"
                "<table><tr><th>parameter</th><th>value</th><th>identified</th><th>steps</th><th>how</th></tr>"
                f"{rows}</table>")

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = _plain(asdict(self))  # type: ignore[assignment]
        # reach and identification keep their JSON shape: no reach is {} (twins written before it), a figure
        # not measured is left out rather than written null
        d["reach"] = {} if self.reach is None else self.reach.to_dict()
        d["identification"] = [e.to_dict() for e in self.identification]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Twin:
        from bearing_lib.common.schema import parse

        _refuse_other_kind(d, cls, ("params", "draws", "test_mix"), "bearing twin fit LOADTEST --sla ... --json OUT")
        if isinstance(d, dict) and d.get("reach") == {}:  # a twin written before reach
            d = {**d, "reach": None}
        return parse(cls, d, what="twin document")


@dataclass
class Prediction:
    """A limit predicted by the twin for a mix it may never have seen."""

    target: str
    sla: str
    q_ult: Estimate
    instances: int
    prompt_scale: float
    trusted: bool
    flags: list[str]
    draws_rps: list[float]
    method: str
    regime: dict[str, float | None]
    kind: Literal["predicted"] = "predicted"

    def text(self) -> str:
        head = f"predicted limit for {self.target} under {self.sla}: {self.q_ult.text()}"
        br = self.q_ult.bracket
        if self.q_ult.bound == "lower" and br is not None:
            head += f" (between {br[0]:.3g} and {'no limit found' if br[1] is None else f'{br[1]:.3g}'} rps)"
        if not self.trusted:
            head += " — NOT TRUSTED (the twin failed its own validation)"
        return head + "".join(f"\n  flag: {f}" for f in self.flags)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        from html import escape

        return "<pre>" + escape(self.text()) + "</pre>"

    def to_dict(self) -> dict[str, object]:
        d = _plain(asdict(self))
        d["q_ult"] = _plain({**self.q_ult.to_dict(), "kind": "predicted"})  # type: ignore[index]
        return d  # type: ignore[return-value]

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Prediction:
        from bearing_lib.common.schema import parse

        body = dict(d)
        q = dict(body.get("q_ult") or {})  # type: ignore[arg-type]
        q.pop("kind", None)
        body["q_ult"] = q
        return parse(cls, body, what="twin prediction")





def _refuse_other_kind(d: object, cls: type[Twin | PredictionSet], keys: tuple[str, ...], writer: str) -> None:
    """Refuse a document that is not a ``cls`` document (the kind its ``kind`` field declares), saying so before
    any field is checked: another bearing document (its ``schema`` or ``kind``), or JSON with none of the keys
    the kind requires. The field's ``Literal`` then holds the kind when the document is parsed."""
    from bearing_lib.common.errors import SchemaError

    kind = cls.__dataclass_fields__["kind"].default

    if not isinstance(d, dict):
        raise SchemaError(f"expected a bearing {kind} JSON object, found {type(d).__name__}")
    if isinstance(d.get("schema"), str) and str(d["schema"]).startswith("bearing."):
        raise SchemaError(f"a {d['schema']} document, not a bearing {kind} document (write one with `{writer}`)",
                          field="schema")
    found = d.get("kind")
    if found is not None and found != kind:
        raise SchemaError(f"not a bearing {kind} document: kind is {found!r} (write one with `{writer}`)",
                          field="kind")
    if found is None and not set(keys) & set(d):
        names = ", ".join(sorted(map(str, d))[:8]) or "none"
        raise SchemaError(f"not a bearing {kind} document (no `kind`); expected kind {kind!r} with the keys "
                          f"{', '.join(keys)} (found keys: {names}); write one with `{writer}`")


@dataclass
class PredictionSet:
    """What ``bearing twin predict`` writes: the twin it used and one prediction per mix."""

    twin_source: str
    twin_trusted: bool
    twin_reasons: list[str]
    predictions: list[Prediction]
    kind: Literal["twin_predictions"] = "twin_predictions"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "twin_source": self.twin_source, "twin_trusted": self.twin_trusted,
                "twin_reasons": self.twin_reasons, "predictions": [p.to_dict() for p in self.predictions]}

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> PredictionSet:
        from bearing_lib.common.schema import parse

        _refuse_other_kind(d, cls, ("predictions", "twin_source"), "bearing twin predict twin.json ... --json OUT")
        preds = [Prediction.from_dict(p) for p in d.get("predictions") or []]  # type: ignore[union-attr]
        return parse(cls, {**d, "predictions": preds}, what="twin predictions")


__all__ = ["ParamIdentification", "Prediction", "PredictionSet", "Reach", "StepCheck", "Twin", "TwinParam",
           "Validation"]
