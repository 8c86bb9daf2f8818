"""The documentation site (mkdocs.yml, `make docs`): docs/*.md and the API reference from the docstrings.

`mkdocs build --strict` turns every warning into an error: a link to a page or an anchor that does not
exist, a link to a file outside docs/, a docstring the API reference cannot read.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers.workflow import REPO

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (pip install -e '.[docs]')"
)


def build(config, site_dir):
    cmd = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(config),
        "--site-dir",
        str(site_dir),
    ]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)


def test_the_site_builds_without_a_warning(tmp_path):
    done = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in (
        "trustcal.api.assess",
        "trustcal.api.AssessmentResult",
        "trustcal.measures.metrics.ece",
        "trustcal.measures.trust",
        "trustcal.calibration.fit_calibrator",
    ):
        assert f'id="{name}"' in api, name
    # config/README.md, included: the configuration page lists the keys
    configuration = (tmp_path / "site" / "configuration" / "index.html").read_text()
    assert "calibration.t_min" in configuration and "external.&lt;name&gt;.path" in configuration
    # benchmarks/README.md, included beside the scripts it describes
    benchmarks = (tmp_path / "site" / "benchmarks" / "index.html").read_text()
    assert 'id="training-speed"' in benchmarks and "bench_calibrators.py" in benchmarks
    # every page of docs/ is in the site (mkdocs.yml's nav; a page left out of it is a warning)
    for page in sorted((REPO / "docs").glob("*.md")):
        built = tmp_path / "site" / ("" if page.stem == "index" else page.stem) / "index.html"
        assert built.is_file(), page.name


@pytest.mark.parametrize(
    "link",
    [
        "[a section that does not exist](method.md#no-such-section)",
        "[a page that does not exist](no-such-page.md)",
        "[a file outside docs/](../README.md)",
    ],
)
def test_a_broken_link_fails_the_build(tmp_path, link):
    """The project's mkdocs.yml on a copy of docs/ with one broken link added to the front page."""
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    with (docs / "index.md").open("a") as f:
        f.write(f"\nSee {link}.\n")
    config = REPO.joinpath("mkdocs.yml").read_text()
    moved = config.replace("\ndocs_dir: docs\n", f"\ndocs_dir: {docs}\n")
    moved = moved.replace("paths: [workflow]", f"paths: [{REPO / 'workflow'}]")
    assert moved.count(str(docs)) == 1 and moved.count(str(REPO / "workflow")) == 1
    (tmp_path / "mkdocs.yml").write_text(moved)
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    target = link.split("(")[1].rstrip(")")
    assert "index.md" in out and target.split("#")[-1] in out, out


def test_the_make_commands_the_docs_name_exist():
    """README.md and docs/ name only targets the Makefile has (`make report` included)."""
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {(page.name, m) for page in pages for m in re.findall(r"(?:^|`)make ([a-z][\w-]*)", page.read_text(), re.M)}
    assert {"reproduce", "report", "test", "docs"} <= {m for _, m in named}
    assert {(page, m) for page, m in named if m not in targets} == set()


def test_the_readme_says_what_each_command_needs():
    """Outside the generated study block: `make reproduce` needs the datasets (or their air-gapped staging)."""
    readme = (REPO / "README.md").read_text()
    start, end = readme.index("<!-- study:begin -->"), readme.index("<!-- study:end -->")
    own = readme[:start] + readme[end:]
    commands = re.search(r"```bash\n(.*?)```", own, flags=re.S).group(1)
    after = own.split(commands, 1)[1].split("\n## ", 1)[0]
    for command in re.findall(r"^make (\w+)", commands, flags=re.M):
        assert f"make {command}" in after, command  # each command of the block is explained below it
    assert "download: false" in after and "docs/usage.md#the-datasets" in after
    assert "need only Python 3.11+ and network access to PyPI" not in own


def test_the_benchmark_records_the_docs_cite_are_committed():
    """Every `benchmarks/records/...` path a page names is in the repository and tracked by git (not in an
    ignored folder, as the scratch benchmarks/results/ is), so the number beside it can be checked."""
    pages = [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("benchmarks/*.md")]
    cited = {m for p in pages for m in re.findall(r"benchmarks/records/[\w.-]+(?:/[\w.-]+)*", p.read_text())}
    cited = {c for c in cited if "DATE" not in c}  # the folder a new GPU check is told to write
    assert cited, "no record cited: the pattern no longer matches the pages"
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks/records"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    for path in sorted(cited):
        assert any(t == path or t.startswith(path.rstrip("/") + "/") for t in tracked), f"{path}: not committed"
