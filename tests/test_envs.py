"""envs/trustcal.yaml (for --sdm conda) lists the same packages and bounds as pyproject.toml."""

import re
import tomllib

import yaml

from workflow_utils import REPO

CONDA_NAMES = {"torch": "pytorch"}  # PyPI name → conda-forge name


def split(requirement: str) -> tuple[str, str]:
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement)
    return m.group(1).lower(), m.group(2).replace(" ", "")


def test_conda_env_matches_pip_dependencies():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    pip = dict(split(CONDA_NAMES.get(split(r)[0], split(r)[0]) + split(r)[1]) for r in pyproject["project"]["dependencies"])
    env = yaml.safe_load((REPO / "envs" / "trustcal.yaml").read_text())
    conda = dict(split(d) for d in env["dependencies"] if isinstance(d, str))
    python = conda.pop("python")
    assert python == pyproject["project"]["requires-python"]
    assert conda == pip


def test_every_rule_uses_the_conda_env():
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        text = smk.read_text()
        assert text.count("script:") == text.count("conda:"), smk.name
