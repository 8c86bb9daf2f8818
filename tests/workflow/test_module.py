"""The workflow imported as a Snakemake `module` by a workflow in another directory.

The importing workflow sets only the configuration keys it changes (the schema
has a default for every other key), names its rules `trustcal_*`, and keeps its
configuration in config/config.yaml: this workflow's own `configfile:
"config.yaml"` must be ignored (Snakemake does so when `config:` is passed),
conda environments and scripts must be found relative to the rule files, and
the local rules must survive the renaming (`localrule: True`, not `localrules:`).
"""

import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from helpers.workflow import REPO, make_workdir

pytestmark = pytest.mark.slow

IMPORTING_SNAKEFILE = f"""\
configfile: "config/config.yaml"


module trustcal:
    snakefile:
        {str(REPO / "Snakefile")!r}
    config:
        config


use rule * from trustcal as trustcal_*


print("local rules:", *sorted(workflow._localrules))  # run on the submit host by a cluster executor
"""


def run(workdir, *args):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=900)
    return proc, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def importing(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("module") / "mine")
    (workdir / "tiny.yaml").unlink()  # no config.yaml in the working directory either
    (workdir / "config").mkdir()
    only_what_it_changes = {
        "datasets": ["mnist"],
        "download": False,
        "verify_checksums": False,
        "epochs": 2,
        "device": "cpu",
    }
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(only_what_it_changes))
    (workdir / "Snakefile").write_text(IMPORTING_SNAKEFILE)
    return workdir


def test_imported_as_a_module_runs_to_the_verdict(importing):
    proc, out = run(importing)
    assert proc.returncode == 0, out
    assert "localrules directive specifies rules that are not present" not in out
    local = re.search(r"^local rules: (.*)$", out, flags=re.M).group(1).split()
    assert local == [
        "trustcal_download",
        "trustcal_figures",
        "trustcal_metric_figures",
        "trustcal_shift_figures",
        "trustcal_verdict",
    ], out
    assert (importing / "results" / "reproduction.md").is_file()
    ran = set(re.findall(r"^(?:local)?rule (\w+):", out, flags=re.M))
    assert {
        "trustcal_download",
        "trustcal_train",
        "trustcal_logits",
        "trustcal_calibrate",
        "trustcal_trust",
        "trustcal_scores",
        "trustcal_figures",
        "trustcal_verdict",
        "trustcal_all",
    } <= ran, sorted(ran)
    # the importing workflow's values, the schema's defaults for the rest
    history = pd.read_csv(importing / "results" / "mnist" / "seed0" / "history.csv")
    assert list(history["epoch"]) == [1, 2]
    assert not (importing / "results" / "cifar10").exists()
    assert (importing / "results" / "logs" / "train" / "mnist" / "seed0.log").is_file()
    # nothing left to do
    proc, out = run(importing, "--dry-run")
    assert proc.returncode == 0 and "Nothing to be done" in out, out


def test_module_conda_envs_resolve_into_this_repository(importing):
    """--containerize reads every rule's env file (then needs conda, absent here): the paths it hashes."""
    proc, out = run(importing, "--containerize")
    hashed = {(importing / p).resolve() for p in re.findall(r"Hashing conda environment (\S+)\.$", out, flags=re.M)}
    assert hashed == {REPO / "envs" / "train.yaml", REPO / "envs" / "analysis.yaml"}, out
    assert "No such file" not in out
