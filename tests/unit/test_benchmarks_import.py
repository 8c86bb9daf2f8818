"""Every benchmark script imports (benchmarks/README.md): a moved or renamed package name breaks a benchmark
before it times anything, and no other test runs them. Importing runs each script's top level only (its
``main`` is behind ``if __name__ == "__main__"``), in a child process so that the thread settings they make
before NumPy loads do not leak into this one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py"))


def test_the_benchmarks_are_found():
    assert {"bench_metrics", "bench_calibrators", "bench_training"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_script_imports(script):
    path = os.pathsep.join([str(ROOT / "workflow"), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", f"import {script}"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
