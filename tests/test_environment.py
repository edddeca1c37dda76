"""environment.yml mirrors pyproject.toml: same packages, same version specifiers."""

from __future__ import annotations

import re
import tomllib

import yaml

from tests.conftest import ROOT


def _norm(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    assert m, req
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_environment_yml_mirrors_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for reqs in project["optional-dependencies"].values() for r in reqs]  # test, dask, bench
    wanted = dict(_norm(r) for r in project["dependencies"] + extras)
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    mirrored = dict(_norm(r) for r in pip_section if not r.startswith("-e"))
    assert mirrored == wanted
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert python.replace("python", "") == project["requires-python"]
