"""Running the workflow from tests: tiny configuration, snakemake in a subprocess."""

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]

TINY_YAML = REPO / "tests" / "tiny.yaml"  # also runnable by hand: see its header
TINY_CONFIG = yaml.safe_load(TINY_YAML.read_text())


def make_workdir(path: Path, n_train=240, n_test=80, **config) -> Path:
    """A working directory with the synthetic data and tiny.yaml (tests/tiny.yaml with `config` on top)."""
    from trustcal.data.synthetic import write_cifar10, write_mnist

    config = {**TINY_CONFIG, **config}
    path.mkdir(parents=True, exist_ok=True)
    write_mnist(path / config["data_dir"], n_train=n_train, n_test=n_test)
    write_cifar10(path / config["data_dir"], n_train=n_train, n_test=n_test)
    (path / "tiny.yaml").write_text(yaml.safe_dump(config))
    return path


def snakemake(
    workdir: Path, *args: str, check: bool = True, timeout: int = 600, env: dict | None = None
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        "tiny.yaml",
        "--cores",
        "2",
        *args,
    ]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def planned_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Rule → job count of what a dry run would execute."""
    proc = snakemake(workdir, "--dry-run", *args)
    out = proc.stdout + proc.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1]
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)
        if m.group(1) != "total"
    }
