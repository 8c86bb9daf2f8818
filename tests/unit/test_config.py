"""Configuration checking: defaults, readable errors, the shipped config is the paper's."""

import pytest
import yaml
from helpers.workflow import REPO

from trustcal.config import ConfigError, validate_config


@pytest.fixture
def paper():
    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_shipped_config_is_the_papers_setup(paper):
    cfg = validate_config(paper)
    assert cfg["datasets"] == ["mnist", "cifar10"] and cfg["epochs"] == 100 and cfg["batch_size"] == 32
    assert cfg["seeds"] == [0] and cfg["clusters"] == 10 and cfg["learning_rate"] == 0.001
    assert {
        k: cfg["trust"][k]
        for k in ("weight", "alpha", "beta", "base_rate", "representative", "cluster_fusion", "class_fusion")
    } == dict(
        weight=2.0,
        alpha=1.0,
        beta=1.0,
        base_rate=0.5,
        representative="midpoint",
        cluster_fusion="cumulative",
        class_fusion="cumulative",
    )
    assert cfg["calibration"]["fit_on"] == "validation"


def test_every_key_of_the_shipped_config_is_commented():
    for line in (REPO / "config.yaml").read_text().splitlines():
        if line and not line.lstrip().startswith("#") and ":" in line and not line.rstrip().endswith(":"):
            assert "#" in line, f"uncommented key: {line}"


def test_defaults_are_filled_and_scalars_become_lists():
    cfg = validate_config({"datasets": "mnist", "data_dir": "d", "epochs": 2, "seeds": 1})
    assert cfg["datasets"] == ["mnist"] and cfg["seeds"] == [1]
    assert cfg["trust"]["weight"] == 2.0 and cfg["calibration"]["t_max"] == 100.0


@pytest.mark.parametrize(
    "override,message",
    [
        ({"datasets": ["imagenet"]}, "datasets: 'imagenet' is neither a registered dataset (mnist, fashion_mnist"),
        ({"datasets": ["../x"]}, "key 'datasets.0' is '../x'"),
        (
            {"seeds": {"mnist": [0], "cifar10": [0], "cifar": [1]}},
            "key 'seeds' has an entry for 'cifar', which is no registered dataset",
        ),
        ({"epochs": 0}, "key 'epochs' is 0; it must be ≥ 1"),
        ({"clusters": -1}, "key 'clusters' is -1; it must be ≥ 1"),
        ({"epohcs": 3}, "unknown key 'epohcs' (did you mean 'epochs'?)"),
        ({"trust": {"wieght": 3}}, "unknown key 'wieght' (did you mean 'weight'?) in 'trust'"),
        ({"device": "gpu"}, "key 'device' is 'gpu'; allowed: auto, cpu, cuda or cuda:N"),
        ({"calibration": {"fit_on": "train"}}, "allowed values: validation, test"),
        ({"calibration": {"t_min": 5, "t_max": 1}}, "t_min must be smaller than calibration.t_max"),
        ({"seeds": ["a"]}, "key 'seeds.0' is 'a'; it must be of type integer"),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(paper, override, message):
    with pytest.raises(ConfigError) as err:
        validate_config({**paper, **override})
    assert message in str(err.value)


def test_every_key_has_the_papers_value_as_default(paper):
    """A workflow importing this one as a module sets only the keys it changes."""
    assert validate_config({}) == validate_config(paper)
    cfg = validate_config({"epochs": 3})
    assert cfg["epochs"] == 3 and cfg["datasets"] == ["mnist", "cifar10"] and cfg["seeds"] == [0]
    assert cfg["data_dir"] == "data"


def test_seeds_and_checksums_per_dataset(paper):
    study = yaml.safe_load((REPO / "workflow" / "study" / "config.yaml").read_text())
    cfg = validate_config({**paper, **study})
    assert cfg["seeds"] == {"mnist": [0, 1, 2, 3, 4], "cifar10": [0, 1, 2]}
    assert cfg["verify_checksums"] == {"mnist": True, "cifar10": False, "fashion_mnist": False}
    from trustcal.config import per_dataset

    assert per_dataset(cfg, "seeds", "cifar10") == [0, 1, 2] and per_dataset(paper, "seeds", "mnist") == [0]
    # from the command line, as strings
    cfg = validate_config(
        {
            **paper,
            "seeds": {"mnist": ["0", "1"], "cifar10": ["2"]},
            "verify_checksums": {"mnist": "true", "cifar10": "false"},
        }
    )
    assert cfg["seeds"] == {"mnist": [0, 1], "cifar10": [2]} and cfg["verify_checksums"]["cifar10"] is False


@pytest.mark.parametrize(
    "override, message",
    [
        ({"seeds": {"mnist": [0]}}, "key 'seeds' is given per dataset but has no entry for 'cifar10'"),
        ({"seeds": {"mnist": [0], "cifar10": [1]}, "seed_batching": True}, "seed_batching: true trains the same seeds"),
        ({"verify_checksums": {"mnist": True}}, "key 'verify_checksums' is given per dataset but has no entry"),
    ],
)
def test_per_dataset_mistakes_are_named(paper, override, message):
    with pytest.raises(ConfigError, match=message):
        validate_config({**paper, **override})


def test_the_schema_defaults_are_the_librarys_defaults():
    """The workflow's defaults (the schema) and the Python API's (trustcal assess, trustcal.assess) agree."""
    from dataclasses import asdict

    from trustcal.calibration import T_MAX, T_MIN
    from trustcal.evaluation import MetricParams
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams

    cfg = validate_config({})
    assert (cfg["calibration"]["t_min"], cfg["calibration"]["t_max"]) == (T_MIN, T_MAX)
    trust = asdict(TrustParams())
    assert cfg["clusters"] == trust.pop("clusters")
    assert {k: cfg["trust"][k] for k in trust} == trust
    metrics = asdict(MetricParams())
    assert {k: cfg["metrics"][k] for k in metrics} == {
        k: list(v) if isinstance(v, tuple) else v for k, v in metrics.items()
    }
    boot = asdict(BootstrapParams())
    assert {k: cfg["bootstrap"][k] for k in boot} == boot


def test_the_settings_of_the_schemas_defaults_are_the_librarys_defaults():
    """Settings.from_config on the schema's defaults is Settings() (trustcal.assess's and trustcal assess's),
    but for the calibrators: the workflow's are temperature scaling and calibration.methods, where possible."""
    from dataclasses import replace

    from trustcal.settings import CalibrationSettings, Settings

    got = Settings.from_config(validate_config({}))
    assert replace(got, calibration=Settings().calibration) == Settings()
    assert got.calibration == CalibrationSettings(methods=("temperature",), required=False)


def test_settings_from_config_read_every_key_and_keep_the_defaults_of_the_others(paper):
    from trustcal.evaluation import MetricParams, SweepParams
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.settings import CalibrationSettings, Settings

    trust = {**paper["trust"], "weight": 3.0, "clusters_sweep": [3, 4], "sweep_epochs": [2]}
    cfg = validate_config(
        {
            **paper,
            "clusters": 7,
            "trust": trust,
            "metrics": {"ece_bins": [5], "l2_bins": 4},
            "bootstrap": {"resamples": 9},
            "calibration": {"methods": ["isotonic", "temperature", "vector"], "t_min": 0.5, "t_max": 2.0},
        }
    )
    s = Settings.from_config(cfg)
    assert s.trust == TrustParams(clusters=7, weight=3.0)
    assert s.sweep == SweepParams(clusters=(3, 4), epochs=(2,))
    assert s.metrics == MetricParams(ece_bins=(5,), l2_bins=4)
    assert s.bootstrap == BootstrapParams(resamples=9)
    assert s.calibration == CalibrationSettings(("temperature", "isotonic", "vector"), 0.5, 2.0, required=False)
    # a rule passes only the keys its job reads (settings_config in common.smk): the others keep their defaults
    part = Settings.from_config({"metrics": cfg["metrics"], "bootstrap": cfg["bootstrap"]})
    assert (part.metrics, part.bootstrap) == (s.metrics, s.bootstrap)
    assert (part.trust, part.sweep, part.calibration) == (TrustParams(), SweepParams(), CalibrationSettings())
    assert Settings.from_config({"clusters": 7, "trust": trust}).trust == s.trust


# Where a value came from: the workflow's config file, a --configfile, --config (Snakemake's order).
LAYERS = [
    ("config.yaml", {"epochs": 3, "calibration": {"t_min": 0.05}}),
    ("--configfile mine.yaml", {"datasets": ["mnist"], "seeds": {"mnist": [0]}}),
    ("--config", {"epochs": "0", "calibration": {"t_max": 0.01}, "epochz": 3}),
]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"epochs": "0"}, "--config: key 'epochs' is 0; it must be ≥ 1"),
        ({"epochz": 3}, "--config: unknown key 'epochz' (did you mean 'epochs'?)"),
        ({"calibration": {"t_min": 0.05, "t_max": 0.01}}, "--config: calibration.t_min must be smaller"),
        ({"datasets": ["mnist", "cifar10"], "seeds": {"mnist": [0]}}, "--configfile mine.yaml: key 'seeds' is given"),
        ({"batch_size": 0}, "config.yaml: key 'batch_size' is 0"),  # set by no layer: the default name
    ],
)
def test_a_problem_names_the_layer_its_value_came_from(override, message):
    with pytest.raises(ConfigError) as caught:
        validate_config(override, sources=LAYERS)
    assert message in str(caught.value)


def test_config_source_is_the_last_layer_that_sets_the_key():
    from trustcal.config import config_source

    assert config_source(LAYERS, ("epochs",)) == "--config"
    assert config_source(LAYERS, ("calibration", "t_min")) == "config.yaml"
    assert config_source(LAYERS, ("seeds", "mnist", 0)) == "--configfile mine.yaml"  # inside a value it sets
    assert config_source(LAYERS, ("bootstrap", "samples")) == "config.yaml"  # no layer: the default
    assert config_source(LAYERS, ("bootstrap",), default="the schema") == "the schema"
    assert config_source(None, ("epochs",)) == "config.yaml"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "source"),
    [
        (["--config", "epochs=0"], "--config"),
        (["--configfile", "bad.yaml"], "--configfile bad.yaml"),
        (["--configfile", "bad.yaml", "--config", "epochs=0"], "--config"),
        (["--config", "epochs=2", "epochs=0"], "--config"),
    ],
    ids=["--config", "--configfile", "both", "the last --config"],
)
def test_the_workflow_names_where_a_bad_value_came_from(tmp_path, args, source):
    """Snakemake merges the workflow's config.yaml, --configfile and --config; the error names the one that set
    the value (config.yaml here is the tiny configuration, which is valid)."""
    import subprocess
    import sys

    (tmp_path / "config.yaml").write_text((REPO / "tests" / "tiny.yaml").read_text())
    (tmp_path / "bad.yaml").write_text("epochs: 0\n")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--dry-run", "--cores", "1"]
    proc = subprocess.run([*cmd, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{source}: key 'epochs' is 0; it must be ≥ 1" in out, out
    assert "config.yaml: key 'epochs'" not in out, out


def test_claims_files_are_checked_before_any_job(paper, tmp_path):
    """A claims file that is not there, and two whose names would write the same results/claims/ files,
    stop the run at the config check, each in one line naming the file and the fix."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("claims: []\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.yaml").write_text("claims: []\n")
    assert validate_config({**paper, "claims": [str(mine)]})["claims"] == [str(mine)]
    with pytest.raises(ConfigError, match=r"claims: .*gone\.yaml is not a file .*fix the path"):
        validate_config({**paper, "claims": [str(tmp_path / "gone.yaml")]})
    with pytest.raises(ConfigError, match=r"would both write results/claims/mine\.\*; rename one"):
        validate_config({**paper, "claims": [str(mine), str(tmp_path / "other" / "mine.yaml")]})


# --------------------------------------------------------------------------- integer settings and their bounds


@pytest.mark.parametrize(
    "override, message",
    [
        # JSON Schema counts 3.0 and 1e9 as integers; they reached range() as floats (a TypeError)
        ({"epochs": 3.0}, "key 'epochs' is 3.0; it must be a whole number from 1 to 10000"),
        ({"epochs": 1e9}, "key 'epochs' is 1000000000.0; it must be a whole number from 1 to 10000"),
        # allocated 7.45 GiB in the scores job
        ({"metrics": {"ece_bins": [1000000000]}}, "key 'metrics.ece_bins.0' is 1000000000; it must be ≤ 10000: "),
        ({"bootstrap": {"resamples": 10**6}}, "key 'bootstrap.resamples' is 1000000; it must be ≤ 10000: "),
        ({"seeds": [0, 2.0]}, "key 'seeds.1' is 2.0; it must be a whole number from 0 to 4294967295"),
    ],
    ids=["epochs 3.0", "epochs 1e9", "ece_bins 1e9", "resamples 1e6", "seed 2.0"],
)
def test_integer_settings_are_whole_numbers_within_what_they_cost(paper, override, message):
    with pytest.raises(ConfigError) as err:
        validate_config({**paper, **override})
    problems = str(err.value).splitlines()[1:]
    assert len(problems) == 1 and message in problems[0], problems


def test_the_schemas_bounds_are_the_librarys():
    """The schema's maxima are trustcal.measures.limits', which the command line and the settings check."""
    from trustcal.evaluation import MetricParams
    from trustcal.measures import limits

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    props, metrics = schema["properties"], schema["properties"]["metrics"]["properties"]
    assert props["epochs"]["maximum"] == props["trust"]["properties"]["sweep_epochs"]["items"]["maximum"]
    assert props["epochs"]["maximum"] == limits.MAX_EPOCHS
    assert props["clusters"]["maximum"] == props["trust"]["properties"]["clusters_sweep"]["items"]["maximum"]
    assert props["clusters"]["maximum"] == limits.MAX_CLUSTERS
    assert props["bootstrap"]["properties"]["resamples"]["maximum"] == limits.MAX_RESAMPLES
    assert props["bootstrap"]["properties"]["seed"]["maximum"] == limits.MAX_SEED
    assert schema["$defs"]["seed_list"]["items"]["maximum"] == limits.MAX_SEED
    assert metrics["ece_bins"]["items"]["maximum"] == limits.MAX_BINS
    for key in ("geo_bins", "reliability_bins", "l2_bins"):
        assert metrics[key]["maximum"] == limits.MAX_BINS, key
    for key in ("density_points", "smooth_points"):
        assert metrics[key]["maximum"] == limits.MAX_POINTS, key
    assert metrics["refinement_folds"]["maximum"] == limits.MAX_FOLDS
    # every bounded key says why in its description, and the library refuses the same values
    for key, sub in {**props, **metrics}.items():
        bounded = sub.get("items", sub)
        if "maximum" in bounded and bounded.get("type") == "integer":
            assert bounded.get("description", "").startswith("at most"), key
    with pytest.raises(ValueError, match=r"ece_bins must be ≤ 10000 \(got 1000000000\): "):
        MetricParams(ece_bins=(10, 10**9))
    with pytest.raises(ValueError, match=r"density_points must be a whole number from 2 to 1000 \(got 51\.0\)"):
        MetricParams(density_points=51.0)


# --------------------------------------------------------------------------- YAML files


def test_a_config_file_that_is_not_yaml_is_named_with_its_line_and_column(tmp_path):
    from trustcal.config import check_yaml_syntax

    bad = tmp_path / "config.yaml"
    bad.write_text("epochs: 3\nseeds: [0, 1\ndatasets: [mnist]\n")
    with pytest.raises(ConfigError) as err:
        check_yaml_syntax(bad)
    message = str(err.value)
    assert message.startswith(f"{bad}: not valid YAML at line 3, column 9: ") and "fix the syntax" in message
    assert "\n" not in message
    (tmp_path / "good.json").write_text('{"epochs":\t3}')  # JSON that YAML would refuse (a tab): Snakemake reads it
    check_yaml_syntax(tmp_path / "good.json")


def test_a_claims_file_that_is_not_yaml_stops_the_run_at_the_config_check(paper, tmp_path):
    claims = tmp_path / "mine.yaml"
    claims.write_text("- id: a\n  text: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"claims: {claims}: not valid YAML at line \d+, column \d+: "):
        validate_config({**paper, "claims": [str(claims)]})


@pytest.mark.slow
def test_the_workflow_names_the_line_and_column_of_a_config_yaml_that_is_not_yaml(tmp_path):
    """Snakemake's own message ("Config file is not valid JSON or YAML") names neither."""
    import subprocess
    import sys

    (tmp_path / "config.yaml").write_text("epochs: 3\nseeds: [0, 1\ndatasets: [mnist]\n")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--dry-run", "--cores", "1"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "config.yaml: not valid YAML at line 3, column 9: " in out, out


def test_a_setup_names_its_dataset_network_and_recipe(paper):
    """A run under setups: resolves to its dataset, network and recipe; checksums are keyed by the dataset the
    run reads, seeds by the run; the top-level batch_size and learning_rate make the recipe of a run that names none."""
    from trustcal.config import run_setups
    from trustcal.registry import setup_of, setup_params

    config = {
        **paper,
        "datasets": ["cifar10", "c10_resnet"],
        "setups": {
            "c10_resnet": {
                "dataset": "cifar10",
                "network": "resnet20",
                "recipe": {"preset": "sgd", "learning_rate": 0.05},
            }
        },
        "seeds": {"cifar10": [0], "c10_resnet": [0, 1, 2]},
        "verify_checksums": {"cifar10": False},
        "learning_rate": 0.002,
    }
    cfg = validate_config(config)
    setups = run_setups(cfg)
    assert setups["cifar10"].is_paper and setups["cifar10"].recipe.learning_rate == 0.002
    resnet = setups["c10_resnet"]
    assert (resnet.dataset.name, resnet.network, resnet.title) == ("cifar10", "resnet20", "CIFAR-10 (ResNet-20)")
    assert resnet.recipe.optimizer == "sgd" and resnet.recipe.learning_rate == 0.05 and not resnet.is_paper
    assert (
        setup_of(setup_params(cfg, "c10_resnet")) == resnet
        and setup_of(setup_params(cfg, "cifar10")) == setups["cifar10"]
    )


@pytest.mark.parametrize(
    "setup,message",
    [
        ({"dataset": "imagenet"}, "setups: mine: unknown dataset 'imagenet'"),
        ({"dataset": "cifar10", "network": "resnet 20"}, "unknown network 'resnet 20'; use one of paper_mlp"),
        ({"dataset": "cifar10", "recipe": "adamw"}, "unknown recipe 'adamw'; use one of paper, sgd"),
        ({"dataset": "cifar10", "recipe": {"optimizer": "rmsprop"}}, "optimizer 'rmsprop': use one of adam, sgd"),
        ({"dataset": "cifar10", "recipe": {"lr": 0.1}}, "unknown recipe field(s) lr"),
        ({"dataset": {"kind": "folder", "path": "x"}}, "a dataset of your own needs kind: imagefolder or npz"),
        ({"dataset": {"kind": "npz"}}, "a dataset of kind npz needs path:"),
        ({"dataset": "cifar10", "nework": "resnet20"}, "unknown key 'nework' (did you mean 'network'?)"),
    ],
)
def test_a_bad_setup_is_one_line_naming_it_and_the_fix(paper, setup, message):
    with pytest.raises(ConfigError) as err:
        validate_config({**paper, "datasets": ["mine"], "setups": {"mine": setup}})
    assert message in str(err.value) and str(err.value).count("\n") == 1, str(err.value)


def test_make_names_the_line_and_column_of_a_configfile_snakemake_would_refuse(tmp_path):
    """Snakemake reads --configfile before the workflow and names neither file nor line; `make reproduce` and
    `make report` run workflow/scripts/check_configfiles.py on RUN_CONFIG first."""
    import subprocess
    import sys

    from trustcal.config import configfile_problems

    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text("epochs: 2\n\tseeds: 1\n")
    good.write_text("epochs: 2\n")
    tab = (
        f"{bad}: not valid YAML at line 2, column 1: a tab character, which YAML does not accept in indentation or "
        "between a key and its value; fix the syntax there: replace the tab with spaces"
    )
    assert configfile_problems(["--configfile", str(good), str(bad), "--config", "epochs=3"]) == [tab]
    assert configfile_problems([f"--configfile={bad}"]) == [tab]
    assert configfile_problems(["--config", f"x={bad}", str(bad)]) == []  # not named by --configfile
    assert configfile_problems(["--configfiles", str(tmp_path / "gone.yaml")]) == [
        f"{tmp_path / 'gone.yaml'}: no such file (named by --configfile). Fix: correct the path"
    ]
    script = REPO / "workflow" / "scripts" / "check_configfiles.py"
    proc = subprocess.run([sys.executable, script, "--cores", "2", "--configfile", bad], capture_output=True, text=True)
    assert (proc.returncode, proc.stderr, proc.stdout) == (1, tab + "\n", "")
    proc = subprocess.run([sys.executable, script, "--configfile", good], capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (0, "")
    makefile = (REPO / "Makefile").read_text()
    for target in ("reproduce:", "report:"):
        recipe = makefile.split("\n" + target, 1)[1].split("\n\n", 1)[0]
        assert "workflow/scripts/check_configfiles.py $(RUN_CONFIG)" in recipe, target


def test_one_vs_rest_binning_on_many_classes_is_steered_away_before_any_job(paper):
    """cifar100 has 100 registered classes: histogram and isotonic get one line each, irm and the
    10-class datasets none (docs/method.md §2.10)."""
    from trustcal.config import config_warnings

    paper["datasets"] = ["mnist", "cifar100"]
    paper["calibration"]["methods"] = ["temperature", "histogram", "isotonic", "irm"]
    lines = config_warnings(validate_config(paper))
    assert [line.split(":")[1] for line in lines] == [" histogram on run cifar100", " isotonic on run cifar100"]
    assert all("Fix: use irm" in line for line in lines)
    paper["datasets"] = ["mnist", "cifar10"]
    assert config_warnings(validate_config(paper)) == []
