"""The registry (trustcal.registry): every per-dataset and per-network fact in one place, and nowhere else."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from trustcal import registry
from trustcal.registry import DATASETS, NETWORKS, RegistryError, resolve_setup

REPO = Path(__file__).resolve().parents[2]
NAMES = set(DATASETS) | set(NETWORKS)


def _code_files() -> list[Path]:
    """The package, the rules and the scripts: where a dataset or network name must not be written."""
    workflow = REPO / "workflow"
    files = [*workflow.glob("trustcal/**/*.py"), *workflow.glob("scripts/*.py"), *workflow.glob("rules/*.smk")]
    files += [REPO / "Snakefile", workflow / "Snakefile"]
    return [f for f in files if f.is_file() and f.name != "registry.py"]


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, value) of each plain string literal of a Python or Snakemake file (f-strings' literal parts too)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                out.append((tok.start[0], value))
        elif tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            out.append((tok.start[0], tok.string))
    return out


def test_no_dataset_or_network_name_is_written_outside_the_registry():
    """A string literal equal to a registered dataset or network name, anywhere in the package, the rules or
    the scripts, is a per-dataset fact kept outside the registry. (The configuration, the claims files and
    the docs name them; they are not scanned.)"""
    found = [
        f"{path.relative_to(REPO)}:{line}: {value!r}"
        for path in _code_files()
        for line, value in _string_literals(path)
        if value in NAMES
    ]
    assert not found, "\n".join(found)


def test_the_literal_scan_finds_a_name_where_one_is_written(tmp_path):
    """The scan above is not blind: a file that writes a registered name as a literal is caught, in plain and
    in f-strings alike."""
    path = tmp_path / "x.py"
    path.write_text('A = {"mnist": 1}\nB = f"{A}"\nC = "cifar10"\n')
    assert [v for _, v in _string_literals(path) if v in NAMES] == ["mnist", "cifar10"]


def test_every_registered_dataset_is_complete_and_its_default_network_registered():
    for name, spec in DATASETS.items():
        assert spec.name == name and spec.kind in registry.DATASET_KINDS and spec.kind not in registry.USER_KINDS
        assert spec.shape and spec.shape[0] in (1, 3) and spec.torchvision
        assert len(spec.classes) == len(set(spec.classes)) >= 10, name
        assert spec.network in NETWORKS
        assert resolve_setup(name).is_paper == (spec.paper is not None)
    assert len(DATASETS["cifar100"].classes) == 100 and registry.PAPER_DATASETS == ("mnist", "cifar10")


def test_the_registered_class_names_are_torchvisions():
    """Where torchvision's dataset class carries its class names, the registry's are the same, in label order."""
    import torchvision.datasets as tvd

    for name, spec in DATASETS.items():
        known = getattr(getattr(tvd, spec.torchvision), "classes", None)
        if isinstance(known, list):
            names = [c.split(" - ")[0] for c in known]  # MNIST's "0 - zero"
            assert list(spec.classes) == names, name


def test_the_paper_setups_and_their_titles():
    assert resolve_setup("mnist").title == "MNIST (MLP)" and resolve_setup("cifar10").title == "CIFAR-10 (CNN)"
    mine = resolve_setup("m", {"m": {"dataset": "cifar10", "recipe": {"optimizer": "sgd"}}})
    assert not mine.is_paper  # the paper's network, another recipe
    assert resolve_setup("m", {"m": {"dataset": "cifar10"}}).is_paper  # the paper's setup under another name
    assert resolve_setup("n", {"n": {"dataset": "fashion_mnist"}}).title == "Fashion-MNIST (MLP)"


@pytest.mark.parametrize(
    "network,ok",
    [
        ("resnet20", True),
        ("torchvision:resnet18", True),
        ("mypkg.nets:Net", True),
        ("torchvision:", False),
        ("resnet-20", False),
        ("mypkg.nets", False),
        ("a b:C", False),
    ],
)
def test_a_network_is_a_registered_name_a_torchvision_name_or_an_import_path(network, ok):
    assert (registry.network_problem(network) is None) == ok


def test_a_setup_cannot_take_a_registered_datasets_name():
    """The run called cifar10 is the one the paper's CIFAR-10 claims are judged on: a setup of another network
    under that name would have them judged on it."""
    with pytest.raises(RegistryError, match="give this setup a name of its own"):
        resolve_setup("cifar10", {"cifar10": {"network": "resnet20"}})
