"""Configuration checking with messages that name the key and the allowed values.

The Snakefile calls :func:`validate_config` before any job starts; a typo or a
bad value stops the run with one readable line per problem.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import jsonschema
import yaml

from trustcal.config_schema import SCHEMA_PATH, Validator, coerce, fill_defaults, load_schema  # noqa: F401 (re-exported)
from trustcal.data import tabular
from trustcal.errors import TrustcalError, yaml_problem
from trustcal.registry import (
    DATASETS,
    NETWORKS,
    TORCHVISION_PREFIX,
    RegistryError,
    Setup,
    base_recipe,
    did_you_mean,
    resolve_setup,
)


class ConfigError(TrustcalError):
    pass


# Where each value came from: the layers of the configuration in increasing precedence, each a
# name and the mapping it gave, as Snakemake merges them: the workflow's `configfile:` (config.yaml),
# then every `--configfile X` in order, then `--config`. A message names the layer that set the key.
ConfigSources = Sequence[tuple[str, Mapping]]


def _sets(layer: Mapping, key_path: Sequence) -> bool:
    """Whether ``layer`` sets the value at ``key_path``: the whole path, or a part of it to a value
    that is not a mapping (a list or a scalar, which holds the rest)."""
    node = layer
    for part in key_path:
        if not isinstance(node, Mapping):
            return True
        if part not in node:
            return False
        node = node[part]
    return True


def config_source(sources: ConfigSources | None, *key_paths: Sequence, default: str = "config.yaml") -> str:
    """The name of the layer of ``sources`` with the highest precedence that sets any of
    ``key_paths`` (e.g. ``("calibration", "t_min")``); ``default`` when none does (a schema default,
    or no sources known)."""
    key_paths = [path for path in key_paths if path]  # the top level: set by every layer, named by none
    for name, layer in reversed(sources or ()):
        if any(_sets(layer, path) for path in key_paths):
            return name
    return default


def yaml_syntax_problem(path: str | Path) -> str | None:
    """Why ``path`` (a configuration or claims file) is neither JSON nor YAML, naming the file, the line and
    the column (``config.yaml: not valid YAML at line 3, column 9: …; fix the syntax there``); None when it
    is either, or cannot be read (the reader of the file says why)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        json.loads(text)  # Snakemake reads a config file as JSON first
        return None
    except ValueError:
        pass
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None and "'\\t'" in str(getattr(exc, "problem", "")):  # "found character '\t' that …"
            return (
                f"{path}: not valid YAML at line {mark.line + 1}, column {mark.column + 1}: a tab character, which "
                "YAML does not accept in indentation or between a key and its value; fix the syntax there: replace "
                "the tab with spaces"
            )
        return f"{path}: not valid YAML {yaml_problem(exc)}; fix the syntax there"
    return None


def check_yaml_syntax(path: str | Path) -> None:
    """Raise :class:`ConfigError` when ``path`` is not valid YAML (:func:`yaml_syntax_problem`), before
    Snakemake reads it and says only that it is not (naming no line)."""
    problem = yaml_syntax_problem(path)
    if problem:
        raise ConfigError(problem)


CONFIGFILE_FLAGS = ("--configfile", "--configfiles")
CONFIG_FLAGS = ("--config", "-C")


def option_values(args: Sequence[str], flags: Sequence[str]) -> list[str]:
    """The values a command line gives the options ``flags`` (``nargs="*"`` options, as Snakemake's
    --configfile and --config are): each argument after one of them up to the next option, or ``FLAG=VALUE``."""
    values, taking = [], False
    for arg in args:
        flag, eq, value = arg.partition("=")
        if flag in flags:
            taking = not eq
            values += [value] if eq else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            values.append(arg)
    return values


def configfile_problems(args: Sequence[str]) -> list[str]:
    """The syntax problems (:func:`yaml_syntax_problem`) of the files a Snakemake command line names with
    ``--configfile`` (each argument after it up to the next option, or ``--configfile=FILE``). Snakemake reads
    them before the workflow, and says of a bad one only that it is not valid JSON or YAML: ``make reproduce``
    and ``make report`` check them first (workflow/scripts/check_configfiles.py)."""
    problems = []
    for path in option_values(args, CONFIGFILE_FLAGS):
        if not Path(path).is_file():
            problems.append(f"{path}: no such file (named by --configfile). Fix: correct the path")
        elif problem := yaml_syntax_problem(path):
            problems.append(problem)
    return problems


def _merge(base: dict, layer: Mapping) -> dict:
    """``layer`` merged into ``base`` as Snakemake merges configuration layers: a mapping into a mapping,
    key by key; any other value replaces."""
    for key, value in layer.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            base[key] = _merge(dict(base[key]), value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def command_line_config(args: Sequence[str]) -> dict:
    """What a Snakemake command line sets with ``--config KEY=VALUE …`` (or ``-C``), as mappings: a value
    written as a YAML mapping (``calibration={methods: [vector]}``, or the ``{'t_min': 0.05}`` a cluster job's
    command line repeats) is one, key by key; any other is kept as a string (this says which keys are set,
    Snakemake says what to). A later setting of a key wins over an earlier one."""
    layer: dict = {}
    for entry in option_values(args, CONFIG_FLAGS):
        key, eq, value = entry.partition("=")
        if not eq or not key:
            continue  # Snakemake refuses it, in its own words
        try:
            parsed = yaml.load(value, Loader=yaml.BaseLoader)  # strings, lists and mappings only
        except yaml.YAMLError:
            parsed = value
        _merge(layer, {key: parsed})
    return layer


def _beyond(config: Mapping, files: Mapping) -> dict:
    """What ``config`` sets that ``files`` does not, or sets to another value (the keys of a mapping in both,
    key by key)."""
    out = {}
    for key, value in config.items():
        if key not in files:
            out[key] = value
        elif isinstance(value, Mapping) and isinstance(files[key], Mapping):
            if inner := _beyond(value, files[key]):
                out[key] = inner
        elif value != files[key]:
            out[key] = value
    return out


def _within(layer: Mapping, config: Mapping) -> dict:
    """The keys of ``layer`` that ``config`` holds too (key by key where both hold a mapping)."""
    out = {}
    for key, value in layer.items():
        if key not in config:
            continue
        if isinstance(value, Mapping) and isinstance(config[key], Mapping):
            if inner := _within(value, config[key]):
                out[key] = inner
        else:
            out[key] = value
    return out


def config_layers(
    workflow_files: Sequence[str | Path],
    command_line_files: Sequence[str | Path],
    args: Sequence[str] = (),
    command_line: Mapping | None = None,
    config: Mapping | None = None,
) -> list[tuple[str, Mapping]]:
    """The layers of the configuration in Snakemake's order of precedence (:data:`ConfigSources`), from what
    Snakemake shows a workflow: the files of the workflow's ``configfile:`` (``workflow_files``, each named by
    its path), then the ``--configfile`` files (``command_line_files``, each named ``--configfile <its path
    relative to the working directory>``), then ``--config``.

    ``command_line`` is the configuration as the workflow starts, before its ``configfile:`` runs: the merge of
    the --configfile files and --config (Snakemake's API and a profile's ``config:`` included). ``--config`` is
    then what it sets beyond the --configfile files, and the keys of it that the command line ``args`` sets with
    ``--config`` (to a value a file gives too). Where ``command_line`` is not known (an imported workflow, whose
    configuration is its importer's), ``--config`` is the keys ``args`` sets with ``--config`` that ``config``
    holds."""
    from snakemake.common.configfile import load_configfile  # Snakemake's own reader, JSON or YAML

    layers = [(str(f), load_configfile(f)) for f in workflow_files]
    given = [(f"--configfile {os.path.relpath(f)}", load_configfile(f)) for f in command_line_files]
    named = _within(command_line_config(args), command_line if command_line is not None else config or {})
    if command_line is not None:
        files: dict = {}
        for _, layer in given:
            _merge(files, layer)
        named = _merge(_beyond(command_line, files), named)
    return [*layers, *given, ("--config", named)]


def configuration_name(layers: Sequence[tuple[str, Mapping]]) -> str:
    """The configuration of :func:`config_layers` in one line, as the verdict names the run it judged:
    ``config.yaml + --configfile tiny.yaml + --config epochs=3 datasets=["mnist"]`` (a file by its path relative
    to the working directory; ``--config`` by its keys, left out when it sets none)."""
    parts = []
    for name, layer in layers:
        if name == "--config":
            if layer:
                values = (v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in layer.values())
                parts.append("--config " + " ".join(f"{k}={v}" for k, v in zip(layer, values)))
        else:
            parts.append(name if name.startswith("--configfile") else os.path.relpath(name))
    return " + ".join(parts)


def replaced_verdict(verdict: str | Path, name: str) -> str | None:
    """The warning for a run whose verdict job would replace ``verdict`` (``results/reproduction.md``) written for
    another configuration than ``name`` (:func:`configuration_name`); None when there is none, or it is this
    configuration's."""
    path = Path(verdict)
    if not path.is_file():
        return None
    prefix = "- Configuration: "
    lines = [
        line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.startswith(prefix)
    ]
    if not lines or lines[0] == f"{prefix}{name}.":
        return None
    old = lines[0][len(prefix) :].rstrip(".")
    return (
        f"{path} is the verdict of another configuration ({old}); this run ({name}) replaces it, and its report, "
        "when its verdict job runs. To keep both, give each configuration a folder of its own: snakemake "
        "--directory runs/<name> (docs/usage.md, Configurations side by side)"
    )


def _bound_reason(schema: dict) -> str:
    """Why a key has its bound: the schema's description without its leading "at most N: "."""
    text = schema.get("description", "")
    return text.split(": ", 1)[1] if text.startswith("at most") and ": " in text else text


def _describe(error: jsonschema.ValidationError, config_name: str, sources: ConfigSources | None = None) -> str:
    key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    schema = error.schema
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        config_name = config_source(sources, *(path + (name,) for name in unknown), default=config_name)
        hints = [f"'{name}'{did_you_mean(name, allowed)}" for name in unknown]
        where = f" in '{key}'" if error.absolute_path else ""
        return f"{config_name}: unknown key {', '.join(hints)}{where}; allowed keys: {', '.join(allowed)}"
    config_name = config_source(sources, path, default=config_name)
    if error.validator == "enum":
        return f"{config_name}: key '{key}' is {error.instance!r}; allowed values: " + ", ".join(
            map(str, schema["enum"])
        )
    if error.validator == "anyOf" and all("enum" in alt or "pattern" in alt for alt in schema["anyOf"]):
        values = [str(v) for alt in schema["anyOf"] for v in alt.get("enum", ())]
        forms = [
            alt.get("description", f"a string matching {alt['pattern']}") for alt in schema["anyOf"] if "pattern" in alt
        ]
        return f"{config_name}: key '{key}' is {error.instance!r}; allowed values: {', '.join(values)}" + "".join(
            f", or {form}" for form in forms
        )
    if error.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}[error.validator]
        why = _bound_reason(schema) if error.validator == "maximum" else ""
        return f"{config_name}: key '{key}' is {error.instance!r}; it must be {op} {error.validator_value}" + (
            f": {why}" if why else ""
        )
    if error.validator == "pattern":
        allowed = schema.get("description", f"a string matching {error.validator_value}")
        return f"{config_name}: key '{key}' is {error.instance!r}; allowed: {allowed}"
    if error.validator == "required":
        where = f" in '{key}'" if error.absolute_path else ""
        return f"{config_name}: {error.message}{where}; add it (see config.yaml for the paper's value)"
    if error.validator == "oneOf":
        # the alternative of the value's own type (a list, a mapping) says what is wrong inside it
        inner = [e for e in error.context if not (e.validator == "type" and e.absolute_path == error.absolute_path)]
        if inner:
            return _describe(max(inner, key=lambda e: len(e.absolute_path)), config_name, sources)
        allowed = schema.get("description", "one of the forms in workflow/schemas/config.schema.yaml")
        return f"{config_name}: key '{key}' is {error.instance!r}; allowed: {allowed}"
    if error.validator == "type":
        expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        if "integer" in expected and isinstance(error.instance, float):
            bounds = [schema.get("minimum"), schema.get("maximum")]
            span = f" from {bounds[0]} to {bounds[1]}" if None not in bounds else ""
            return (
                f"{config_name}: key '{key}' is {error.instance!r}; it must be a whole number{span}, written "
                "without a decimal point or an exponent"
            )
        return f"{config_name}: key '{key}' is {error.instance!r}; it must be of type {error.validator_value}"
    return f"{config_name}: key '{key}': {error.message}"


PER_DATASET_KEYS = ("seeds", "verify_checksums")


def per_dataset(config: dict, key: str, dataset: str):
    """The value of ``key`` for ``dataset``: the key itself, or its entry when given per dataset."""
    value = config[key]
    return value[dataset] if isinstance(value, dict) else value


def run_setups(config: Mapping) -> dict[str, Setup]:
    """Each run of ``datasets:`` as a :class:`trustcal.registry.Setup` (raises :class:`RegistryError`)."""
    base = base_recipe(config)
    return {name: resolve_setup(name, config.get("setups"), base) for name in config["datasets"]}


def data_entries(config: Mapping) -> dict[str, str | dict]:
    """Each dataset the runs read, by the name its files go under (``results/data/{name}/``) → what
    describes it: its registered name, or the mapping of a user's dataset (a setup's ``dataset:``)."""
    out: dict[str, str | dict] = {}
    for name, setup in run_setups(config).items():
        entry = ((config.get("setups") or {}).get(name) or {}).get("dataset")
        out.setdefault(setup.dataset.name, dict(entry) if isinstance(entry, Mapping) else setup.dataset.name)
    return out


def _setup_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    problems = []
    base = base_recipe(config)
    for name in config["datasets"]:
        where = config_source(sources, ("setups", name), ("datasets",), default=config_name)
        try:
            setup = resolve_setup(name, config.get("setups"), base)
        except RegistryError as exc:
            problems.append(f"{where}: {exc}")
            continue
        path = setup.dataset.path
        if path is not None and not Path(path).exists():
            problems.append(
                f"{where}: setups: {name}: dataset path {path} does not exist (a relative path is read from the "
                f"working directory, {Path.cwd()}); fix the path or give an absolute one"
            )
        elif problem := tabular.setup_problem(setup):  # a table: an MLP, no image augmentation or normalisation
            problems.append(f"{where}: setups: {name}: {problem}")
    return problems


def _per_dataset_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    problems = []
    setups = run_setups(config)
    names = {
        # seeds are per run; checksums per dataset, the files a run reads
        "seeds": list(setups),
        "verify_checksums": list(dict.fromkeys(s.dataset.name for s in setups.values())),
    }
    for key in PER_DATASET_KEYS:
        value = config.get(key)
        if not isinstance(value, dict):
            continue
        where = config_source(sources, (key,), ("datasets",), default=config_name)
        missing = [ds for ds in names[key] if ds not in value]
        if missing:
            problems.append(
                f"{where}: key '{key}' is given per dataset but has no entry for "
                f"{', '.join(map(repr, missing))}; add one, e.g. {key}: {{{missing[0]}: ...}}"
            )
        # an entry for a dataset or setup this run leaves out is kept (one file serves several runs); a name
        # known nowhere is a typo
        known = {*names[key], *DATASETS, *(config.get("setups") or {})}
        unknown = [ds for ds in value if ds not in known]
        if unknown:
            problems.append(
                f"{where}: key '{key}' has an entry for {', '.join(map(repr, unknown))}, which is no registered "
                f"dataset and no name under setups: ({', '.join(names[key])} here); remove it or fix its name"
            )
    seeds = config.get("seeds")
    if config.get("seed_batching") and isinstance(seeds, dict):
        distinct = {tuple(seeds[ds]) for ds in config["datasets"] if ds in seeds}
        if len(distinct) > 1:
            problems.append(
                f"{config_source(sources, ('seed_batching',), ('seeds',), default=config_name)}: seed_batching: true trains the same seeds for every dataset, but "
                f"'seeds' differs per dataset; give one list, or set seed_batching: false"
            )
    return problems


# torchvision's classification networks are the builders its models/*.py register (what
# torchvision.models.list_models(module=torchvision.models) lists), found here without importing it
_REGISTERED_BUILDER = re.compile(r"^@register_model\((?:name=[\"'](\w+)[\"'])?\)[ \t]*\n(?:@.*\n)*def (\w+)", re.M)


def _torchvision_builders() -> set[str] | None:
    """The classification networks the installed torchvision registers, read from its sources (milliseconds,
    where importing it takes seconds; an empty set where they cannot be read); None without torchvision."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        return None
    names: set[str] = set()
    for folder in spec.submodule_search_locations or []:
        for path in sorted(Path(folder, "models").glob("*.py")):
            try:
                names.update(m[1] or m[2] for m in _REGISTERED_BUILDER.finditer(path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
    return names


def _network_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    """A run's ``torchvision:NAME`` that the installed torchvision does not have, or a ``package.module:Class``
    that does not lead to an ``nn.Module`` class, found now rather than by its train job after the download and
    the preparation (registered names are checked with the setups).

    The check is training's own (trustcal.training.networks.check_network): it imports the module, as the train
    job does, and so torch, only when such a network is named. A torchvision network among the builders that
    torchvision's sources register is not imported at all (importing torchvision takes seconds); any other is
    confirmed by torchvision itself. Nothing is checked where this Python has no torch or no torchvision: the
    jobs run in an environment of their own (e.g. ``--sdm conda``), and the train job checks the network."""
    setups = run_setups(config)
    named = sorted({s.network for s in setups.values() if s.network not in NETWORKS})
    if any(n.startswith(TORCHVISION_PREFIX) for n in named):
        builders = _torchvision_builders()
        named = [
            n
            for n in named
            if not n.startswith(TORCHVISION_PREFIX)
            or (builders is not None and n[len(TORCHVISION_PREFIX) :] not in builders)
        ]
    if not named or importlib.util.find_spec("torch") is None:
        return []
    from trustcal.training.networks import NetworkError, check_network

    found: dict[str, str | None] = {}
    for network in named:
        try:
            check_network(network)
            found[network] = None
        except NetworkError as exc:
            found[network] = str(exc)
    return [
        f"{config_source(sources, ('setups', name, 'network'), default=config_name)}: setups: {name}: {found[s.network]}"
        for name, s in setups.items()
        if found.get(s.network)
    ]


def _calibrator_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    """A calibrator of your own (``package.module:Class`` in calibration.methods) that the calibrate job could
    not use: its module imported as the job imports it, its fit and predict_proba, its options against its
    constructor (trustcal.calibration.user.user_class_problem)."""
    from trustcal.calibration.user import user_class_problem
    from trustcal.imports import is_import_path

    calibration = config.get("calibration", {})
    problems = []
    for method in calibration.get("methods", ()):
        if is_import_path(method):
            problem = user_class_problem(method, calibration.get("options", {}).get(method))
            if problem:
                where = config_source(sources, ("calibration", "methods"), default=config_name)
                problems.append(f"{where}: calibration.methods: {problem}")
    return problems


def _claims_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    """A claims file that is not there, or two whose names would write the same results/claims/ files."""
    where = config_source(sources, ("claims",), default=config_name)
    problems, stems = [], {}
    for path in config.get("claims", []):
        if not Path(path).is_file():
            problems.append(
                f"{where}: claims: {path} is not a file (relative paths are read from the working directory, "
                f"{Path.cwd()}); fix the path or give an absolute one"
            )
        elif syntax := yaml_syntax_problem(path):  # found now, not by the verdict job at the end of the run
            problems.append(f"{where}: claims: {syntax}")
        stem = Path(path).stem
        if stem in stems:
            problems.append(
                f"{where}: claims: {stems[stem]} and {path} would both write results/claims/{stem}.*; rename one"
            )
        stems.setdefault(stem, path)
    return problems


def _shift_problems(config: dict, config_name: str, sources: ConfigSources | None = None) -> list[str]:
    """A name of ``shift.corruptions`` that is no corruption of a run's image shape (or cannot be computed
    here), of ``shift.ood`` that is no noise and no registered dataset, an epoch of ``shift.epochs`` past the
    last, a published file ``shift.official`` lacks, and an ``ood`` dataset that per-dataset ``verify_checksums``
    has no entry for (trustcal.shift.sets)."""
    from trustcal.shift.sets import corruption_problem, epochs_problem, official_problem, ood_datasets, ood_problem

    shift = config.get("shift") or {}
    problems: list[str] = []

    def add(key: str, problem: str | None) -> None:
        line = f"{config_source(sources, ('shift', key), default=config_name)}: shift.{key}: {problem}"
        if problem and line not in problems:
            problems.append(line)

    setups = run_setups(config)
    tables = tabular.shift_problems(shift, setups)  # a run on a table: no corruption, no out-of-distribution set
    found = (corruption_problem(shift.get("corruptions", []), s.dataset.shape, n) for n, s in setups.items())
    add("corruptions", tables.get("corruptions") or next((p for p in found if p), None))  # one line: the first run
    own = {s.dataset.name for s in setups.values()}
    for entry in shift.get("ood", []):
        add("ood", ood_problem(entry, own))
    add("ood", tables.get("ood"))
    add("epochs", epochs_problem(shift.get("epochs", []), config["epochs"]))
    if shift.get("official") and not any(problems):
        add("official", official_problem(shift, setups))
    checks = config.get("verify_checksums")
    missing = [n for n in ood_datasets(shift) if isinstance(checks, dict) and n not in checks]
    if missing:
        add("ood", f"verify_checksums is given per dataset but has no entry for {missing[0]!r}; add one")
    return problems


def config_warnings(config: Mapping) -> list[str]:
    """What a valid configuration should not ask for, said before any job runs: a one-vs-rest binning
    calibrator on a registered dataset of many classes (trustcal.calibration.methods.many_classes_advice)."""
    from trustcal.calibration.methods import many_classes_advice

    lines = []
    for name, setup in run_setups(config).items():
        for method in config.get("calibration", {}).get("methods", ()):
            if advice := many_classes_advice(method, setup.dataset.num_classes):
                lines.append(f"calibration.methods: {method} on run {name}: {advice}")
    return lines


def validate_config(
    config: dict, schema: dict | None = None, config_name: str = "config.yaml", sources: ConfigSources | None = None
) -> dict:
    """Return ``config`` with defaults filled in, or raise :class:`ConfigError`.

    A single dataset or seed given on the command line (``--config seeds=1``)
    is accepted as a one-element list. Each problem names where its value came
    from: the layer of ``sources`` that set the key (:func:`config_source`:
    ``--config``, ``--configfile X``, the workflow's config file), else ``config_name``.
    """
    schema = load_schema() if schema is None else schema
    config = copy.deepcopy(dict(config))
    for key in ("datasets", "seeds"):
        if key in config and isinstance(config[key], (str, int)) and not isinstance(config[key], bool):
            config[key] = [config[key]]
    config = coerce(config, schema, schema.get("$defs"))
    fill_defaults(config, schema)
    validator = Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}  # one problem per key:
    errors = [e for e in errors if e.validator == "type" or tuple(e.absolute_path) not in mistyped]  # its type
    problems = [_describe(e, config_name, sources) for e in errors]
    cal = config.get("calibration", {})
    if not problems and cal.get("t_min", 0) >= cal.get("t_max", 1):
        name = config_source(sources, ("calibration", "t_min"), ("calibration", "t_max"), default=config_name)
        problems.append(f"{name}: calibration.t_min must be smaller than calibration.t_max")
    if not problems:
        problems += _setup_problems(config, config_name, sources)
    if not problems:
        problems += _per_dataset_problems(config, config_name, sources)
        problems += _network_problems(config, config_name, sources)
        problems += _calibrator_problems(config, config_name, sources)
        problems += _claims_problems(config, config_name, sources)
        problems += _shift_problems(config, config_name, sources)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
    return config
