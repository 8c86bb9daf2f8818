"""The examples of docs/assess.md cannot drift: the command's example output is what the command, run as the page
writes it, prints now, and every example says what it needs installed beyond `pip install trustcal`.

When the summary changes on purpose, regenerate the page's example output from a run:

    TRUSTCAL_REGENERATE_DOCS=1 .venv/bin/python -m pytest tests/cli/test_doc_examples.py -k output

(the test then rewrites the block in docs/assess.md, keeping the first two epochs and the last, and fails
once, so that the change is seen; review the diff).
"""

import ast
import os
import re
import shlex
import subprocess
import sys

import pytest
from helpers.shared import SHARED
from helpers.workflow import REPO

PAGE = REPO / "docs" / "assess.md"

# What a block needs beyond the light install, and the words its paragraph must use to say so.
EXTRA_CALIBRATORS = ("vector", "matrix", "dirichlet", "isotonic")  # scipy / scikit-learn: [calibration]


def page() -> str:
    return PAGE.read_text()


def blocks(text: str, lang: str) -> list[tuple[str, str]]:
    """(the prose before it, the block) of each ```lang block of the page."""
    found = []
    for m in re.finditer(rf"```{lang}\n(.*?)```", text, flags=re.S):
        before = text[: m.start()].rstrip()
        paragraph = re.split(r"\n\s*\n", before)[-1]
        found.append((paragraph, m.group(1)))
    return found


def needs(code: str) -> set[str]:
    """What a Python block needs beyond `pip install trustcal`: scikit-learn, trustcal[calibration], …"""
    tree = ast.parse(code)
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    found = set()
    if "sklearn" in imported:
        found.add("scikit-learn")
    if strings & set(EXTRA_CALIBRATORS):
        found.add("trustcal[calibration]")
    if "pyarrow" in imported or any(s.endswith((".parquet", ".feather")) for s in strings):
        found.add("trustcal[parquet]")
    return found


def test_every_python_example_says_what_it_needs():
    found = blocks(page(), "python")
    assert found
    said = set()
    for paragraph, code in found:
        for need in needs(code) - said:
            assert need in paragraph, f"the paragraph before this example does not say it needs {need}:\n{code}"
        said |= needs(code)  # said once for the examples that follow (the page builds on its first example)
    assert {"scikit-learn", "trustcal[calibration]"} <= said


def test_the_output_section_names_every_table():
    import numpy as np

    import trustcal

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 200)
    logits = rng.normal(size=(200, 3)) + 2 * np.eye(3)[labels]
    tables = trustcal.assess(logits, labels, kind="logits", validation=(logits, labels), bootstrap=0).tables
    section = page().split("\n## Output\n", 1)[1].split("\n## ", 1)[0]
    assert len(tables) >= 10
    for name in tables:
        assert f"`{name}.csv`" in section, name


# ----- the command's example output


def example() -> tuple[list[str], list[str]]:
    """The page's first command (its arguments after `trustcal`) and the output shown below it."""
    text = page()
    command = blocks(text, "bash")[0][1].splitlines()[0].split("#")[0]
    args = shlex.split(command)
    assert args[0].endswith("trustcal") and args[1] == "assess", command
    shown = re.search(r"```bash\n.*?```\n\n```\n(.*?)```", text, flags=re.S).group(1)
    return args[1:], shown.rstrip("\n").splitlines()


def matches(shown: list[str], actual: list[str]) -> bool:
    """``actual`` as ``shown`` abridges it: a line "  …" stands for one or more lines of the epoch table."""
    pattern = "".join(r"(?:[ \t]+\d+ [^\n]*\n)+" if line.strip() == "…" else re.escape(line) + "\n" for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def abridge(actual: list[str]) -> list[str]:
    """A run's output as the page shows it: the epoch table's first two rows, "  …" and its last row."""
    rows = [i for i, line in enumerate(actual) if re.match(r"\s+\d+ ", line)]
    if len(rows) <= 4:
        return actual
    return actual[: rows[2]] + ["  …"] + actual[rows[-1] :]


def test_matches_and_abridge():
    actual = ["head", "    1  a", "    2  b", "    3  c", "   10  d", "  100  e", "", "tail"]
    assert abridge(actual) == ["head", "    1  a", "    2  b", "  …", "  100  e", "", "tail"]
    assert matches(abridge(actual), actual)
    assert not matches(abridge(actual), actual[:-1] + ["other tail"])
    assert not matches(["head", "  …", "tail"], ["head", "tail"])


@pytest.mark.slow
def test_the_command_example_output_is_what_the_command_prints(tmp_path):
    """Run as the page writes it, from the repository's root with ../shared beside it (a copy of that layout)."""
    if not (SHARED / "reference" / "author-predictions" / "MNIST_PRED").is_dir():
        pytest.skip(f"the author's predictions are not in {SHARED} (the shared folder beside the repository)")
    args, shown = example()
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "shared").symlink_to(SHARED.resolve())
    done = subprocess.run(
        [sys.executable, "-m", "trustcal", *args], cwd=root, capture_output=True, text=True, timeout=3600
    )
    assert done.returncode == 0, done.stderr
    actual = done.stdout.rstrip("\n").splitlines()
    if os.environ.get("TRUSTCAL_REGENERATE_DOCS") and not matches(shown, actual):
        text = page()
        old = "```\n" + "\n".join(shown) + "\n```"
        assert text.count(old) == 1
        PAGE.write_text(text.replace(old, "```\n" + "\n".join(abridge(actual)) + "\n```"))
        pytest.fail("docs/assess.md: the example output was regenerated from this run; review the diff")
    assert matches(shown, actual), "the page shows:\n" + "\n".join(shown) + "\n\nthe command prints:\n" + done.stdout
