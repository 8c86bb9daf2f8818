"""A run's network is checked when the configuration is read, not by its train job after the download and the
preparation: a torchvision:NAME that torchvision does not have, a package.module:Class that leads to no nn.Module
class; and a tab in a YAML file named by its line and column."""

import pytest
import torchvision
import yaml
from helpers.training import forget_user_package, write_user_module
from helpers.workflow import REPO

from trustcal.config import ConfigError, check_yaml_syntax, validate_config
from trustcal.registry import did_you_mean


@pytest.fixture
def paper():
    return yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """``write(module, source)``: tmp_path/mynets/<module>.py, importable as mynets.<module> for this test."""
    forget_user_package()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda module, source: write_user_module(tmp_path, module, source)
    forget_user_package()


def with_network(paper, network, **config):
    return {
        **paper,
        "datasets": ["mnist", "mine"],
        "setups": {"mine": {"dataset": "mnist", "network": network}},
        **config,
    }


def problems(config, **kwargs):
    with pytest.raises(ConfigError) as err:
        validate_config(config, **kwargs)
    lines = str(err.value).splitlines()
    assert lines[0] == "invalid configuration:", lines
    return [line.strip() for line in lines[1:]]


NET = """
from torch import nn

class Net(nn.Sequential):
    def __init__(self, in_shape, num_classes):
        super().__init__(nn.Flatten(), nn.LazyLinear(num_classes))

def helper():
    return None
"""


def test_did_you_mean_names_the_closest_choice_or_nothing():
    assert did_you_mean("resnet1B", ["alexnet", "resnet18", "resnet34"]) == " (did you mean 'resnet18'?)"
    assert did_you_mean("zzz", ["alexnet", "resnet18"]) == ""
    assert did_you_mean("Nte", []) == ""


def test_a_torchvision_network_torchvision_does_not_have_stops_the_config_check(paper):
    available = torchvision.models.list_models(module=torchvision.models)
    assert problems(with_network(paper, "torchvision:resnet1B")) == [
        "config.yaml: setups: mine: network 'torchvision:resnet1B': torchvision "
        f"{torchvision.__version__} has no classification network 'resnet1B' (did you mean 'resnet18'?). "
        f"Fix: name one of its classification networks: {', '.join(available)}"
    ]
    validate_config(with_network(paper, "torchvision:resnet18"))  # one it has: no problem


def test_torchvisions_networks_are_read_from_its_sources_as_it_lists_them():
    """The check knows torchvision's classification networks without importing it (which takes seconds)."""
    from trustcal.config import _torchvision_builders

    assert _torchvision_builders() == set(torchvision.models.list_models(module=torchvision.models))


def test_a_valid_torchvision_network_is_checked_without_importing_torch(paper, tmp_path):
    """The check of a name torchvision registers costs no import of torch or torchvision."""
    import subprocess
    import sys

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(with_network(paper, "torchvision:resnet18")))
    script = (
        "import sys, yaml; from trustcal.config import validate_config; "
        "validate_config(yaml.safe_load(open('config.yaml'))); "
        "print(sorted(m for m in ('torch', 'torchvision') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO / "workflow"), "PATH": ""},
    )
    assert (proc.returncode, proc.stdout) == (0, "[]\n"), proc.stderr


def test_the_message_names_the_layer_that_set_the_network(paper):
    config = with_network(paper, "torchvision:resnet1B")
    sources = [("config.yaml", paper), ("--configfile mine.yaml", {"setups": config["setups"]})]
    [line] = problems(config, sources=sources)
    assert line.startswith("--configfile mine.yaml: setups: mine: network 'torchvision:resnet1B': "), line


def test_an_import_path_to_a_class_the_module_lacks_says_which_it_has(paper, user_modules, tmp_path):
    user_modules("nets", NET)
    assert problems(with_network(paper, "mynets.nets:Nett")) == [
        f"config.yaml: setups: mine: network 'mynets.nets:Nett': module mynets.nets ({tmp_path / 'mynets' / 'nets.py'}) "
        "has no Nett (did you mean 'Net'?) (its nn.Module classes: Net); fix the import path (package.module:Class)"
    ]
    validate_config(with_network(paper, "mynets.nets:Net"))  # the class itself: no problem


def test_an_import_path_to_no_module_or_no_nn_module_class_stops_the_config_check(paper, user_modules):
    user_modules("nets", NET)
    assert problems(with_network(paper, "mynets.nowhere:Net")) == [
        "config.yaml: setups: mine: network 'mynets.nowhere:Net': no module mynets.nowhere on Python's path; put "
        "the folder holding mynets/ on PYTHONPATH (or install the package), or fix the import path "
        "(package.module:Class)"
    ]
    assert problems(with_network(paper, "mynets.nets:helper")) == [
        "config.yaml: setups: mine: network 'mynets.nets:helper': helper in mynets.nets is a function, not an "
        "nn.Module class; name a subclass of torch.nn.Module built as Class(in_shape=(C, H, W), num_classes=K, "
        "**network_kwargs)"
    ]


def test_each_run_naming_a_bad_network_gets_its_line(paper):
    config = {
        **paper,
        "datasets": ["mnist", "one", "two"],
        "setups": {
            "one": {"dataset": "mnist", "network": "torchvision:alexnett"},
            "two": {"dataset": "cifar10", "network": "torchvision:alexnett"},
        },
    }
    lines = problems(config)
    assert [line.split(" network ")[0] for line in lines] == ["config.yaml: setups: one:", "config.yaml: setups: two:"]
    assert all("has no classification network 'alexnett' (did you mean 'alexnet'?)" in line for line in lines)


def test_a_tab_in_a_yaml_file_is_named_with_its_line_and_column(tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text("epochs: 3\nseeds:\n\t- 0\n")
    with pytest.raises(ConfigError) as err:
        check_yaml_syntax(bad)
    assert str(err.value) == (
        f"{bad}: not valid YAML at line 3, column 1: a tab character, which YAML does not accept in indentation "
        "or between a key and its value; fix the syntax there: replace the tab with spaces"
    )
