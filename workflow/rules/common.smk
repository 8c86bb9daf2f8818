# Configuration check, paths and target lists shared by every rule file.
#
# Paths are taken relative to this file (workflow.current_basedir), never to
# workflow.basedir: when another workflow imports this one as a `module`,
# workflow.basedir is the importing workflow's directory.
import os
import sys
from pathlib import Path

# workflow/ of this repository, first on the path: the config check runs this
# checkout's trustcal package, as every job does (workflow/scripts/_common.py),
# whatever else is installed (e.g. an editable install of another clone). A
# remote module (github(...)) has no local copy and needs trustcal installed.
WORKFLOW_DIR = Path(str(workflow.current_basedir)).parent
if (WORKFLOW_DIR / "trustcal").is_dir():
    sys.path.insert(0, str(WORKFLOW_DIR))
    import trustcal

    _running = Path(trustcal.__file__).resolve().parent
    if _running != (WORKFLOW_DIR / "trustcal").resolve():
        raise WorkflowError(
            f"this workflow ({WORKFLOW_DIR}) would run the trustcal package of {_running}, imported "
            f"before its own ({WORKFLOW_DIR / 'trustcal'}). Fix: run the Snakefile of {_running.parents[1]}, "
            f"or do not import trustcal before this workflow is loaded."
        )

from trustcal.config import (
    ConfigError,
    config_source,
    load_schema,
    per_dataset,
    validate_config,
)


def config_layers():
    """Where the configuration came from, in Snakemake's order of precedence: the workflow's
    configfile (config.yaml, or an importing workflow's), each --configfile, --config. Messages
    name the layer that set a key (trustcal.config.config_source)."""
    from snakemake.common.configfile import load_configfile

    settings = workflow.config_settings
    given = [Path(f).absolute() for f in settings.configfiles]
    layers = [
        (str(f), load_configfile(f))
        for f in workflow.configfiles
        if Path(f).absolute() not in given
    ]
    layers += [
        (f"--configfile {os.path.relpath(f)}", load_configfile(f)) for f in given
    ]
    return [*layers, ("--config", dict(settings.config))]


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


def check_outputs_writable():
    """A read-only or full folder that a job of this run writes to (outputs, logs, benchmarks) stops
    the run before its first job, in one line naming the file, the cause and the fix."""
    from trustcal.files import DiskError, check_writable

    paths = {
        str(f)
        for job in workflow.dag.needrun_jobs()
        for f in (*job.output, *job.log, *([job.benchmark] if job.benchmark else []))
        if "://" not in str(f)
    }
    try:
        check_writable(sorted(paths))
    except DiskError as exc:
        raise WorkflowError(str(exc)) from None


onstart:
    check_outputs_writable()


DATASETS = config["datasets"]
SEEDS = {ds: per_dataset(config, "seeds", ds) for ds in DATASETS}  # dataset → its seeds
EPOCHS = list(range(1, config["epochs"] + 1))

# Minutes of CPU training per epoch, for the runtime resource (GPUs are far faster).
# Recorded (results/benchmarks/train/, 1 core shared with other work, data of the real
# shapes): 0.9 s an epoch for MNIST's MLP, 23-31 s for CIFAR-10's CNN; about 3x and 2x that.
MINUTES_PER_EPOCH = {"mnist": 0.05, "cifar10": 1.0}


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


wildcard_constraints:
    dataset="|".join(DATASETS),
    seed=r"\d+",


def run_file(name, dataset="{dataset}", seed="{seed}"):
    return f"results/{dataset}/seed{seed}/{name}"


def logit_files(wildcards=None):
    """The logits of every epoch: a pattern (for outputs) or, given wildcards, the files."""
    if wildcards is None:
        return expand(
            "results/{{dataset}}/seed{{seed}}/logits/epoch{epoch:03d}.npz", epoch=EPOCHS
        )
    return expand(
        run_file("logits/epoch{epoch:03d}.npz", wildcards.dataset, wildcards.seed),
        epoch=EPOCHS,
    )


def train_pattern(pattern):
    """A per-seed log path of the train rule; one path for all seeds when seeds train together."""
    if config["seed_batching"]:
        return pattern.replace("seed{seed}", "seeds")
    return pattern


def train_histories():
    """The train rule's outputs: one seed's history, or every seed's when seeds train together."""
    pattern = "results/{dataset}/seed{seed}/history.csv"
    # with seed_batching, the same seeds for every dataset (checked by validate_config)
    if config["seed_batching"]:
        return expand(
            pattern.replace("{dataset}", "{{dataset}}"), seed=SEEDS[DATASETS[0]]
        )
    return pattern


def job_seeds(wildcards):
    """The seeds one train job trains."""
    return (
        list(SEEDS[wildcards.dataset])
        if config["seed_batching"]
        else [int(wildcards.seed)]
    )


# Calibrators fitted per epoch: temperature scaling (the paper's, which the verdict needs)
# and the others of calibration.methods, in the config's order.
FITTED_METHODS = list(dict.fromkeys(["temperature", *config["calibration"]["methods"]]))


wildcard_constraints:
    calibrator="|".join(FITTED_METHODS),


def _check_calibration_options():
    """Unknown options of a calibrator stop the run before any job starts."""
    from trustcal.calibration.methods import calibrator_class

    for method, options in config["calibration"]["options"].items():
        accepted = calibrator_class(method).options
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            where = config_source(CONFIG_LAYERS, ("calibration", "options", method))
            raise WorkflowError(
                f"{where}: calibration.options.{method}: unknown option(s) {', '.join(unknown)}; "
                f"{method} accepts: {', '.join(accepted) or 'none'}"
            )


_check_calibration_options()


def calibration_params(method):
    cal = config["calibration"]
    return dict(
        method=method,
        fit_on=cal["fit_on"],
        t_min=cal["t_min"],
        t_max=cal["t_max"],
        options=cal["options"].get(method, {}),
    )


def calibrator_files(wildcards, ext="npz"):
    """Every calibrator's fitted states (npz) or rows (csv) of one run."""
    return [
        run_file(f"calibration/{c}.{ext}", wildcards.dataset, wildcards.seed)
        for c in FITTED_METHODS
    ]


def train_params():
    keys = ("epochs", "batch_size", "learning_rate", "init", "device")
    return {k: config[k] for k in keys}


def settings_config(*keys):
    """The config keys a job reads, whole (a rule's `settings` param): the job builds its settings
    from them (trustcal.settings.Settings.from_config), and a change of one reruns only the jobs
    that read it."""
    return {key: config[key] for key in keys}


def gpus():
    return 1 if config["device"].startswith("cuda") else 0


# Figures drawn per dataset, each declared once in the registry (its tables, rule,
# report section, caption and parameters); workflow/rules/figures.smk reads it
# through the helpers below.
from trustcal.reporting.figures.registry import FIGURES

FIGURE_NAMES = list(FIGURES)
REPORT_DATASETS = {"mnist": "MNIST", "cifar10": "CIFAR-10"}


def job_figures(job):
    """The registry's figures drawn by rule `job`."""
    return [f for f in FIGURES.values() if f.job == job]


def figure_inputs(job):
    """Table name → its file of every seed (input functions), for each table `job`'s figures read."""
    tables = dict.fromkeys(t for f in job_figures(job) for t in f.tables)
    return {t: seed_files(f"{t}.csv") for t in tables}


def figure_outputs(job):
    """Figure name → [png, pdf] for each figure of `job`; the PNG goes into the report under dataset › stage."""
    outputs = {}
    for f in job_figures(job):
        prefix = f"results/figures/{{dataset}}/{f.name}"
        png = report(
            f"{prefix}.png",
            caption=f"../report/{f.caption}",  # relative to workflow/rules/
            category=lambda w: REPORT_DATASETS.get(w.dataset, w.dataset),
            subcategory=f.section,
            labels={"figure": f.name.replace("_", " "), "dataset": "{dataset}"},
        )
        outputs[f.name] = [png, f"{prefix}.pdf"]
    return outputs


def figure_params(job):
    """The config values `job`'s figures read (a change reruns that job only)."""
    return {key: config[key] for f in job_figures(job) for key in f.params}


def seed_files(name):
    """One table per seed of the job's dataset (an input function)."""
    return lambda w: [run_file(name, w.dataset, seed) for seed in SEEDS[w.dataset]]


def all_seed_files(name):
    """One table per dataset and seed of the run."""
    return [run_file(name, ds, seed) for ds in DATASETS for seed in SEEDS[ds]]


# Someone else's predictions (config `external:`, workflow/rules/external.smk). The
# files of each set are listed when the workflow is parsed, so a bad path stops the
# run before any job starts and a new or changed prediction file reruns its set.
EXTERNAL = config["external"]


def external_files(name):
    """The files an external set reads: its predictions, and its labels/validation/history files."""
    from trustcal.predictions import ReadOptions, discover, history_beside
    from trustcal.errors import TrustcalError

    entry = EXTERNAL[name]
    options = {k: v for k, v in entry.items() if k not in ("path", "history", "title")}
    try:
        files, skipped = discover([entry["path"]], ReadOptions(**options))
    except TrustcalError as exc:
        raise WorkflowError(
            f"{config_source(CONFIG_LAYERS, ('external', name))}: external.{name}: {exc}"
        ) from None
    history = entry.get("history") or history_beside(skipped)
    return [str(f.path) for f in files] + [
        str(p) for p in (entry.get("labels"), entry.get("validation"), history) if p
    ]


EXTERNAL_FILES = {name: external_files(name) for name in EXTERNAL}


def external_targets():
    files = ("trust.csv", "scores.csv", "summary.txt", "figures")
    return [f"results/external/{name}/{f}" for name in EXTERNAL for f in files]


def all_targets():
    targets = []
    for ds in DATASETS:
        for seed in SEEDS[ds]:
            targets += [
                run_file(n, ds, seed)
                for n in ("trust.csv", "scores.csv", "calibration.csv")
            ]
        targets += expand(
            f"results/figures/{ds}/{{fig}}.{{ext}}",
            fig=FIGURE_NAMES,
            ext=["png", "pdf"],
        )
    targets += [
        f"results/reproduction.{ext}" for ext in ("md", "html", "csv")
    ]  # workflow/rules/report.smk
    targets += external_targets()  # workflow/rules/external.smk
    return targets
