# What several stages use (one file of functions and values, no rules): the configuration,
# checked; the datasets, seeds and calibrators of this run; the wildcard constraints; the
# per-run paths; the resource and settings helpers; and the targets of the workflow. Each
# stage's own helpers are in <stage>_helpers.smk, which its rule file includes.
#
# Paths are taken relative to this file (workflow.current_basedir), never to
# workflow.basedir: when another workflow imports this one as a `module`,
# workflow.basedir is the importing workflow's directory.
import re
import sys
from pathlib import Path

# WORKFLOW_DIR and this checkout's trustcal package on the path: package.smk, included first.
from trustcal.config import (
    ConfigError,
    config_source,
    data_entries,
    load_schema,
    per_dataset,
    run_setups,
    config_warnings,
    configuration_name,
    replaced_verdict,
    validate_config,
)
from trustcal.registry import setup_params
from trustcal.codedigest import stage_digest
from trustcal.shift.sets import ood_datasets

# The trustcal package the jobs run (this checkout's, else the installed one).
PACKAGE_DIR = Path(sys.modules["trustcal"].__file__).resolve().parent


def package_code(script):
    """A rule's `code` param: the digest of the package code its script runs (trustcal.codedigest),
    so that an edit to that code reruns the rule's jobs ("params changed"). Computed when a job's
    params are first asked for, once per process: a cluster job computes its own rule's only.
    """
    path = WORKFLOW_DIR / "scripts" / script
    return lambda wildcards: stage_digest(path, PACKAGE_DIR)


def config_layers():
    """Where the configuration came from, in Snakemake's order of precedence: the workflow's
    configfile (config.yaml, or an importing workflow's), each --configfile, --config
    (trustcal.config.config_layers, from what package.smk kept of the command line's part). Messages
    name the layer that set a key (trustcal.config.config_source)."""
    from trustcal.config import config_layers as layers

    return layers(
        workflow.configfiles[len(COMMAND_LINE_CONFIGFILES) :],
        COMMAND_LINE_CONFIGFILES,
        sys.argv[1:],
        command_line=COMMAND_LINE_CONFIG,
        config=config,
    )


CONFIG_LAYERS = config_layers()

try:
    _schema = WORKFLOW_DIR / "schemas" / "config.schema.yaml"
    config.update(
        validate_config(
            config,
            load_schema(_schema) if _schema.is_file() else None,
            sources=CONFIG_LAYERS,
        )
    )
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
for _line in config_warnings(config):
    print(f"warning: {_line}", file=sys.stderr)

# the configuration in one line: the verdict names it, and warns before replacing another's verdict
CONFIGURATION = configuration_name(CONFIG_LAYERS)
if _replaced := replaced_verdict("results/reproduction.md", CONFIGURATION):
    print(f"warning: {_replaced}", file=sys.stderr)


def rule_names():
    """This workflow's rules, in the order workflow/Snakefile includes their files (the stages' order);
    none without a local copy of the workflow (a remote module)."""
    snakefile = WORKFLOW_DIR / "Snakefile"
    if not snakefile.is_file():
        return []
    names = []
    for name in re.findall(r'^include:\s*"([^"]+)"', snakefile.read_text(), flags=re.M):
        path = WORKFLOW_DIR / name
        if path.is_file():
            text = path.read_text()
            names += re.findall(r"^(?:rule|checkpoint)\s+(\w+)\s*:", text, flags=re.M)
    return names


def rule_files(name):
    """A rule's output patterns, and those of every file its job writes (outputs, log, benchmark), from
    its `rules.<name>` proxy (Snakemake's public view of a rule); nothing for a rule not defined here.
    """
    try:
        proxy = getattr(rules, name)
    except WorkflowError:
        return [], []
    outputs = [str(f) for f in proxy.output]
    try:
        benchmark = [str(proxy.benchmark)]
    except TypeError:  # a rule without a benchmark (`all`)
        benchmark = []
    return outputs, [*outputs, *(str(f) for f in proxy.log), *benchmark]


def planned_writes():
    """The files the jobs of this run are about to write (trustcal.files.planned): every job of the configured
    runs with a missing output, each rule's patterns over the runs' datasets and seeds (a data rule's,
    results/data/{dataset}/, over the datasets they read), calibrators, shifted sets and external sets.
    """
    from trustcal.files.planned import planned_writes as planned

    shift_sets = globals().get("SHIFT_SETS", {})  # shift_helpers.smk
    shift_data_sets = globals().get("SHIFT_DATA_SETS", {})
    common = {
        "calibrator": FITTED_METHODS,
        "name": list(config.get("external") or {}),
    }
    per_run = {
        **common,
        "dataset": list(DATASETS),
        "seed": lambda job: [str(s) for s in SEEDS.get(job["dataset"], [])],
        "shiftset": lambda job: [s.name for s in shift_sets.get(job["dataset"], [])],
    }
    per_data = {
        **common,
        "dataset": list(DATA),
        "shiftset": lambda job: list(shift_data_sets.get(job["dataset"], {})),
    }
    jobs = []
    for name in rule_names():
        outputs, writes = rule_files(name)
        data = any(f.startswith("results/data/{dataset}") for f in outputs)
        jobs.append((outputs, writes, per_data if data else per_run))
    return planned(jobs)


def check_outputs_writable():
    """A read-only or full folder that a job of this run writes to (outputs, logs, benchmarks) stops
    the run before its first job, in one line naming the file, the cause and the fix."""
    from trustcal.files import DiskError, check_writable

    try:
        check_writable([f for f in planned_writes() if "://" not in f])
    except DiskError as exc:
        raise WorkflowError(str(exc)) from None


onstart:
    check_outputs_writable()


def print_warnings_digest():
    """At the end of every run, success or failure: the digest of the jobs' warnings of the configured runs
    (trustcal.reporting.digest), on the console; nothing without warnings, one line if it cannot be made.
    """
    try:
        from trustcal.reporting.digest import digest_lines, digest_text

        logs = Path("results/logs")
        runs = {ds: SEEDS[ds] for ds in DATASETS}
        runs.update({name: [] for name in config.get("external") or {}})
        text = digest_text(digest_lines(logs, runs), logs)
        if text:
            print(f"\n{text}", file=sys.stderr)
    except Exception as exc:  # never fails the run
        print(f"warning: no digest of the jobs' warnings: {exc!r}", file=sys.stderr)


onsuccess:
    print_warnings_digest()


onerror:
    print_warnings_digest()


DATASETS = config["datasets"]  # the runs: results/{dataset}/seed{seed}/
SEEDS = {ds: per_dataset(config, "seeds", ds) for ds in DATASETS}  # run → its seeds
# run → its dataset, network and recipe (trustcal.registry.Setup)
SETUPS = run_setups(config)
# the datasets the runs read (results/data/{dataset}/) → their registered name or a user's description
DATA = data_entries(config)
# ... and those whose test splits shift.ood reads as out-of-distribution sets (none by default)
DATA.update({n: n for n in ood_datasets(config["shift"]) if n not in DATA})


def data_file(name):
    """A file of the dataset run `w.dataset` reads (an input function): results/data/<its dataset>/`name`."""
    return lambda w: f"results/data/{SETUPS[w.dataset].dataset.name}/{name}"


def user_data(wildcards):
    """A dataset of the user's own (a setup's `dataset: {kind, path}`): its folder or file, so that
    replacing it reruns what reads it; nothing for a registered dataset."""
    entry = DATA.get(wildcards.dataset)
    return [entry["path"]] if isinstance(entry, dict) else []


def user_classes(wildcards):
    """The splits of a run on a dataset of the user's own, whose class names they hold (the figures read
    them); nothing for a registered dataset, whose names are in the registry."""
    name = SETUPS[wildcards.dataset].dataset.name
    return (
        [f"results/data/{name}/splits.npz"] if isinstance(DATA.get(name), dict) else []
    )


def run_setup(wildcards):
    """The `setup` param of a run's jobs (trustcal.registry.setup_params): what they train and evaluate."""
    return setup_params(config, wildcards.dataset)


# Calibrators fitted per epoch: temperature scaling (the paper's, which the verdict needs)
# and the others of calibration.methods, in the config's order.
FITTED_METHODS = list(dict.fromkeys(["temperature", *config["calibration"]["methods"]]))


wildcard_constraints:
    dataset="|".join(dict.fromkeys([*DATASETS, *DATA])),
    seed=r"\d+",
    calibrator="|".join(re.escape(m) for m in FITTED_METHODS),


def scaled(fixed, per_epoch=0.0, per_state=False):
    """A resource request as a callable: attempt × (fixed + per_epoch × epochs [× calibration
    states]), rounded up; `attempt` is 2, 3 on a retry. The numbers in the rules come from the
    costs a run recorded (results/benchmarks/; docs/cluster.md, "Sizing the requests"), with a margin.
    """
    import math

    def resource(wildcards, attempt):
        # the raw model and each calibrator
        states = len(FITTED_METHODS) + 1 if per_state else 1
        return attempt * math.ceil(fixed + per_epoch * config["epochs"] * states)

    return resource


def settings_config(*keys):
    """The config keys a job reads, whole (a rule's `settings` param): the job builds its settings
    from them (trustcal.settings.Settings.from_config), and a change of one reruns only the jobs
    that read it."""
    return {key: config[key] for key in keys}


def run_file(name, dataset="{dataset}", seed="{seed}"):
    """A file of one run (dataset and seed): a pattern by default."""
    return f"results/{dataset}/seed{seed}/{name}"


def seed_files(pattern):
    """A per-run `pattern` for every seed of the job's dataset (an input function)."""
    return lambda w: expand(pattern, dataset=w.dataset, seed=SEEDS[w.dataset])


def all_seed_files(pattern):
    """A per-run `pattern` for every dataset and seed of the run."""
    return [f for ds in DATASETS for f in expand(pattern, dataset=ds, seed=SEEDS[ds])]


# The figures drawn per dataset, each declared once in the registry
# (workflow/rules/figures.smk draws them).
from trustcal.reporting.figures.registry import FIGURES

FIGURE_NAMES = list(FIGURES)


def all_targets():
    """What the workflow makes by default (the inputs of its `all` rule, called once every rule
    file is included), from the rules' outputs: each run's tables, each dataset's figures, the
    verdict, the external prediction sets and, when configured, each run's shift tables.
    """
    tables = [
        rules.trust.output.trust,
        rules.scores.output.scores,
        rules.calibration_table.output.table,
    ]
    targets = []
    for ds in DATASETS:
        for seed in SEEDS[ds]:
            targets += expand(tables, dataset=ds, seed=seed)
        targets += expand(
            f"results/figures/{ds}/{{fig}}.{{ext}}",
            fig=FIGURE_NAMES,
            ext=["png", "pdf"],
        )
    targets += [str(f) for f in rules.verdict.output]  # report.smk
    targets += external_targets()  # external_helpers.smk
    targets += shift_targets()  # shift_helpers.smk: none unless shift: is configured
    return targets
