"""The mutants of issue 33's "Done when", each applied to a temporary copy of the package and run against the
fast tests that guard it: a mutant that no test fails "survived".

    .venv/bin/python tests/mutation/known_mutants.py            # every mutant
    .venv/bin/python tests/mutation/known_mutants.py folds sweep  # some, by name

The real files are never edited: the package (workflow/trustcal) is copied to a temporary folder, the mutant
written there, and pytest runs this repository's tests with the copy first on the import path (PYTHONPATH
comes before the editable install's path entry); each run first checks that ``trustcal`` is imported from
the copy. Before the mutants, the unmutated copy must pass the same tests. Exit status 1 if a mutant survived
or the unmutated copy failed. Run it at low priority on a shared machine: ``nice -n 19``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "workflow" / "trustcal"


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str
    file: str  # relative to the package
    old: str  # replaced exactly once
    new: str
    tests: tuple[str, ...]


DECOMPOSITION = ("tests/unit/measures/test_decomposition.py",)
MUTANTS = (
    Mutant(
        "folds",
        "refinement with 2 folds instead of 5 (the default refinement_folds)",
        "measures/metric_params.py",
        "refinement_folds: int = setting(\n        5,",
        "refinement_folds: int = setting(\n        2,",
        DECOMPOSITION,
    ),
    Mutant(
        "folds-call",
        "refinement_losses cross-fits on 2 folds whatever refinement_folds says",
        "evaluation/scores.py",
        "fit, metrics.refinement_folds, seed, log_probs=p.log_probs)",
        "fit, 2, seed, log_probs=p.log_probs)",
        DECOMPOSITION,
    ),
    Mutant(
        "temperature",
        "the recalibration temperature of the refinement path 5 % off",
        "evaluation/scores.py",
        "return lambda z: softmax(z, temperature)",
        "return lambda z: softmax(z, 1.05 * temperature)",
        DECOMPOSITION,
    ),
    Mutant(
        "sweep",
        "trust sweep ignoring the number of clusters M and the representative",
        "evaluation/trust.py",
        "t = trust_opinions(p.probs, p.labels, replace(params, clusters=m, representative=rep))",
        "t = trust_opinions(p.probs, p.labels, params)",
        ("tests/unit/evaluation/test_tables_sweep.py",),
    ),
    Mutant(
        "fusion-guard",
        "the empty-fusion guard of fuse removed",
        "measures/opinions.py",
        '    if b.shape[axis] == 0:\n        raise ValueError("cannot fuse an empty set of opinions")\n',
        "",
        ("tests/unit/measures/test_opinions.py", "tests/unit/measures/test_trust.py"),
    ),
    Mutant(
        "confidence-columns",
        "confidence_correct and confidence_incorrect swapped in scalar_metrics",
        "measures/metrics.py",
        '_named("confidence_correct", "confidence_incorrect")',
        '_named("confidence_incorrect", "confidence_correct")',
        ("tests/unit/measures/test_metrics.py",),
    ),
)


def copy_package(root: Path) -> Path:
    """workflow/trustcal copied to ``root``/workflow/trustcal (no caches); returns ``root``/workflow."""
    target = root / "workflow"
    shutil.copytree(PACKAGE, target / "trustcal", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def run_tests(path_entry: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    """pytest on ``tests`` with ``path_entry`` first on the import path: (exit status, its last lines)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path_entry), os.environ.get("PYTHONPATH", "")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    where = subprocess.run(
        [sys.executable, "-c", "import trustcal; print(trustcal.__file__)"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(where).resolve().is_relative_to(path_entry.resolve()):
        raise SystemExit(f"trustcal is imported from {where}, not from the copy {path_entry}")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider", "-p", "no:xdist"]
    done = subprocess.run([*cmd, *tests], env=env, cwd=REPO, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return done.returncode, "; ".join(failed[:2] or lines[-1:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"mutants to run (default: all of {[m.name for m in MUTANTS]})")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants {sorted(unknown)}")
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    survived = 0
    with tempfile.TemporaryDirectory(prefix="trustcal-mutants-") as tmp:
        entry = copy_package(Path(tmp))
        tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        start = time.monotonic()
        status, tail = run_tests(entry, tests)
        print(f"unmutated copy: {'passes' if status == 0 else 'FAILS'} ({time.monotonic() - start:.0f} s: {tail})")
        if status != 0:
            return 1
        for m in chosen:
            path = entry / "trustcal" / m.file
            original = path.read_text()
            if original.count(m.old) != 1:
                raise SystemExit(f"{m.name}: the text to mutate is not in {m.file} exactly once (the code changed?)")
            path.write_text(original.replace(m.old, m.new))
            start = time.monotonic()
            try:
                status, tail = run_tests(entry, m.tests)
            finally:
                path.write_text(original)
            verdict = "killed" if status != 0 else "SURVIVED"
            survived += status == 0
            print(f"{m.name:<19} {verdict:<8} {time.monotonic() - start:5.0f} s  {m.what}\n{'':<19} {tail}")
    print(f"{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
