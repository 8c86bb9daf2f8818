"""The workflow on the oldest and the newest Snakemake 9 it supports (pyproject.toml's bounds; the newest is the
installed one): a dry run of the tiny configuration, the config check's messages naming the layer a bad value
came from, and a real job behind the check that its folders can be written (onstart). The workflow uses
Snakemake's public interface only (`config`, workflow.configfiles, workflow.basedir, `rules.<name>`, onstart),
no setting or object of Snakemake's own that a minor release may change.

The oldest Snakemake is installed from the package index into a virtual environment of its own, kept between
sessions (in $TRUSTCAL_SNAKEMAKE_VENVS, else the temporary folder); it takes every other package from this
environment. Where it cannot be made (offline, no package index), the test of that version is skipped, saying why.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import venv
from pathlib import Path

import pytest
import yaml
from helpers.workflow import REPO, TINY_CONFIG, make_workdir
from packaging.specifiers import SpecifierSet
from packaging.version import Version

# Snakemake's private internals the workflow once read, each gone in some minor release or other
INTERNALS = ("config_" + "settings", "skip_" + "configfile", "needrun_" + "jobs")


def supported() -> SpecifierSet:
    """The Snakemake versions the workflow extra accepts (pyproject.toml)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (spec,) = [s for s in extras["workflow"] if re.match(r"snakemake\b", s)]
    return SpecifierSet(spec.removeprefix("snakemake"))


def oldest() -> str:
    """The lower bound of the supported versions (``>=9.0``: Snakemake 9.0.0)."""
    (bound,) = [s.version for s in supported() if s.operator == ">="]
    release = Version(bound).release
    return ".".join(map(str, (*release, 0, 0)[:3]))


NEWEST = importlib.metadata.version("snakemake")
VERSIONS = list(dict.fromkeys([oldest(), NEWEST]))


def test_the_installed_snakemake_is_supported():
    assert NEWEST in supported(), f"snakemake {NEWEST} is outside pyproject.toml's {supported()}"
    assert Version(oldest()).major == 9


def venv_python(version: str) -> Path:
    """A Python running Snakemake ``version``: this one for the installed version, else a virtual environment of
    that version alone (its own dependencies), which reads every other package from this environment."""
    if version == NEWEST:
        return Path(sys.executable)
    root = Path(os.environ.get("TRUSTCAL_SNAKEMAKE_VENVS") or Path(tempfile.gettempdir()) / "trustcal-snakemake")
    env_dir = root / f"snakemake-{version}"
    python = env_dir / "bin" / "python"
    done = env_dir / "complete"  # written once the install succeeded
    if not (done.is_file() and python.exists()):
        build(env_dir, version)
    # every other package (numpy, torch, jsonschema …) from this environment, after the venv's own: written each
    # session, so that it follows this environment
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout.strip()
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(purelib) / "zz_trustcal_environment.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in ours) + "\n"
    )
    return python


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def build(env_dir: Path, version: str) -> None:
    """A virtual environment with Snakemake ``version`` and its dependencies, from the package index; skips the
    test, saying why, where it cannot be made."""
    shutil.rmtree(env_dir, ignore_errors=True)  # an earlier attempt that stopped halfway
    try:
        venv.EnvBuilder(with_pip=True).create(env_dir)
    except Exception as exc:
        pytest.skip(f"no virtual environment for Snakemake {version} could be made in {env_dir}: {exc!r}")
    python = env_dir / "bin" / "python"
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input", "install", "--quiet"]
    proc = subprocess.run([*pip, f"snakemake=={version}"], capture_output=True, text=True, env=clean_env(), timeout=900)
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        shutil.rmtree(env_dir, ignore_errors=True)
        pytest.skip(f"Snakemake {version} could not be installed from the package index (offline?): {tail}")
    (env_dir / "complete").write_text(f"snakemake=={version}\n")


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"snakemake-{v}" for v in VERSIONS])
def snakemake_python(request):
    python = venv_python(request.param)
    found = subprocess.run(
        [python, "-c", "import snakemake; print(snakemake.__version__)"],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert found.stdout.strip() == request.param, found.stdout + found.stderr
    return request.param, python


def run(python: Path, workdir: Path, *args: str) -> tuple[int, str]:
    cmd = [python, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "2", *args]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600, env=clean_env())
    return proc.returncode, proc.stdout + proc.stderr


def job_counts(out: str) -> dict[str, int]:
    table = out.split("Job stats:", 1)[1]
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)
        if m.group(1) != "total"
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return make_workdir(tmp_path_factory.mktemp("versions") / "work")


@pytest.mark.slow
def test_a_dry_run_of_the_tiny_configuration(snakemake_python, workdir):
    version, python = snakemake_python
    code, out = run(python, workdir, "--configfile", "tiny.yaml", "--dry-run")
    assert code == 0, out
    runs = sum(len(TINY_CONFIG["seeds"]) for _ in TINY_CONFIG["datasets"])
    jobs = job_counts(out)
    assert jobs["all"] == 1 and jobs["verdict"] == 1, jobs
    assert jobs["download"] == jobs["prepare"] == jobs["figures"] == len(TINY_CONFIG["datasets"]), jobs
    for rule in ("train", "logits", "calibration_table", "trust", "scores"):
        assert jobs[rule] == runs, (rule, jobs)
    assert "Traceback" not in out, out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "source"),
    [
        (["--configfile", "bad.yaml"], "--configfile bad.yaml"),
        (["--configfile", "bad.yaml", "--config", "epochs=0"], "--config"),  # the value bad.yaml gives it
        (["--config", "epochs=2", "epochs=0"], "--config"),
        (["--config", "calibration={t_min: 500}"], "--config"),  # above t_max's default
    ],
    ids=["--configfile", "both", "the last --config", "a key inside a section"],
)
def test_the_config_check_names_the_layer_of_a_bad_value(snakemake_python, tmp_path, args, source):
    version, python = snakemake_python
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY_CONFIG))
    (tmp_path / "bad.yaml").write_text("epochs: 0\n")
    code, out = run(python, tmp_path, "--dry-run", *args)
    assert code != 0, out
    expected = (
        f"{source}: calibration.t_min must be smaller than calibration.t_max"
        if "calibration" in args[-1]
        else f"{source}: key 'epochs' is 0; it must be ≥ 1"
    )
    assert expected in out, out
    assert "config.yaml: key" not in out and "Traceback" not in out, out


@pytest.mark.slow
def test_a_config_yaml_that_is_not_yaml_is_named_by_line_and_column(snakemake_python, tmp_path):
    version, python = snakemake_python
    (tmp_path / "config.yaml").write_text("epochs: 3\nseeds: [0, 1\ndatasets: [mnist]\n")
    code, out = run(python, tmp_path, "--dry-run")
    assert code != 0, out
    assert "config.yaml: not valid YAML at line 3, column 9: " in out, out


def can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.slow
def test_a_real_run_checks_its_folders_before_its_first_job(snakemake_python, tmp_path):
    """The download job of mnist runs behind the check (onstart); where this test may mount a folder read-only
    (root), the same job with its log folder read-only stops before it starts, naming the log file."""
    version, python = snakemake_python
    work = make_workdir(tmp_path / "work", datasets=["mnist"])
    target = "results/data/mnist/raw_manifest.tsv"
    logs = work / "results" / "logs" / "download"
    if can_mount():
        logs.mkdir(parents=True)
        mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(logs), str(logs)], capture_output=True)
        if mounted.returncode == 0:
            try:
                code, out = run(python, work, target, "--configfile", "tiny.yaml")
            finally:
                subprocess.run(["umount", "-l", str(logs)], capture_output=True)
            assert code != 0, out
            line = f"results/logs/download/mnist.log: cannot be written: read-only file system ({logs})"
            assert line in out, out
            assert "rule download:" not in out and not (work / target).exists(), out
    code, out = run(python, work, target, "--configfile", "tiny.yaml")
    assert code == 0, out
    assert (work / target).is_file()


def test_the_workflow_reads_no_snakemake_internals():
    """Nothing of the workflow or the package names them (this file does, to look for them)."""
    if not shutil.which("git") or not (REPO / ".git").exists():
        pytest.skip("the files of the repository are listed by git, and this is no git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    found = []
    for name in listed:
        path = REPO / name
        if path == Path(__file__) or not path.is_file() or path.suffix in {".png", ".pdf", ".npz", ".gz"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{name}: {word}" for word in INTERNALS if word in text]
    assert not found, found
