"""Each setting is declared once, on its settings dataclass's field (trustcal.measures.options): the command
line's flags, the configuration schema and the dataclass's check agree on every bound and default, and every
setting is reachable from the command line, the API and the configuration alike."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest
import yaml
from helpers.workflow import REPO

from trustcal import cli
from trustcal.config import validate_config
from trustcal.evaluation import MetricParams
from trustcal.measures.options import Option, SettingError, options_of
from trustcal.predictions import PredictionError, ReadOptions
from trustcal.settings import PARTS, CalibrationSettings, Settings, config_path

SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
FIELDS = [(part, cls, name, option) for part, cls, _ in PARTS for name, option in options_of(cls).items()]
IDS = [".".join(config_path(cls, name)) for _, cls, name, _ in FIELDS]
# calibration.methods: the workflow always fits temperature scaling and names the others (at least one in
# all); the dataclass's None is "temperature where there are validation data" and () is "none".
WORKFLOW_ONLY_DEFAULT = {"calibration.methods": ["temperature"]}


@pytest.fixture
def paper():
    return yaml.safe_load((REPO / "config.yaml").read_text())


def schema_node(path: tuple[str, ...]) -> dict:
    node = SCHEMA
    for key in path:
        node = node["properties"][key]
    return node


def default_of(cls, name: str):
    return {f.name: f.default for f in fields(cls)}[name]


def as_yaml(value):
    return list(value) if isinstance(value, tuple) else value


def bound_keywords(option: Option) -> dict:
    """The JSON Schema keywords that say what ``option`` says about one value."""
    if option.choices is not None and option.pattern:
        return {"type": "string", "anyOf": [{"enum": list(option.choices)}, {"pattern": option.pattern}]}
    if option.choices is not None:
        return {"type": "string", "enum": list(option.choices)}
    words = {"type": "integer" if option.kind is int else "number"}
    if option.low is not None:
        words["exclusiveMinimum" if option.low_open else "minimum"] = option.low
    if option.high is not None:
        words["exclusiveMaximum" if option.high_open else "maximum"] = option.high
    return words


# --------------------------------------------------------------------------- the schema


@pytest.mark.parametrize("part, cls, name, option", FIELDS, ids=IDS)
def test_the_schema_says_what_the_field_says(part, cls, name, option):
    """Title (the help text), default, type, bounds, choices and the bound's reason of every key."""
    key = ".".join(config_path(cls, name))
    node = schema_node(config_path(cls, name))
    assert node.get("title") == option.help, key
    default = WORKFLOW_ONLY_DEFAULT.get(key, as_yaml(default_of(cls, name)))
    assert node.get("default") == default, key
    one = node.get("items", {}) if option.many else node
    if option.many:
        assert node["type"] == "array", key
        assert node.get("minItems", 0) == (1 if key in WORKFLOW_ONLY_DEFAULT else option.min_items), key
    found = {
        k: one[k] for k in ("type", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in one
    }
    if "anyOf" in one:  # the allowed names, or a string of the pattern (what it is, in words, for the messages)
        found["anyOf"] = [{k: v for k, v in alt.items() if k != "description"} for alt in one["anyOf"]]
    assert found == bound_keywords(option), key
    if option.cost:
        assert one.get("description") == f"at most {option.high:,}: {option.cost}", key


def test_every_key_of_the_settings_sections_is_a_field():
    """No key of trust:, metrics: or bootstrap: that no dataclass reads (calibration: holds the workflow's own
    options and fit_on besides)."""
    declared = {config_path(cls, name) for _, cls, name, _ in FIELDS}
    for section in ("trust", "metrics", "bootstrap"):
        for key in SCHEMA["properties"][section]["properties"]:
            assert (section, key) in declared, f"{section}.{key}"
    assert {k for k in SCHEMA["properties"]["calibration"]["properties"] if ("calibration", k) not in declared} == {
        "options",
        "fit_on",
    }


def test_the_schema_check_and_the_dataclass_check_refuse_the_same_values(paper):
    """Just outside every bound: validate_config and the dataclass both refuse; on the bound both accept."""
    for _, cls, name, option in FIELDS:
        if option.choices is not None or option.kind is not int:
            continue
        path = config_path(cls, name)
        for value, ok in ((option.low, True), (option.high, True), (option.low - 1, False), (option.high + 1, False)):
            given = [value] if option.many else value
            override = {path[0]: given} if len(path) == 1 else {path[0]: {**paper.get(path[0], {}), path[1]: given}}
            if ok:
                validate_config({**paper, **override})
                assert getattr(cls(**{name: given}), name) == (tuple(given) if option.many else given)
            else:
                with pytest.raises(Exception, match="must be"):
                    validate_config({**paper, **override})
                bound = option.high if value > option.high else option.low
                with pytest.raises(SettingError, match=f"{option.key or name} must be [≥≤] {bound} "):
                    cls(**{name: given})


# --------------------------------------------------------------------------- the command line


def assess_args(*flags: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["assess", "preds.csv", "--out", "out", *flags])


def usage_error(capsys, *flags: str) -> str:
    with pytest.raises(SystemExit) as exc:
        assess_args(*flags)
    assert exc.value.code == 2
    return capsys.readouterr().err


def other_value(option: Option, default):
    """A value of ``option`` other than ``default``, as the configuration would write it."""
    if option.choices is not None:
        pick = [c for c in option.choices if c != (default[0] if option.many and default else default)][0]
        return [pick] if option.many else pick
    if option.kind is int:
        value = option.low + 3 if option.high - option.low > 3 else option.high
        return [value] if option.many else value
    return round((option.low + (option.high if option.high is not None else 2 * default + 1)) / 2 * 0.9, 4)


@pytest.mark.parametrize("part, cls, name, option", FIELDS, ids=IDS)
def test_every_setting_has_a_flag_with_the_fields_default_and_check(part, cls, name, option, capsys):
    flag = cli.setting_flag(name, option, dict((c, p) for _, groups in cli.setting_groups() for _, c, p in groups)[cls])
    assert flag in cli.build_parser()._subparsers._group_actions[0].choices["assess"].format_help()
    default = default_of(cls, name)
    dest = flag[2:].replace("-", "_")
    assert getattr(assess_args(), dest) == (list(default) if option.many and not option.comma else default)
    if option.kind is int:
        err = usage_error(capsys, flag, str(option.high + 1))
        assert f"argument {flag}: must be ≤ {option.high} (got {option.high + 1})" in err
        below = option.low - 1
        if below != option.off:
            assert f"argument {flag}: must be ≥ {option.low} (got {below})" in usage_error(capsys, flag, str(below))
        assert getattr(assess_args(flag, str(option.low)), dest) == ([option.low] if option.many else option.low)
    elif option.kind is float:
        edge = option.low if option.low_open else option.low - 1
        assert f"argument {flag}: must be" in usage_error(capsys, flag, str(edge))
        assert f"argument {flag}: must be" in usage_error(capsys, flag, "inf")


def test_the_command_line_and_the_configuration_reach_every_setting_alike():
    """One value other than the default for every setting, given as flags and as configuration keys: the same
    Settings (the calibrators aside: the workflow always adds temperature scaling)."""
    config, argv = {}, []
    for part, cls, name, option in FIELDS:
        if part == "calibration" and name == "methods":
            continue
        value = other_value(option, default_of(cls, name))
        path = config_path(cls, name)
        if len(path) == 1:
            config[path[0]] = value
        else:
            config.setdefault(path[0], {})[path[1]] = value
        flag = cli.setting_flag(name, option, "bootstrap-" if cls.__name__ == "BootstrapParams" else "")
        argv += [flag, *map(str, value if isinstance(value, list) else [value])]
    from_cli = cli.settings_from_args(assess_args(*argv))
    from_config = Settings.from_config(config)
    for part, *_ in PARTS:
        if part != "calibration":
            assert getattr(from_cli, part) == getattr(from_config, part), part
            assert getattr(from_cli, part) != getattr(Settings(), part), part  # every field changed
    assert (from_cli.calibration.t_min, from_cli.calibration.t_max) == (
        from_config.calibration.t_min,
        from_config.calibration.t_max,
    )


def test_the_settings_the_command_line_could_not_reach(capsys):
    args = assess_args(
        *["--refinement-folds", "3", "--smooth-points", "11", "--bootstrap-seed", "7", "--bootstrap-level", "0.9"],
        *["--sweep-representatives", "mean"],
    )
    s = cli.settings_from_args(args)
    assert (s.metrics.refinement_folds, s.metrics.smooth_points) == (3, 11)
    assert (s.bootstrap.seed, s.bootstrap.level, s.bootstrap.resamples) == (7, 0.9, 200)
    assert s.sweep.representatives == ("mean",)
    assert "argument --bootstrap-level: must be in (0, 1) (got 1.0)" in usage_error(capsys, "--bootstrap-level", "1")
    assert "argument --refinement-folds: must be ≥ 2 (got 1)" in usage_error(capsys, "--refinement-folds", "1")
    assert "argument --sweep-representatives: invalid choice: 'median'" in usage_error(
        capsys, "--sweep-representatives", "median"
    )


# --------------------------------------------------------------------------- the disagreements that were


def test_num_classes_1_is_refused_by_the_flag_the_schema_and_the_options(capsys):
    assert "argument --num-classes: must be ≥ 2 (got 1)" in usage_error(capsys, "--num-classes", "1")
    assert assess_args("--num-classes", "2").num_classes == 2
    assert SCHEMA["properties"]["external"]["additionalProperties"]["properties"]["num_classes"]["minimum"] == 2
    with pytest.raises(PredictionError, match="num_classes must be ≥ 2"):
        ReadOptions(num_classes=1)


def test_density_points_1_is_refused_by_the_flag_the_schema_and_the_dataclass(capsys, paper):
    assert "argument --density-points: must be ≥ 2 (got 1)" in usage_error(capsys, "--density-points", "1")
    with pytest.raises(SettingError, match=r"density_points must be ≥ 2 \(got 1\)"):
        MetricParams(density_points=1)
    with pytest.raises(Exception, match="key 'metrics.density_points' is 1; it must be ≥ 2"):
        validate_config({**paper, "metrics": {"density_points": 1}})


def test_sweep_epoch_0_is_allowed_by_the_flag_the_schema_and_the_dataclass(paper):
    """Epoch 0 is a single file assessed alone; the schema refused what the command line took."""
    assert cli.settings_from_args(assess_args("--sweep-epochs", "0")).sweep.epochs == (0,)
    config = validate_config({**paper, "trust": {"sweep_epochs": [0, 5]}})
    assert Settings.from_config(config).sweep.epochs == (0, 5)


def test_the_trust_settings_the_dataclass_did_not_check_are_checked():
    """alpha, beta and base_rate had their bounds in the schema and the command line only."""
    from trustcal.measures.trust import TrustParams

    for kwargs, message in (
        ({"alpha": -1.0}, r"alpha must be ≥ 0 \(got -1.0\)"),
        ({"beta": -0.5}, r"beta must be ≥ 0 \(got -0.5\)"),
        ({"base_rate": 1.5}, r"base_rate must be in \[0, 1\] \(got 1.5\)"),
        ({"weight": 0.0}, r"weight W must be > 0 \(got 0.0\)"),
        ({"representative": "median"}, r"representative must be one of midpoint, mean \(got 'median'\)"),
    ):
        with pytest.raises(SettingError, match=message):
            TrustParams(**kwargs)


def test_t_min_and_t_max_are_checked_by_calibration_settings():
    with pytest.raises(SettingError, match=r"t_min=5 must be smaller than t_max=1"):
        CalibrationSettings(t_min=5, t_max=1)
    with pytest.raises(SettingError, match=r"t_max must be > 0 \(got -1\)"):
        CalibrationSettings(t_max=-1)
    with pytest.raises(SettingError, match=r"methods must be one of temperature, .*\(got 'platt'\)"):
        CalibrationSettings(methods=("platt",))
    assert CalibrationSettings(methods=["isotonic", "temperature", "isotonic"]).methods == ("isotonic", "temperature")


def test_every_read_option_is_a_flag_and_an_external_key():
    """The reading options (ReadOptions, the flags of the reading group and the keys of an external entry)."""
    from trustcal.predictions import FORMATS, PREDICTION_KINDS

    external = SCHEMA["properties"]["external"]["additionalProperties"]["properties"]
    args = assess_args()
    for f in fields(ReadOptions):
        assert f.name in external, f.name
        assert getattr(args, f.name) == f.default, f.name
    assert external["format"]["enum"] == list(FORMATS) and external["kind"]["enum"] == list(PREDICTION_KINDS)
    assert {k: v for k, v in external["sum_tolerance"].items() if k != "description"} == {
        "type": "number",
        "exclusiveMinimum": 0,
    }
    assert external["num_classes"]["minimum"] == cli.MIN_CLASSES
