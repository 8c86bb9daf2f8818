"""The light install: `pip install trustcal` (no extras) gives the metrics, `trustcal assess`, its figures and
the Python API, without torch, torchvision, snakemake or jsonschema (PyYAML, small, is a base dependency: it reads
the claims files)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import venv

import numpy as np
import pytest
from helpers.workflow import REPO

HEAVY = ("torch", "torchvision", "snakemake", "jsonschema")
LIGHT_DEPENDENCIES = [
    "numpy>=1.26",
    "pandas>=2.1",
    "matplotlib>=3.8",
    "seaborn>=0.13",
    "tqdm>=4.60",
    "pyyaml>=6.0",
    "threadpoolctl>=3.1",
]

# Imports everything `trustcal assess` and the API use, runs both on a small file (figures included)
# and prints the heavy modules that got imported.
IMPORT_CHECK = """
import contextlib, io, sys, tempfile
from pathlib import Path
import numpy as np
import trustcal, trustcal.cli, trustcal.assessment, trustcal.api, trustcal.reporting.figures, trustcal.reporting.verdict
d = Path(tempfile.mkdtemp())
rng = np.random.default_rng(0)
labels = rng.integers(0, 3, 200)
logits = rng.normal(size=(200, 3)) + 2 * np.eye(3)[labels]
np.savez(d / "preds.npz", logits=logits, labels=labels, val_logits=logits[:100], val_labels=labels[:100])
with contextlib.redirect_stdout(io.StringIO()):
    assert trustcal.cli.main(["assess", str(d / "preds.npz"), "--out", str(d / "out"), "--paper-claims", "mnist"]) == 0
assert (d / "out" / "figures" / "reliability.png").is_file()
result = trustcal.assess(logits, labels, kind="logits", validation=(logits[:100], labels[:100]))
result.reliability_diagram(); result.trust_spectrum(); result.summary()
print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY}))
"""


def test_assess_and_the_api_import_no_heavy_module():
    code = IMPORT_CHECK.replace("{HEAVY}", repr(set(HEAVY)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_dependencies_are_layered():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert project["dependencies"] == LIGHT_DEPENDENCIES
    assert extras["train"] == [
        "torch>=2.14,<2.15",
        "torchvision>=0.29,<0.30",
        "scipy>=1.11",
    ]  # scipy: SVHN's .mat files
    assert extras["calibration"] == ["scipy>=1.11", "scikit-learn>=1.3"]  # vector … isotonic
    assert extras["workflow"] == [
        "trustcal[train]",
        "trustcal[calibration]",
        "snakemake>=9.0,<10",
        "jsonschema>=4.20",
        "pygments>=2.10",  # snakemake --report needs it; snakemake does not install it
    ]
    assert extras["cluster"] == ["snakemake-executor-plugin-slurm>=2.0"]
    assert extras["slurm"] == ["trustcal[cluster]"]
    assert extras["test"][0] == "trustcal[workflow]"
    makefile = (REPO / "Makefile").read_text()
    assert "pip install --quiet -e '.[workflow]'" in makefile and "pip install --quiet -e '.[test,lint]'" in makefile
    assert extras["lint"] == ["ruff==0.17.6", "snakefmt==2.1.0", "black==26.10.1"]


@pytest.mark.slow
def test_the_wheel_alone_runs_trustcal_assess(tmp_path, author_predictions):
    """Build the wheel, install it without extras into a fresh venv (numpy, pandas, matplotlib, seaborn and tqdm
    come from the package index) and assess the author's MNIST predictions with it."""
    mnist = author_predictions / "MNIST_PRED"
    start = time.monotonic()
    pip = ["-m", "pip", "--disable-pip-version-check", "--no-input"]
    # built from a copy of the package's files, so the build leaves nothing in the repository
    src = tmp_path / "src"
    shutil.copytree(
        REPO / "workflow" / "trustcal",
        src / "workflow" / "trustcal",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, *pip, "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = wheels.glob("trustcal-*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(
        [python, *pip, "install", "--quiet", str(wheel)], check=True, capture_output=True, text=True, env=env
    )
    listed = subprocess.run(
        [python, *pip, "list", "--format", "json"], check=True, capture_output=True, text=True, env=env
    )
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"trustcal", "numpy", "pandas", "matplotlib", "seaborn", "tqdm"} <= installed
    assert not installed & {"torch", "torchvision", "snakemake", "jsonschema", "scipy", "scikit-learn"}, installed

    out = tmp_path / "out"
    done = subprocess.run(
        [env_dir / "bin" / "trustcal", "assess", str(mnist), "--out", str(out), "--json", "--no-figures"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["classes"] == 10 and len(summary["files"]) >= 2
    assert all(0 <= e["ece"] <= 1 and e["accuracy"] > 0.9 for e in summary["epochs"])
    assert (out / "trust.csv").is_file() and (out / "scores.csv").is_file()
    assert all(e["ece_lo"] <= e["ece_hi"] for e in summary["epochs"])  # the bootstrap needs numpy only

    # a calibrator that needs scipy says which extra to install, in one line, with no traceback
    rng = np.random.default_rng(0)
    labels = np.arange(300) % 3
    logits = rng.normal(size=(300, 3)) + 2 * np.eye(3)[labels]
    np.savez(tmp_path / "model.npz", logits=logits, labels=labels, val_logits=logits, val_labels=labels)
    done = subprocess.run(
        [env_dir / "bin" / "trustcal", "assess", "model.npz", "--out", "cal", "--calibrators", "temperature,matrix"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "pip install 'trustcal[calibration]'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    print(f"wheel built, installed and run in {time.monotonic() - start:.0f} s")
