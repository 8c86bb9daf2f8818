"""The layout the Snakemake workflow catalog and `snakedeploy deploy-workflow` expect.

The catalog's generator looks for `workflow/Snakefile` whenever a `workflow/` folder exists, and its
"standardized usage" page shows `config/README.md` and `config/config.yaml`; snakedeploy copies `config/`
into the new folder and writes a Snakefile that imports `workflow/Snakefile` as a module.
"""

import os
import re
import shutil
import subprocess
import sys
import venv

import pytest
import yaml
from helpers.workflow import REPO

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CONFIG_README = REPO / "config" / "README.md"


def schema_keys(node: dict, prefix: str = "") -> dict[str, dict]:
    """Every key of the configuration, dotted (`calibration.t_min`), with its schema; the options of a
    name-keyed section (`external`) as `external.<name>.path`. A section whose keys are all free-form
    option objects (`calibration.options`: one per method) is one key: its members are not settings."""
    keys = {}
    for name, sub in node.get("properties", {}).items():
        path = prefix + name
        members = sub.get("properties", {})
        if members and not all(m.get("type") == "object" and "properties" not in m for m in members.values()):
            keys.update(schema_keys(sub, path + "."))
        elif isinstance(sub.get("additionalProperties"), dict):
            keys.update(schema_keys(sub["additionalProperties"], path + ".<name>."))
        else:
            keys[path] = sub
    return keys


def documented_keys(text: str) -> dict[str, str | None]:
    """The keys of config/README.md's tables (first column, in backticks) → their default column (the
    second of a three-column table), or None where the table has no default column."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        match = re.fullmatch(r"`([\w.<>]+)`", cells[0]) if cells else None
        if match:
            rows[match.group(1)] = cells[1].strip("`") if len(cells) == 3 else None
    return rows


def test_the_layout_the_catalog_and_snakedeploy_look_for():
    for path in ("workflow/Snakefile", "config/README.md", "config/config.yaml", "LICENSE", "CITATION.cff"):
        assert (REPO / path).is_file(), path
    catalog = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    assert set(catalog["usage"]) >= {"mandatory-flags", "software-stack-deployment"}


def test_config_yaml_is_the_same_file_at_both_places():
    """config.yaml (the top level: `snakemake --cores 2` in a clone) and config/config.yaml (what snakedeploy
    copies): one configuration, so that a deployed run is the paper's run."""
    top, deployed = (REPO / "config.yaml").read_text(), (REPO / "config" / "config.yaml").read_text()
    assert deployed == top, "config/config.yaml differs from config.yaml; fix: cp config.yaml config/config.yaml"


def test_every_configuration_key_is_documented_with_its_default():
    keys = schema_keys(yaml.safe_load(SCHEMA.read_text()))
    documented = documented_keys(CONFIG_README.read_text())
    assert len(keys) > 40  # the walk reached the nested sections
    assert sorted(set(keys) - set(documented)) == [], "schema keys missing from config/README.md"
    assert sorted(set(documented) - set(keys)) == [], "config/README.md documents keys the schema does not have"
    for key, default in documented.items():
        if default is not None:
            assert yaml.safe_load(default) == keys[key]["default"], (key, default, keys[key]["default"])


def test_the_documentation_check_sees_a_missing_key_and_a_wrong_default():
    text = CONFIG_README.read_text()
    keys = schema_keys(yaml.safe_load(SCHEMA.read_text()))
    dropped = documented_keys(text.replace("| `trust.beta` |", "| trust beta |"))
    assert set(keys) - set(dropped) == {"trust.beta"}
    wrong = documented_keys(text.replace("| `epochs` | `100` |", "| `epochs` | `10` |"))
    assert yaml.safe_load(wrong["epochs"]) != keys["epochs"]["default"]


def test_the_top_level_snakefile_is_only_the_entry_point():
    """One definition of the workflow: workflow/Snakefile. The top-level Snakefile (what `snakemake` finds
    first in a clone) includes it, names its default target again and declares nothing itself."""
    code = [line for line in (REPO / "Snakefile").read_text().splitlines() if line.strip() and line[0] != "#"]
    assert code == ['include: "workflow/Snakefile"', "workflow.default_target = rules.all.rule.name"]


def test_snakemake_in_a_clean_clone_plans_the_paper_run(tmp_path):
    """`snakemake --cores 2` at the top of a clone (README): the default target is `all`, although it is declared
    in the included workflow/Snakefile (Snakemake undoes an include's default target when the include returns;
    without the top-level Snakefile's last line this plans nothing and says "Nothing to be done")."""
    source = copy_of_the_repository(tmp_path / "trustcal")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--dry-run", "--cores", "1"], cwd=source, capture_output=True, text=True
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    # config.yaml, the paper's run: both datasets, one seed each, down to the verdict
    assert planned.get("all") == "1" and planned.get("train") == "2" and planned.get("verdict") == "1", out


def copy_of_the_repository(dest):
    """What a clone holds of the workflow (snakedeploy's local 'clone' copies the whole folder)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".snakemake")
    dest.mkdir()
    for name in ("Snakefile", "LICENSE", "config.yaml"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("workflow", "config", "envs", "profiles"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    return dest


def test_the_catalogs_lint_passes_on_a_clean_copy(tmp_path):
    """The catalog runs `snakemake --lint` at the top of a fresh clone (no data, no results) and shows what it
    prints when it fails."""
    source = copy_of_the_repository(tmp_path / "trustcal")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"], cwd=source, capture_output=True, text=True, timeout=600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "in a good condition" in out, out


@pytest.fixture(scope="module")
def snakedeploy(tmp_path_factory):
    """snakedeploy in a venv of its own (it may pin other versions than the project's); TRUSTCAL_SNAKEDEPLOY
    names an installed one instead."""
    given = os.environ.get("TRUSTCAL_SNAKEDEPLOY")
    if given:
        return given
    env_dir = tmp_path_factory.mktemp("snakedeploy") / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [env_dir / "bin" / "python", "-m", "pip", "--disable-pip-version-check", "--no-input", "install"]
    done = subprocess.run([*pip, "--quiet", "snakedeploy"], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"snakedeploy could not be installed from the package index: {done.stderr.strip()[-300:]}")
    return str(env_dir / "bin" / "snakedeploy")


@pytest.mark.slow
def test_snakedeploy_deploys_it_and_the_deployment_plans_the_paper_run(snakedeploy, tmp_path):
    source = copy_of_the_repository((tmp_path / "trustcal").resolve())
    dest = tmp_path / "my-run"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    deployed = subprocess.run(
        [snakedeploy, "deploy-workflow", str(source), str(dest), "--branch", "main"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    out = deployed.stdout + deployed.stderr
    assert deployed.returncode == 0, out
    assert "not found in traditional path" not in out  # it found workflow/Snakefile
    assert (dest / "config" / "config.yaml").read_text() == (REPO / "config.yaml").read_text()
    assert (dest / "config" / "README.md").is_file() and (dest / "LICENSE").is_file()
    snakefile = dest / "workflow" / "Snakefile"
    text = snakefile.read_text()
    # A local source is written as a path relative to the repository ("workflow/Snakefile"), which Snakemake
    # resolves against the new Snakefile's folder; from a repository it is github(..., path="workflow/Snakefile").
    assert text.count('"workflow/Snakefile"') == 1, text
    snakefile.write_text(text.replace('"workflow/Snakefile"', repr(str(source / "workflow" / "Snakefile"))))

    cmd = [sys.executable, "-m", "snakemake", "--dry-run", "--cores", "1"]
    proc = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    # config/config.yaml, the paper's run: both datasets, one seed each, down to the verdict
    assert planned.get("all") == "1" and planned.get("train") == "2" and planned.get("verdict") == "1", out
