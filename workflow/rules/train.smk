# Stage 3–4: train with a checkpoint per epoch, then the logits of every epoch.
#
# Checkpoints live in {run}/checkpoints/ but are not declared outputs: Snakemake
# deletes a job's declared outputs before rerunning it, and training must
# resume from them when `epochs` is raised or a run was killed. history.csv is
# the declared output; the engine drops checkpoints of another configuration.


rule train:
    input:
        splits=rules.prepare.output.splits,
    output:
        history="results/{dataset}/seed{seed}/history.csv",
    params:
        train=train_params(),
        checkpoint_dir=lambda w: run_file("checkpoints", w.dataset, w.seed),
    log:
        "results/logs/train/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{dataset}/seed{seed}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=lambda w: int(30 + MINUTES_PER_EPOCH[w.dataset] * config["epochs"]),
        gpu=gpus(),
    conda:
        CONDA_ENV
    script:
        "../scripts/train.py"


rule logits:
    input:
        splits=rules.prepare.output.splits,
        history=rules.train.output.history,
    output:
        logit_files(),
    params:
        checkpoint_dir=lambda w: run_file("checkpoints", w.dataset, w.seed),
    log:
        "results/logs/logits/{dataset}/seed{seed}.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=lambda w: int(10 + 0.1 * config["epochs"]),
    conda:
        CONDA_ENV
    script:
        "../scripts/logits.py"
