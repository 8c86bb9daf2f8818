"""The workflow's profiles are found as Snakemake itself looks for them (snakemake.cli.get_profile_dir: a folder
holding config.yaml or config.v<N>+.yaml, N at most the running major version), each file a mapping of options."""

import pytest
import yaml
from helpers.workflow import REPO
from snakemake.cli import get_profile_dir


@pytest.mark.parametrize("name", ["default", "slurm"])
def test_snakemake_finds_each_profiles_file(name):
    folder, config = get_profile_dir(str(REPO / "profiles" / name))
    assert folder == REPO / "profiles" / name and config.exists(), (folder, config)
    assert isinstance(yaml.safe_load(config.read_text()), dict)
