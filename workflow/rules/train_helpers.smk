# The train stage's helpers (train.smk includes this file): the epochs, the
# runtime per epoch, the files and seeds of a train job, the logits of a run.
# A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.

EPOCHS = list(range(1, config["epochs"] + 1))


def minutes_per_epoch(wildcards):
    """Minutes of CPU training an epoch of the run's network, for the runtime resource (GPUs are far
    faster): trustcal.registry.NETWORKS' minutes_per_epoch, recorded by benchmarks/bench_training.py.
    """
    from trustcal.registry import NETWORKS, UNKNOWN_NETWORK_MINUTES

    spec = NETWORKS.get(SETUPS[wildcards.dataset].network)
    return spec.minutes_per_epoch if spec else UNKNOWN_NETWORK_MINUTES


# One seed's training history: rule train's output (every seed's when seeds train together).
HISTORY = run_file("history.csv")


def train_histories():
    """The train rule's outputs: one seed's history, or every seed's when seeds train together."""
    # with seed_batching, the same seeds for every dataset (checked by validate_config)
    if config["seed_batching"]:
        return expand(HISTORY, seed=SEEDS[DATASETS[0]], allow_missing=True)
    return HISTORY


def train_pattern(pattern):
    """A per-seed log path of the train rule; one path for all seeds when seeds train together."""
    if config["seed_batching"]:
        return pattern.replace("seed{seed}", "seeds")
    return pattern


def job_seeds(wildcards):
    """The seeds one train job trains."""
    return (
        list(SEEDS[wildcards.dataset])
        if config["seed_batching"]
        else [int(wildcards.seed)]
    )


def train_params():
    """The config values the train job reads (a change of one retrains)."""
    keys = (
        "epochs",
        "init",
        "device",
    )  # the recipe (batch size, learning rate …): the setup param
    return {k: config[k] for k in keys}


def gpus():
    """GPUs a train job requests: one when the config's device is CUDA."""
    return 1 if config["device"].startswith("cuda") else 0


def logit_files():
    """The logits of every epoch of one run: rule logits' outputs (patterns)."""
    return expand(
        run_file("logits/epoch{epoch:03d}.npz"), epoch=EPOCHS, allow_missing=True
    )
