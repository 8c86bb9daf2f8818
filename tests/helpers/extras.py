"""A fresh environment of one of the project's extras, without a download: a venv holding only the distributions
an extra needs (pyproject.toml's requirements, then each distribution's own, as pip would resolve them from this
environment's installed versions), linked from the test environment.

The test environment has more than an extra brings (the test tools, the docs' mkdocs-material and its pygments):
a command that works here may fail where only `pip install '.[workflow]'` was run. `extra_env("workflow")` is that
environment, made in a second.
"""

from __future__ import annotations

import re
import sys
import tomllib
import venv
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

from helpers.workflow import REPO


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project_requirements(extras: set[str]) -> list[Requirement]:
    """The project's own requirements with ``extras``, from pyproject.toml (the installed metadata may be older)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found, todo, done = [], set(extras), set()
    reqs = [Requirement(r) for r in project["dependencies"]]
    while todo:
        extra = todo.pop()
        done.add(extra)
        for text in project["optional-dependencies"][extra]:
            req = Requirement(text)
            if normalise(req.name) == normalise(project["name"]):
                todo |= set(req.extras) - done
            else:
                reqs.append(req)
    for req in reqs:
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found.append(req)
    return found


def closure(extras: set[str]) -> tuple[set[str], set[str]]:
    """(the distributions the project with ``extras`` needs, those of them not installed here)."""
    needed: dict[str, set[str]] = {}
    missing: set[str] = set()
    todo = [(r.name, set(r.extras)) for r in _project_requirements(extras)]
    while todo:
        name, wanted = todo.pop()
        key = normalise(name)
        if key in needed and wanted <= needed[key]:
            continue
        needed.setdefault(key, set()).update(wanted)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            missing.add(key)
            continue
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ["", *needed[key]]):
                todo.append((req.name, set(req.extras)))
    return set(needed), missing


def extra_env(path: Path, extras: set[str], without: set[str] = frozenset()) -> Path:
    """A venv at ``path`` with the installed distributions of ``extras``' closure linked into it (not the
    project itself: the workflow puts its checkout on the path), less those named in ``without``; returns
    its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    site = path / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    names, _ = closure(extras)
    for name in sorted(names - {normalise(n) for n in without}):
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # not installed here either (a platform's extra), so nothing of it is used here
        for top in {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}:
            target = Path(dist.locate_file(top))
            if target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    return path / "bin" / "python"
