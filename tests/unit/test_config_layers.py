"""Where each configuration value came from, told from what Snakemake shows a workflow (its public interface):
the workflow's config files, the --configfile files and the configuration as the workflow starts, and the
command line's --config (trustcal.config.config_layers)."""

import pytest
import yaml

from trustcal.config import (
    ConfigError,
    command_line_config,
    config_layers,
    config_source,
    option_values,
    validate_config,
)


def test_option_values_are_the_arguments_after_the_option_up_to_the_next():
    args = ["--cores", "2", "--configfile", "a.yaml", "b.yaml", "-n", "--config", "epochs=3", "x=1", "target"]
    assert option_values(args, ("--configfile", "--configfiles")) == ["a.yaml", "b.yaml"]
    assert option_values(args, ("--config", "-C")) == ["epochs=3", "x=1", "target"]  # Snakemake's nargs="*" too
    assert option_values(["--config=epochs=3", "-C", "seeds=[0]"], ("--config", "-C")) == ["epochs=3", "seeds=[0]"]
    assert option_values(["--configfiles=a.yaml", "b.yaml"], ("--configfiles",)) == ["a.yaml"]


def test_command_line_config_keeps_the_structure_of_each_key():
    layer = command_line_config(
        [
            "--config",
            "epochs=0",
            "calibration={methods: [vector], t_min: 0.05}",
            "seeds=[0, 1]",
            "calibration={'t_max': 3}",  # a cluster job's command line repeats --config as Python literals
            "epochs=2",  # the last one wins
            "notakey",  # Snakemake refuses it in its own words
        ]
    )
    assert layer == {
        "epochs": "2",
        "calibration": {"methods": ["vector"], "t_min": "0.05", "t_max": "3"},
        "seeds": ["0", "1"],
    }


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_layers_of_the_main_workflow(tmp_path, monkeypatch):
    """As the main workflow starts, Snakemake has merged the --configfile files and --config (its API and a
    profile's config: included) into `config`: what that sets beyond the files is --config's, and so is a key
    the command line sets with --config to the value a file gives it."""
    monkeypatch.chdir(tmp_path)
    main = write(tmp_path / "config.yaml", {"epochs": 3, "calibration": {"t_min": 0.05, "t_max": 10.0}})
    mine = write(tmp_path / "mine.yaml", {"epochs": 0, "datasets": ["mnist"], "calibration": {"t_max": 20.0}})
    command_line = {"epochs": 0, "datasets": ["mnist"], "calibration": {"t_max": 20.0, "t_min": 1.0}, "clusters": 5}
    args = ["--cores", "1", "--configfile", str(mine), "--config", "epochs=0", "bogus=1"]
    layers = config_layers([main.name], [mine.resolve()], args, command_line=command_line)
    assert [name for name, _ in layers] == ["config.yaml", "--configfile mine.yaml", "--config"]
    assert layers[-1][1] == {"epochs": "0", "calibration": {"t_min": 1.0}, "clusters": 5}  # no bogus: not set
    assert config_source(layers, ("epochs",)) == "--config"  # the value mine.yaml gives, set again by --config
    assert config_source(layers, ("datasets",)) == "--configfile mine.yaml"
    assert config_source(layers, ("calibration", "t_max")) == "--configfile mine.yaml"
    assert config_source(layers, ("calibration", "t_min")) == "--config"  # the API's, or a profile's
    assert config_source(layers, ("clusters",)) == "--config"
    assert config_source(layers, ("bootstrap",)) == "config.yaml"  # no layer: the default name


def test_the_layers_of_an_imported_workflow(tmp_path, monkeypatch):
    """Imported, the workflow's configuration is its importer's: --config is what the command line sets."""
    monkeypatch.chdir(tmp_path)
    theirs = write(tmp_path / "theirs.yaml", {"epochs": 3})
    config = {"epochs": "0", "datasets": ["mnist"]}
    layers = config_layers([theirs.name], [], ["--config", "epochs=0", "seed_batching=true"], config=config)
    assert layers == [("theirs.yaml", {"epochs": 3}), ("--config", {"epochs": "0"})]


def test_a_problem_names_the_layer_of_the_main_workflow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = write(tmp_path / "config.yaml", {"epochs": 3})
    bad = write(tmp_path / "bad.yaml", {"epochs": 0})
    for args, command_line, name in (
        (["--configfile", "bad.yaml"], {"epochs": 0}, "--configfile bad.yaml"),
        (["--configfile", "bad.yaml", "--config", "epochs=0"], {"epochs": 0}, "--config"),
        (["--config", "epochs=2", "epochs=0"], {"epochs": 0}, "--config"),
    ):
        files = [bad.resolve()] if "bad.yaml" in args else []
        layers = config_layers([main.name], files, args, command_line=command_line)
        with pytest.raises(ConfigError) as caught:
            validate_config({"epochs": 0}, sources=layers)
        assert f"{name}: key 'epochs' is 0; it must be ≥ 1" in str(caught.value), args


def test_the_configuration_in_one_line_and_the_warning_before_replacing_another_verdict(tmp_path):
    from trustcal.config import configuration_name, replaced_verdict

    layers = [
        (str(tmp_path / "config.yaml"), {"epochs": 100}),
        ("--configfile tiny.yaml", {"epochs": 3}),
        ("--config", {"epochs": 2, "datasets": ["mnist"]}),
    ]
    import os

    rel = os.path.relpath(tmp_path / "config.yaml")
    name = configuration_name(layers)
    assert name == f'{rel} + --configfile tiny.yaml + --config epochs=2 datasets=["mnist"]'
    assert configuration_name(layers[:2] + [("--config", {})]) == f"{rel} + --configfile tiny.yaml"
    verdict = tmp_path / "reproduction.md"
    assert replaced_verdict(verdict, name) is None  # no verdict yet
    verdict.write_text(f"# Reproduction verdict\n\n- Run: …\n- Configuration: {name}.\n")
    assert replaced_verdict(verdict, name) is None  # this configuration's own
    warning = replaced_verdict(verdict, "config.yaml + --configfile other.yaml")
    assert warning.startswith(f"{verdict} is the verdict of another configuration ({name});")
    assert "--directory runs/<name>" in warning
