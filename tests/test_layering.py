"""The package's shape, read from the source (function-local imports included): data flows one way
through the wings (:data:`FLOW`: a wing imports only wings before it), and no wing holds an import
cycle among its own modules. The wing and report tests check the same inside their wings; this one
holds every wing to it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "bearing_lib"

# the order data flows in (docs/interfaces.md "Wings"): a wing may import any wing of a lower rank
FLOW: dict[str, int] = {
    "common": 0,
    "data": 1,
    "loaders": 2,
    "limits": 3,
    "traffic": 3,
    "servers": 4,
    "twin": 5,
    "plan": 5,
    "fidelity": 5,
    "compare": 6,
    "ops": 6,
    "report": 7,
    "app": 8,
    "cli": 9,
}


def _wings(lib: Path) -> list[str]:
    return sorted(p.name for p in lib.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def _imports(lib: Path, wing: str) -> dict[str, set[str]]:
    """Per module of ``wing``: the bearing_lib modules it imports (``from bearing_lib.w import m`` names m)."""
    out: dict[str, set[str]] = {}
    for f in sorted((lib / wing).glob("*.py")):
        names: set[str] = set()
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                names.add(n.module)
                names.update(f"{n.module}.{a.name}" for a in n.names)
            elif isinstance(n, ast.Import):
                names.update(a.name for a in n.names)
        out[f.stem] = {m for m in names if m.startswith("bearing_lib.")}
    return out


def against_the_flow(lib: Path = LIB) -> list[str]:
    """Imports of a wing of the same or a higher rank than the importing wing (its own wing aside)."""
    bad = []
    for wing in _wings(lib):
        for mod, names in _imports(lib, wing).items():
            for name in sorted(names):
                other = name.split(".")[1]
                if other != wing and other in FLOW and FLOW[other] >= FLOW[wing]:
                    bad.append(f"{wing}/{mod}.py imports {name}")
    return bad


def cycle(lib: Path, wing: str) -> str | None:
    """The first import cycle among ``wing``'s modules, as ``a -> b -> a``, or None."""
    mods = _imports(lib, wing)
    graph = {m: {n.split(".")[2] for n in names if n.startswith(f"bearing_lib.{wing}.") and n.split(".")[2] in mods}
             for m, names in mods.items()}
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> str | None:
        if m in path:
            return " -> ".join((*path[path.index(m):], m))
        if m in done:
            return None
        for n in sorted(graph.get(m, ())):
            if (c := visit(n, (*path, m))) is not None:
                return c
        done.add(m)
        return None

    return next((c for m in sorted(graph) if (c := visit(m, ())) is not None), None)


def test_every_wing_has_a_place_in_the_flow():
    assert sorted(set(_wings(LIB)) - set(FLOW)) == []


def test_no_import_against_the_flow():
    assert against_the_flow() == []


@pytest.mark.parametrize("wing", sorted(FLOW))
def test_no_import_cycle_inside_a_wing(wing):
    assert cycle(LIB, wing) is None


def test_the_checks_find_a_cycle_and_an_import_against_the_flow(tmp_path):
    """The checks are not hollow: a function-local import cycle and a lower wing importing a higher one."""
    lib = tmp_path / "bearing_lib"
    for w in ("data", "report"):
        (lib / w).mkdir(parents=True)
        (lib / w / "__init__.py").write_text("")
    (lib / "data" / "a.py").write_text("def f():\n    from bearing_lib.data.b import g\n")
    (lib / "data" / "b.py").write_text("from bearing_lib.data import a\nfrom bearing_lib.report.x import y\n")
    (lib / "report" / "x.py").write_text("from bearing_lib.data.a import f\n")
    assert cycle(lib, "data") == "a -> b -> a"
    assert cycle(lib, "report") is None
    assert against_the_flow(lib) == ["data/b.py imports bearing_lib.report.x",
                                     "data/b.py imports bearing_lib.report.x.y"]


def private_imports(lib: Path = LIB) -> list[str]:
    """``from bearing_lib.x import _name``: a module reaching into another's private name."""
    bad = []
    for f in sorted(lib.rglob("*.py")):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("bearing_lib"):
                bad += [f"{f.relative_to(lib)} imports {n.module}.{a.name}" for a in n.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return bad


def test_no_private_name_imported_across_modules():
    assert private_imports() == []


def test_the_private_import_check_finds_one(tmp_path):
    lib = tmp_path / "bearing_lib"
    (lib / "w").mkdir(parents=True)
    (lib / "w" / "a.py").write_text("def f():\n    from bearing_lib.w.b import _g, h\n")
    assert private_imports(lib) == ["w/a.py imports bearing_lib.w.b._g"]


def repeated_class_names(lib: Path = LIB) -> list[str]:
    """Module-level class names defined in more than one module of the package (one name per concept,
    issue #26), as ``Name: a/x.py, b/y.py``."""
    where: dict[str, list[str]] = {}
    for f in sorted(lib.rglob("*.py")):
        for n in ast.parse(f.read_text(encoding="utf-8")).body:
            if isinstance(n, ast.ClassDef):
                where.setdefault(n.name, []).append(str(f.relative_to(lib)))
    return [f"{name}: {', '.join(fs)}" for name, fs in sorted(where.items()) if len(fs) > 1]


def test_one_class_name_per_concept():
    assert repeated_class_names() == []


def test_the_class_name_check_finds_one(tmp_path):
    lib = tmp_path / "bearing_lib"
    (lib / "a").mkdir(parents=True)
    (lib / "b").mkdir()
    (lib / "a" / "x.py").write_text("class Bound:\n    pass\n")
    (lib / "b" / "y.py").write_text("def f():\n    class Local:\n        pass\n\n\nclass Bound:\n    pass\n")
    assert repeated_class_names(lib) == ["Bound: a/x.py, b/y.py"]
