"""A digest of the package code one workflow script runs, so that results follow the code.

Snakemake reruns a job when its rule's script changes, not when the ``trustcal`` modules the
script imports do. Each rule therefore passes :func:`stage_digest` of its script as a ``params:``
value (``code``, ``workflow/rules/common.smk``): an edit to code the job runs changes the value,
and Snakemake's params trigger reruns exactly those jobs ("params changed" in a dry run's reason
and in ``snakemake --summary``).

What a script runs is found statically, from the source, without importing anything (the workflow
computes it when it is parsed, in every cluster job too): starting from the whole script, every
name the reached code uses is followed to the top-level definition it stands for (a function, a
class, an assignment), through ``import`` / ``from … import`` statements at the top of a module
or inside the reached function, through a package's re-exports, and along attribute chains on
modules (``figures.epochs.trust_grid``). The digest covers the bytes of every file in which
something was reached (the whole file, comments included), the non-Python files beside them (the
paper's claims file), and the script's own folder's modules it uses (``_common.py``).

Following definitions rather than whole import statements is what keeps the stages apart:
``trustcal.stages`` imports the evaluation code at its top for every stage, but ``train_stage``
uses none of it, so an edit to ``measures/metrics.py`` reruns the evaluation jobs and not
training. The walk errs towards including: a reached class brings all of its methods, a module
used as an object (passed around, or a package's PEP 562 ``__getattr__``) brings all of its
definitions, statements a module runs on import (other than definitions) count whenever the module
is used, and names shadowed by a local variable are followed all the same. What it cannot see is
package code reached only through strings (``importlib.import_module`` of a computed trustcal name
outside a package ``__getattr__``) or registered into another module at import time; the package
has neither (``tests/unit/test_codedigest.py`` runs the stages from train to scores and checks that
every package function they call lies in a file their digest covers).

The work (reading and parsing) is done once per process and file; a digest is recomputed only when
one of the files it looked at changed on disk.
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["code_files", "stage_digest"]

DIGEST_SIZE = 16  # bytes of BLAKE2b: 32 hex digits, ample to tell two versions of the code apart


@dataclass(frozen=True)
class _Ref:
    """A module used as an object (``metrics`` in ``metrics.ece(...)``)."""

    name: str


@dataclass
class _Source:
    """One parsed module: its top-level bindings and the statements it runs on import."""

    name: str
    path: Path
    is_package: bool
    defs: dict[str, list[ast.AST]] = field(default_factory=dict)  # name → the statements that define it
    imports: dict[str, tuple] = field(default_factory=dict)  # name → ("module", m) or ("from", m, attr)
    always: list[ast.AST] = field(default_factory=list)  # run on import: not a definition nor an import
    stars: list[str] = field(default_factory=list)  # modules of `from m import *`
    refs: dict[int, tuple] = field(default_factory=dict)  # id(statement) → _references(statement), once
    broken: bool = False  # not valid Python (being edited): counted whenever it is looked up


def _stat(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return (None,)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


# path → (stat, _Source): each file parsed once per process (again only after it changed)
_PARSED: dict[Path, tuple[tuple, _Source]] = {}
# (script, package) → its _Digest, recomputed only when a file it looked at changed
_DIGESTS: dict = {}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str | None, level: int, here: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import …`` written in module ``here``."""
    if not level:
        return module or ""
    parts = here.split(".") if is_package else here.split(".")[:-1]
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def _bind_import(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, into: dict, stars: list) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                into[alias.asname] = ("module", alias.name)
            else:  # `import a.b.c` binds `a`
                top = alias.name.split(".")[0]
                into[top] = ("module", top)
        return
    module = _absolute(node.module, node.level, here, is_package)
    for alias in node.names:
        if alias.name == "*":
            stars.append(module)
        else:
            into[alias.asname or alias.name] = ("from", module, alias.name)


def _parse(name: str, path: Path, is_package: bool) -> _Source:
    stat = _stat(path)
    cached = _PARSED.get(path)
    if cached and cached[0] == stat and cached[1].name == name:
        return cached[1]
    src = _Source(name, path, is_package)
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):  # a file being edited: its bytes count, its job will say what is wrong
        tree = ast.Module(body=[], type_ignores=[])
        src.broken = True

    def add(statements):
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                src.defs.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                _bind_import(node, name, is_package, src.imports, src.stars)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                for n in names:
                    src.defs.setdefault(n, []).append(node)
                if not names or isinstance(node, ast.AugAssign):  # `x[k] = v`, `x += v`: a change made on import
                    src.always.append(node)
            elif isinstance(node, ast.If):
                if _is_type_checking(node.test):  # never run
                    add(node.orelse)
                    continue
                src.always.append(node.test)
                add(node.body)
                add(node.orelse)
            elif isinstance(node, ast.Try):
                add(node.body)
                for handler in node.handlers:
                    add(handler.body)
                add(node.orelse)
                add(node.finalbody)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring
            else:  # a call, a loop, a `with`, a `raise`…: run on import
                src.always.append(node)

    add(tree.body)
    _PARSED[path] = (stat, src)
    return src


def _references(node: ast.AST) -> tuple[list[list[str]], list[ast.Import | ast.ImportFrom]]:
    """The dotted names ``node`` uses (``a.b.c`` as ["a", "b", "c"]) and the import statements inside it.
    Annotations are left out: they are not run (every module has ``from __future__ import annotations``)."""
    chains: list[list[str]] = []
    imports: list[ast.Import | ast.ImportFrom] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute):
            attrs = []
            base: ast.AST = n
            while isinstance(base, ast.Attribute):
                attrs.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                chains.append([base.id, *reversed(attrs)])
            else:
                stack.append(base)
        elif isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                chains.append([n.id])
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            imports.append(n)
        elif isinstance(n, ast.arg):  # a parameter: its name and annotation
            pass
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):  # all but the return annotation
            stack.extend((*n.decorator_list, n.args, *n.body))
        elif isinstance(n, ast.AnnAssign):
            if n.value is not None:
                stack.append(n.value)
        elif not isinstance(n, (ast.Constant, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
            stack.extend(ast.iter_child_nodes(n))
    return chains, imports


class _Walk:
    """The reachability walk of one script (module docstring)."""

    def __init__(self, script: Path, package: Path):
        self.package = package
        self.script_dir = script.parent
        self.sources: dict[str, _Source | None] = {}
        self.used: dict[str, _Source] = {}
        self.reached: set[int] = set()
        self.whole: set[str] = set()
        self.resolved: dict[tuple[str, str], _Ref | None] = {}
        self.root = _parse("<script>", script, False)
        self.sources["<script>"] = self.root
        self._whole(self.root)

    # -- modules

    def module(self, name: str) -> _Source | None:
        if name in self.sources:
            return self.sources[name]
        parts = name.split(".")
        found = None
        if parts[0] == self.package.name:
            base = self.package.joinpath(*parts[1:])
            if (base / "__init__.py").is_file():
                found = _parse(name, base / "__init__.py", True)
            elif base.with_suffix(".py").is_file() and len(parts) > 1:
                found = _parse(name, base.with_suffix(".py"), False)
        elif len(parts) == 1 and (self.script_dir / f"{name}.py").is_file():  # a script's helper (_common)
            found = _parse(name, self.script_dir / f"{name}.py", False)
        self.sources[name] = found
        if found is not None and found.broken:
            self.use(found)
        return found

    def _submodule(self, src: _Source, attr: str) -> str | None:
        if not src.is_package:
            return None
        name = f"{src.name}.{attr}"
        return name if self.module(name) is not None else None

    def _submodules(self, src: _Source) -> list[str]:
        names = []
        for entry in sorted(os.listdir(src.path.parent)):
            stem = entry[:-3] if entry.endswith(".py") else entry
            if entry == "__init__.py" or not stem.isidentifier():
                continue
            if (entry.endswith(".py") or (src.path.parent / entry / "__init__.py").is_file()) and (
                sub := self._submodule(src, stem)
            ):
                names.append(sub)
        return names

    # -- reaching

    def use(self, src: _Source) -> None:
        """``src``'s file counts, and so do the statements it runs on import."""
        if src.name in self.used:
            return
        self.used[src.name] = src
        for node in src.always:
            self.reach(src, node)
        parts = src.name.split(".")
        for cut in range(1, len(parts)):  # importing a module runs its packages' __init__ first
            parent = self.module(".".join(parts[:cut]))
            if parent is not None and parent.always:
                self.use(parent)

    def reach(self, src: _Source, node: ast.AST) -> None:
        if id(node) in self.reached:
            return
        self.reached.add(id(node))
        self.use(src)
        refs = src.refs.get(id(node))
        if refs is None:
            refs = src.refs[id(node)] = _references(node)
        chains, inner = refs
        imported: dict[str, tuple] = {}
        for imp in inner:
            stars: list[str] = []
            _bind_import(imp, src.name, src.is_package, imported, stars)
            for star in stars:
                if (module := self.module(star)) is not None:
                    self._whole(module)
        for binding in imported.values():
            if binding[0] == "from":  # a name imported inside a function is used there
                self.target(src, binding)
        for chain in chains:
            head = chain[0]
            target = self.target(src, imported[head]) if head in imported else self.name(src, head)
            for attr in chain[1:]:
                if not isinstance(target, _Ref):
                    break
                module = self.module(target.name)
                target = None if module is None else self.name(module, attr)
            if isinstance(target, _Ref) and (module := self.module(target.name)) is not None:
                self._whole(module)  # a module used as an object

    def _whole(self, src: _Source) -> None:
        if src.name in self.whole:
            return
        self.whole.add(src.name)
        self.use(src)
        for nodes in src.defs.values():
            for node in nodes:
                self.reach(src, node)
        if src is not self.root:  # the module as an object: any name it imports may be asked of it
            for name, binding in src.imports.items():
                if binding[0] == "from" and name not in src.defs:
                    self.target(src, binding)
        if "__getattr__" in src.defs:
            for sub in self._submodules(src):
                if (module := self.module(sub)) is not None:
                    self._whole(module)

    def target(self, src: _Source, binding: tuple) -> _Ref | None:
        """What an import binding stands for: a module (``_Ref``), or None once its definition is reached."""
        if binding[0] == "module":
            return _Ref(binding[1]) if self.module(binding[1]) is not None else None
        _, module_name, attr = binding
        module = self.module(module_name)
        return None if module is None else self.name(module, attr)

    def name(self, src: _Source, attr: str) -> _Ref | None:
        """Reach what ``attr`` names in module ``src``: a module (returned), or a definition (reached)."""
        key = (src.name, attr)
        if key in self.resolved:
            return self.resolved[key]
        self.resolved[key] = None  # a cycle stops here
        result: _Ref | None = None
        if attr in src.defs or attr in src.imports:
            for node in src.defs.get(attr, ()):
                self.reach(src, node)
            if attr in src.imports:  # also when a definition may replace it (`try: import …`)
                self.use(src)  # a package's re-export: which definition it hands out is in this file
                result = self.target(src, src.imports[attr])
        elif attr.startswith("__") and attr.endswith("__"):  # set by the import system (__file__, __name__)
            pass
        elif sub := self._submodule(src, attr):
            result = _Ref(sub)
        elif "__getattr__" in src.defs:  # PEP 562: any submodule may hand out the name
            self.name(src, "__getattr__")
            for sub in self._submodules(src):
                if (module := self.module(sub)) is not None:
                    self._whole(module)
        else:
            for star in src.stars:
                if (module := self.module(star)) is not None:
                    result = result or self.name(module, attr)
        self.resolved[key] = result
        return result

    # -- the files

    def files(self) -> list[Path]:
        """Every file used, and the data files beside the package's used modules."""
        paths = {src.path for src in self.used.values()}
        for src in self.used.values():
            if src.path.is_relative_to(self.package):
                for entry in src.path.parent.iterdir():
                    if entry.is_file() and entry.suffix not in (".py", ".pyc", ".pyo"):
                        paths.add(entry)
        return sorted(paths)

    def examined(self) -> list[Path]:
        """Every file the walk read (a change in any may change what is reached)."""
        return sorted({src.path for src in self.sources.values() if src is not None} | set(self.files()))


def _label(path: Path, package: Path, script: Path | None) -> str:
    """The name a file is hashed under: relative, so that a copy of the workflow has the same digest."""
    if path.is_relative_to(package):
        return path.relative_to(package.parent).as_posix()
    if script is not None and path.is_relative_to(script.parent):
        return f"{script.parent.name}/{path.relative_to(script.parent).as_posix()}"
    return path.name


def _whole_package(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


@dataclass(frozen=True)
class _Digest:
    digest: str
    files: tuple[Path, ...]
    stats: dict[Path, tuple]  # every file looked at → its stat then
    listing: tuple[Path, ...] | None  # the whole package's files (without a script), else None

    def fresh(self, package: Path) -> bool:
        if self.listing is not None and tuple(_whole_package(package)) != self.listing:
            return False
        return all(_stat(path) == stat for path, stat in self.stats.items())


def _compute(script: Path | None, package: Path) -> _Digest:
    if script is None:  # no script to start from (a remote module's): all of the package
        files = _whole_package(package)
        examined = files
    else:
        walk = _Walk(script, package)
        files = walk.files()
        examined = walk.examined()
    stats = {p: _stat(p) for p in examined}  # before reading: an edit meanwhile is seen next time
    h = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for path in files:
        data = path.read_bytes()
        label = _label(path, package, script).encode()
        h.update(len(label).to_bytes(8, "little") + label + len(data).to_bytes(8, "little") + data)
    return _Digest(h.hexdigest(), tuple(files), stats, tuple(files) if script is None else None)


def _cached(script: str | Path | None, package: str | Path) -> _Digest:
    package = Path(package).resolve()
    script = Path(script).resolve() if script is not None else None
    if script is not None and not script.is_file():
        script = None
    entry = _DIGESTS.get((script, package))
    if entry is None or not entry.fresh(package):
        entry = _DIGESTS[(script, package)] = _compute(script, package)
    return entry


def stage_digest(script: str | Path | None, package: str | Path) -> str:
    """The digest (hex) of the code ``script`` runs in the ``package`` folder (``…/trustcal``).

    ``script``: a workflow script (``workflow/scripts/scores.py``); None, or a path that is not a
    file (a remote module's script), digests every file of the package instead. Files are hashed
    under their path relative to the package's parent (``trustcal/measures/metrics.py``), so a copy
    of the workflow elsewhere has the same digests.
    """
    return _cached(script, package).digest


def code_files(script: str | Path | None, package: str | Path) -> tuple[Path, ...]:
    """The files :func:`stage_digest` hashes for ``script``: what an edit must touch to rerun its jobs."""
    return _cached(script, package).files
