# Configuration check, paths and target lists shared by every rule file.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from trustcal.config import ConfigError, validate_config
from trustcal.data import raw_files

try:
    config.update(validate_config(config))
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None

DATASETS = config["datasets"]
SEEDS = config["seeds"]
EPOCHS = list(range(1, config["epochs"] + 1))
CONDA_ENV = str(Path(workflow.basedir) / "envs" / "trustcal.yaml")

# Minutes of CPU training per epoch on a laptop core, for the runtime resource
# (a cluster profile may scale it; GPUs are far faster).
MINUTES_PER_EPOCH = {"mnist": 0.2, "cifar10": 1.0}


wildcard_constraints:
    dataset="|".join(DATASETS),
    seed=r"\d+",


def run_file(name, dataset="{dataset}", seed="{seed}"):
    return f"results/{dataset}/seed{seed}/{name}"


def logit_files(wildcards=None):
    """The logits of every epoch: a pattern (for outputs) or, given wildcards, the files."""
    if wildcards is None:
        return expand("results/{{dataset}}/seed{{seed}}/logits/epoch{epoch:03d}.npz", epoch=EPOCHS)
    return expand(run_file("logits/epoch{epoch:03d}.npz", wildcards.dataset, wildcards.seed), epoch=EPOCHS)


def train_params():
    keys = ("epochs", "batch_size", "learning_rate", "init", "device")
    return {k: config[k] for k in keys}


def trust_params():
    sweep_keys = ("clusters_sweep", "sweep_epochs")
    return dict(clusters=config["clusters"], **{k: v for k, v in config["trust"].items() if k not in sweep_keys})


def sweep_params():
    return dict(clusters=config["trust"]["clusters_sweep"], epochs=config["trust"]["sweep_epochs"])


def gpus():
    return 1 if config["device"].startswith("cuda") else 0


def all_targets():
    targets = []
    for ds in DATASETS:
        for seed in SEEDS:
            targets += [run_file(n, ds, seed) for n in ("trust.csv", "scores.csv", "calibration.csv")]
        targets += expand(f"results/figures/{ds}/{{fig}}.{{ext}}", fig=["trust_grid", "loss_curves"], ext=["png", "pdf"])
    return targets
