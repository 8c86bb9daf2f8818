"""Two configurations in one checkout (docs/usage.md, "Configurations side by side"): the verdict names the
configuration it judged, a run of another configuration warns before its verdict replaces that one, and Snakemake's
--directory keeps the second configuration's results apart, both verdicts readable."""

import pytest
import yaml
from helpers.workflow import make_workdir, snakemake

pytestmark = pytest.mark.slow


def configuration_line(verdict) -> str:
    (line,) = [x for x in verdict.read_text(encoding="utf-8").splitlines() if x.startswith("- Configuration: ")]
    return line


def test_a_second_configuration_warns_and_runs_apart_in_its_own_folder(tmp_path):
    work = make_workdir(tmp_path / "work", datasets=["mnist"], epochs=2)
    snakemake(work)
    first = work / "results" / "reproduction.md"
    assert "--configfile tiny.yaml" in configuration_line(first)
    before = first.read_bytes()

    (work / "other.yaml").write_text(yaml.safe_dump({"epochs": 3}))
    dry = snakemake(work, "--configfile", "tiny.yaml", "other.yaml", "--dry-run")
    warning = [x for x in (dry.stdout + dry.stderr).splitlines() if "is the verdict of another configuration" in x]
    assert len(warning) == 1 and "--configfile other.yaml" in warning[0] and "--directory" in warning[0], warning
    assert not any("another configuration" in x for x in snakemake(work, "--dry-run").stderr.splitlines())

    # the documented way: the second configuration in a folder of its own, the data where they are
    data = work / "data"
    snakemake(
        work,
        "--directory",
        "runs/other",
        "--configfile",
        str(work / "tiny.yaml"),
        str(work / "other.yaml"),
        "--config",
        f"data_dir={data}",
    )
    second = work / "runs" / "other" / "results" / "reproduction.md"
    assert "other.yaml" in configuration_line(second) and first.read_bytes() == before
    assert (work / "runs" / "other" / "results" / "mnist" / "seed0" / "logits" / "epoch003.npz").exists()
