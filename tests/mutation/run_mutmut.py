"""Mutation testing of the numbers' code with mutmut (``make mutation``; docs/testing.md#mutation-testing).

mutmut 3 imports the mutated package from ``mutants/src`` (or ``mutants/``), so it needs a ``src`` layout;
the package lives in ``workflow/trustcal``. This script stages a copy in ``build/mutation/`` (gitignored):
``src/trustcal`` (the package), ``tests/`` and ``pyproject.toml``, whose ``[tool.mutmut]`` section names the
modules to mutate (``only_mutate``) and the fast tests to run (``pytest_add_cli_args_test_selection``). The
real files are never edited. Then, in ``build/mutation/``:

1. mutmut writes every mutant (one per changed operator, constant, argument … inside a function; module
   level constants are not mutated by mutmut 3) to ``mutants/``;
2. ``--sample N`` draws N of them uniformly at random without replacement (``--seed``; 0: all of them);
3. ``mutmut run`` runs the clean tests once with tracing (which test reaches which function), then each
   drawn mutant against the tests that reach its function, on ``--max-children`` processes;
4. the score, killed (a test failed or timed out) over all drawn mutants (a mutant no test reaches counts as
   survived), and the survivors with their diffs go to ``build/mutation/report.txt``.

``--recheck NAME …`` reruns mutants of the last run (e.g. its survivors, after new tests) without a new run:
pytest on this repository's tests (``--tests``, default the configured selection) with the trampolined
package of ``build/mutation/mutants/src`` first on the import path and ``MUTANT_UNDER_TEST=NAME``, which
switches that one mutant on.

Run it at low priority on a shared machine (the Makefile target does: ``nice -n 19``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STAGE = REPO / "build" / "mutation"
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def stage(root: Path) -> None:
    """A fresh ``root`` with src/trustcal, src/schemas (the configuration schema beside the package), tests/,
    pyproject.toml and config.yaml (which tests read from the repository's root; mutmut's results of an earlier
    run go)."""
    if root.exists():
        shutil.rmtree(root)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(REPO / "workflow" / "trustcal", root / "src" / "trustcal", ignore=ignore)
    shutil.copytree(REPO / "workflow" / "schemas", root / "src" / "schemas")
    shutil.copytree(REPO / "tests", root / "tests", ignore=ignore)
    for name in ("pyproject.toml", "config.yaml"):
        shutil.copy(REPO / name, root / name)


def environment() -> dict[str, str]:
    """The tests' environment: hypothesis replays a fixed sequence (CI), and the tests that read the shared
    folder find it beside this repository, not beside the staged copy."""
    return {"TRUSTCAL_SHARED": str(REPO.parent / "shared"), **os.environ, "PYTHONDONTWRITEBYTECODE": "1", "CI": "1"}


def mutmut(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mutmut")
    env = environment()
    return subprocess.run([str(exe), *args], cwd=STAGE, env=env, check=check, text=True, capture_output=True)


def all_mutants() -> list[str]:
    """Every mutant's name, from the ``.meta`` files mutmut writes beside the mutated modules."""
    names = []
    for meta in sorted((STAGE / "mutants").rglob("*.py.meta")):
        names += json.loads(meta.read_text())["exit_code_by_key"]
    return sorted(names)


def generate() -> list[str]:
    """mutmut's first step (writing the mutants) alone: ``mutmut run`` on a name that matches none stops
    after it (and after recording which tests reach which function, reused by the run that follows)."""
    done = mutmut("run", "--max-children", "1", "no.such.mutant__mutmut_0", check=False)
    names = all_mutants()
    if not names:
        raise SystemExit(f"mutmut wrote no mutants:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return names


def results() -> dict[str, str]:
    out = mutmut("results", "--all", "true").stdout
    return dict(line.strip().rsplit(": ", 1) for line in out.splitlines() if ": " in line)


def recheck(names: list[str], tests: list[str]) -> int:
    """Each of ``names`` against ``tests`` (module docstring); 1 if one survives or the clean run fails."""
    env = dict(environment(), PYTHONPATH=str(STAGE / "mutants" / "src"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider", "-p", "no:xdist"]
    survived = 0
    for name in ["", *names]:  # "": the trampolines run the original code
        done = subprocess.run([*cmd, *tests], cwd=REPO, env=dict(env, MUTANT_UNDER_TEST=name), capture_output=True)
        if not name:
            if done.returncode != 0:
                print(f"the clean run fails: {done.stdout.decode()[-2000:]}")
                return 1
            continue
        survived += done.returncode == 0
        print(f"{name}: {'survived' if done.returncode == 0 else 'killed'}", flush=True)
    print(f"{len(names) - survived} of {len(names)} killed")
    return 1 if survived else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=300, help="mutants drawn at random (0: all; default 300)")
    parser.add_argument("--seed", type=int, default=33, help="the draw's seed (default 33)")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--recheck", nargs="+", metavar="NAME", help="rerun these mutants of the last run")
    parser.add_argument("--tests", nargs="+", help="with --recheck: the tests (default: the configured selection)")
    args = parser.parse_args(argv)
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]
    if args.recheck:
        return recheck(args.recheck, args.tests or config["pytest_add_cli_args_test_selection"])
    start = time.monotonic()
    stage(STAGE)
    names = generate()
    by_module = Counter(n.split(".x")[0] for n in names)
    print(f"{len(names)} mutants in {len(by_module)} modules ({time.monotonic() - start:.0f} s):")
    for module, count in sorted(by_module.items()):
        print(f"  {module}: {count}")
    drawn = sorted(random.Random(args.seed).sample(names, args.sample)) if 0 < args.sample < len(names) else names
    print(
        f"testing {len(drawn)} of them (seed {args.seed}) against {' '.join(config['pytest_add_cli_args_test_selection'])}"
    )
    run = mutmut("run", "--max-children", str(args.max_children), *drawn, check=False)
    status = results()
    got = Counter(status.get(n, "not checked") for n in drawn)
    killed = sum(got[s] for s in KILLED)
    survivors = sorted(n for n in drawn if status.get(n, "not checked") not in KILLED)
    minutes = (time.monotonic() - start) / 60
    lines = [
        f"{mutmut('--version').stdout.strip()}: {len(drawn)} of {len(names)} mutants (seed {args.seed}), "
        f"{minutes:.0f} min",
        f"statuses: {dict(sorted(got.items()))}",
        f"score: {killed}/{len(drawn)} = {100 * killed / max(len(drawn), 1):.1f} % killed",
        "",
        "survivors:",
    ]
    for name in survivors:
        diff = mutmut("show", name, check=False).stdout
        changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        lines += [f"{name} ({status.get(name, 'not checked')})", *(f"    {line}" for line in changed), ""]
    (STAGE / "report.txt").write_text("\n".join(lines) + "\n")
    (STAGE / "run.log").write_text(run.stdout + run.stderr)
    print("\n".join(lines[:3]) + f"\nsurvivors and their diffs: {STAGE / 'report.txt'}")
    if got["not checked"]:  # mutmut stops before the mutants when the clean tests fail: no score
        print(f"{got['not checked']} of the {len(drawn)} mutants were not checked: see {STAGE / 'run.log'}")
        return 1
    return 0 if run.returncode == 0 else run.returncode


if __name__ == "__main__":
    sys.exit(main())
