"""Convert a Kubernetes CRD's ``openAPIV3Schema`` into a strict JSON Schema file.

Run once when the vendored CRD is updated (``python -m bearing_lib.ops.schemas.crd_to_jsonschema
CRD.yaml OUT.json``). What it does, as kubeconform's ``openapi2jsonschema`` does in strict mode:

- takes the first served version's ``openAPIV3Schema``;
- pins ``apiVersion`` (``<group>/<version>``) and ``kind`` with ``enum`` and makes them required;
- adds ``additionalProperties: false`` to every object that lists ``properties`` and neither
  sets ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` (the API server
  prunes unknown fields silently; a strict schema catches a misspelt field instead);
- turns ``x-kubernetes-int-or-string: true`` into ``anyOf: [integer, string]``.

Other ``x-kubernetes-*`` keys are left in place (JSON Schema validators ignore unknown keywords).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if node.get("x-kubernetes-int-or-string") and "type" not in node:
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def convert(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]
    version = next(v for v in spec["versions"] if v.get("served", True))
    schema = _strict(version["schema"]["openAPIV3Schema"])
    schema["properties"]["apiVersion"]["enum"] = [f"{spec['group']}/{version['name']}"]
    schema["properties"]["kind"]["enum"] = [spec["names"]["kind"]]
    # metadata is Kubernetes ObjectMeta, which the CRD leaves open: keep it open
    schema["properties"]["metadata"] = {"type": "object"}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"{spec['names']['kind']} ({spec['group']}/{version['name']}), strict",
        **schema,
    }


def main(argv: list[str]) -> None:
    crd = yaml.safe_load(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(convert(crd), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
