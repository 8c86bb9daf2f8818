"""The package's layout: stages import downward only, and the names the docs cite exist."""

import argparse
import ast
import importlib
import re
from pathlib import Path

import pytest
from helpers.workflow import REPO

PACKAGE = REPO / "workflow" / "trustcal"
# A component (subpackage or top-level module) imports only from components of a lower rank,
# the order of trustcal/__init__.py's docstring and docs/layout.md. `trustcal` itself (for
# __version__) may be imported from anywhere.
RANK = {
    "errors": 0,
    "registry": 0.5,  # facts only: every layer that names a dataset or network reads it
    "imports": 0.75,  # a user's class by its import path (a network, a calibrator)
    "files": 1,
    "codedigest": 1,
    "numerics": 1,
    "measures": 2,
    "calibration": 2,
    "data": 2,
    "shift": 2,
    "evaluation": 2.5,  # the evaluation engine: prediction sets → trust and score tables, read by reporting and above
    "training": 3,
    "predictions": 3,
    "config_schema": 1,  # the configuration's JSON Schema: read, defaults, types, validator
    "config": 3.5,  # the config check asks training and calibration whether the code a configuration names runs
    "reporting": 4,
    "settings": 5,
    "stages": 6,
    "assessment": 6,
    "shift_stages": 6.5,  # the dataset-shift stages, apart from `stages` so that its stages' code digests stay put
    "study": 7,
    "api": 7,
    "cli": 8,
    "progress": 7.5,  # the command's progress display, apart from its parsing
    "__main__": 9,
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        yield ".".join(p for p in rel.parts if p != "__init__"), path


def imports(path: Path, top_level_only: bool = False):
    """trustcal modules imported by the file, with the line.

    Every import counts: at the top, inside functions, and under `if TYPE_CHECKING:` (a cycle a
    type checker or a reader must follow is still a cycle; breaking it costs a move, not a guard).
    `from trustcal.x import y` imports the module `trustcal.x.y` when `y` is a submodule, else
    the module `trustcal.x`. Relative imports are refused (trustcal uses absolute ones), so every
    target is a full name. Not counted: the PEP 562 `__getattr__` of `trustcal` and of
    `trustcal.reporting.figures`, which import on attribute access, once every module is loaded.
    """
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; trustcal uses absolute imports")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trustcal":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield (sub if _is_module(sub) else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "trustcal":
                    yield alias.name, node.lineno


def _is_module(name: str) -> bool:
    """Whether `name` is a trustcal module, found from the source tree without importing it."""
    parts = name.split(".")
    if parts[0] != "trustcal":
        return False
    base = PACKAGE.joinpath(*parts[1:])
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def import_graph() -> dict[str, dict[str, int]]:
    """module → {module it imports: line of the first such import}, every import counted."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules():
        edges = graph.setdefault(module, {})
        for target, line in imports(path):
            if target != module:
                edges.setdefault(target, line)
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle of the graph as [m0, m1, …, m0], or None (depth-first search, colours 1 = open, 2 = done)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        stack = [(start, iter(sorted(graph[start])))]
        trail = [start]
        if state.get(start):
            continue
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                trail.pop()
            elif state.get(child) == 1:
                return trail[trail.index(child) :] + [child]
            elif not state.get(child) and child in graph:
                state[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
                trail.append(child)
    return None


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
    """No module reaches itself by imports, counting those inside functions (a deferred import hides a
    cycle from the interpreter, not from a reader): shared helpers live in the module that owns them."""
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, (
        "import cycle: "
        + " → ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False))
        + f" → {cycle[-1]}"
    )


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path):
    """The checker itself: a → b at the top, b → a inside a function, is a cycle; a → b → c is not."""
    assert find_cycle({"a": {"b": 1}, "b": {"a": 2}}) == ["a", "b", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {}}) is None
    assert find_cycle({"a": {"b": 1, "c": 1}, "b": {"c": 1}, "c": {"d": 1}, "d": {"b": 1}}) == ["b", "c", "d", "b"]
    inner = tmp_path / "b.py"
    inner.write_text("def f():\n    from trustcal.measures import metrics\n    import trustcal.errors\n")
    assert sorted(t for t, _ in imports(inner)) == ["trustcal.errors", "trustcal.measures.metrics"]
    assert list(imports(inner, top_level_only=True)) == []


DOCS = [
    "README.md",
    "config/README.md",
    "benchmarks/README.md",
    *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
]


@pytest.mark.parametrize("doc", DOCS)
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


# --------------------------------------------------------------------------- library messages


def _assess_flags() -> set[str]:
    """The long flags of ``trustcal assess``."""
    from trustcal import cli

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s for action in sub.choices["assess"]._actions for s in action.option_strings if s.startswith("--")}


def _message_strings(tree: ast.AST):
    """(line, text) of every string the code builds (an f-string as one text, its values as {}), docstrings aside."""
    docstrings, parts = set(), set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            docstrings.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):
            parts.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | parts:
            yield node.lineno, node.value


def test_library_messages_name_settings_not_the_command_lines_flags():
    """Outside cli.py a message names a setting (``kind="logits"``) and lists it in ``options``; the command
    line shows its flag instead (cli.cli_words). A text that names ``trustcal assess`` itself may cite its flags."""
    flags = _assess_flags()
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(map(re.escape, sorted(flags, key=len, reverse=True))) + r")(?![\w-])"
    )
    found = []
    for module, path in modules():
        if module == "trustcal.cli":
            continue
        for line, text in _message_strings(ast.parse(path.read_text())):
            if pattern.search(text) and "trustcal assess" not in text:
                found.append(f"{path.relative_to(REPO)}:{line}: {pattern.search(text).group(1)} in {text[:80]!r}")
    assert not found, "\n".join(found)


def test_the_check_finds_a_flag_in_a_message_and_not_in_a_docstring():
    tree = ast.parse('"""Doc: --kind."""\ndef f(x):\n    """--labels"""\n    raise E(f"{x}: pass --kind logits")\n')
    assert [text for _, text in _message_strings(tree)] == ["{}: pass --kind logits"]


def test_every_setting_a_message_names_has_a_flag():
    """The settings listed in a message's ``options`` (PredictionError(..., options=...), InputWarning's fourth
    argument) are each set by a flag of ``trustcal assess``, the one cli.flag names."""
    from trustcal import cli

    named = set()
    for _, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            values = [k.value for k in node.keywords if k.arg == "options"]
            if getattr(node.func, "id", None) == "InputWarning" and len(node.args) == 4:
                values.append(node.args[3])
            for value in values:  # a tuple of names, or a conditional expression choosing one
                tuples = [t for t in ast.walk(value) if isinstance(t, ast.Tuple)]
                named.update(c.value for t in tuples for c in t.elts if isinstance(c, ast.Constant))
    assert {"kind", "renormalize", "t_min", "t_max", "validation", "calibrators", "prob_columns"} <= named, named
    assert not {cli.flag(n) for n in named} - _assess_flags()
