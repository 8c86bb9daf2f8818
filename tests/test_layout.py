"""The package's layout: stages import downward only, and the names the docs cite exist."""

import ast
import importlib
import re
from pathlib import Path

import pytest
from workflow_utils import REPO

PACKAGE = REPO / "workflow" / "trustcal"
# A component (subpackage or top-level module) imports only from components of a lower rank,
# the order of trustcal/__init__.py's docstring and docs/layout.md. `trustcal` itself (for
# __version__) may be imported from anywhere.
RANK = {
    "errors": 0,
    "files": 1,
    "config": 1,
    "numerics": 1,
    "measures": 2,
    "calibration": 2,
    "data": 2,
    "training": 3,
    "predictions": 3,
    "reporting": 4,
    "stages": 5,
    "assessment": 5,
    "study": 6,
    "api": 6,
    "cli": 7,
    "__main__": 8,
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        yield ".".join(p for p in rel.parts if p != "__init__"), path


def imports(path: Path, top_level_only: bool = False):
    """trustcal modules imported by the file (resolved), with the line."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trustcal":
            for alias in node.names:  # `from trustcal.x import y` may import the module trustcal.x.y
                sub = f"{node.module}.{alias.name}"
                yield (sub if importlib.util.find_spec(node.module) and _is_module(sub) else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "trustcal":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; trustcal uses absolute imports")


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "trustcal"


def test_every_component_has_a_rank():
    found = {component(m) for m, _ in modules()} - {"trustcal"}
    assert found == set(RANK), f"components without a rank: {found - set(RANK)}; ranked but gone: {set(RANK) - found}"


def test_imports_run_downward_only():
    upward = []
    for module, path in modules():
        here = component(module)
        for target, line in imports(path):
            there = component(target)
            if there in (here, "trustcal"):
                continue
            if RANK[there] >= RANK[here]:
                upward.append(
                    f"{path.relative_to(REPO)}:{line}: {here} (rank {RANK[here]}) imports {target} (rank {RANK[there]})"
                )
    assert not upward, "\n".join(upward)


def test_no_import_cycle_between_modules():
    graph = {m: {t for t, _ in imports(p, top_level_only=True) if t != m} for m, p in modules()}
    state: dict[str, int] = {}

    def visit(m, trail):
        if state.get(m) == 1:
            raise AssertionError("import cycle: " + " → ".join(trail[trail.index(m) :] + [m]))
        if state.get(m) == 2 or m not in graph:
            return
        state[m] = 1
        for t in graph[m]:
            visit(t, trail + [m])
        state[m] = 2

    for m in graph:
        visit(m, [])


@pytest.mark.parametrize("doc", ["README.md", "docs/method.md", "docs/layout.md"])
def test_the_names_the_docs_cite_exist(doc):
    """Every `trustcal.x.y` in the docs is a module or an attribute of one (no stale name after a move)."""
    missing = []
    for name in sorted(set(re.findall(r"\btrustcal(?:\.[A-Za-z_]\w*)+", (REPO / doc).read_text()))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            if _is_module(".".join(parts[:cut])):
                obj = importlib.import_module(".".join(parts[:cut]))
                try:
                    for attr in parts[cut:]:
                        obj = getattr(obj, attr)
                except AttributeError:
                    missing.append(name)
                break
        else:
            missing.append(name)
    assert not missing, f"{doc} cites names that do not exist: {missing}"
