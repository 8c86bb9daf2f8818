"""A run naming a network that cannot be built stops the workflow when its configuration is read, before the
download, the preparation and the train job that used to find it: a dry run says it, one line per run."""

import os
import subprocess
import sys

import pytest
import torchvision
import yaml
from helpers.training import write_user_module
from helpers.workflow import REPO, TINY_CONFIG

pytestmark = pytest.mark.slow

NET = """
from torch import nn

class Net(nn.Sequential):
    def __init__(self, in_shape, num_classes):
        super().__init__(nn.Flatten(), nn.LazyLinear(num_classes))
"""


def test_a_mistyped_network_stops_the_dry_run_naming_the_run_the_value_and_the_fix(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY_CONFIG))
    mine = {
        "datasets": ["mnist", "tv", "own"],
        "setups": {
            "tv": {"dataset": "cifar10", "network": "torchvision:resnet1B"},
            "own": {"dataset": "mnist", "network": "mynets.nets:Nett"},
        },
    }
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine))
    write_user_module(tmp_path / "lib", "nets", NET)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--dry-run", "--cores", "1"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}
    proc = subprocess.run(
        [*cmd, "--configfile", "mine.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    lines = [line.strip() for line in out.splitlines()]
    available = torchvision.models.list_models(module=torchvision.models)
    assert (
        "--configfile mine.yaml: setups: tv: network 'torchvision:resnet1B': torchvision "
        f"{torchvision.__version__} has no classification network 'resnet1B' (did you mean 'resnet18'?). "
        f"Fix: name one of its classification networks: {', '.join(available)}"
    ) in lines, out
    assert (
        f"--configfile mine.yaml: setups: own: network 'mynets.nets:Nett': module mynets.nets "
        f"({tmp_path / 'lib' / 'mynets' / 'nets.py'}) has no Nett (did you mean 'Net'?) (its nn.Module classes: "
        "Net); fix the import path (package.module:Class)"
    ) in lines, out
    assert "Traceback" not in out and "Job stats" not in out, out
