# Stage 3–4: train with a checkpoint per epoch, then the logits of every epoch.
#
# Checkpoints live in {run}/checkpoints/ but are not declared outputs: Snakemake
# deletes a job's declared outputs before rerunning it, and training must
# resume from them when `epochs` is raised or a run was killed. history.csv is
# the declared output; the engine drops checkpoints of another configuration,
# and resumes before a missing or damaged one (each carries a content digest),
# rewriting it and the later ones: rerunning train rewrites history.csv, so
# everything downstream reruns.
# With `seed_batching: true` one job trains all seeds of a dataset together
# (one stacked model) and writes every seed's own files.


include: "train_helpers.smk"


rule train:
    input:
        splits=data_file("splits.npz"),
    output:
        history=train_histories(),
    log:
        train_pattern("results/logs/train/{dataset}/seed{seed}.log"),
    benchmark:
        train_pattern("results/benchmarks/train/{dataset}/seed{seed}.tsv")
    conda:
        "../../envs/train.yaml"
    threads: 2
    resources:
        mem_mb=lambda w, attempt: attempt * (3000 + 1000 * len(job_seeds(w))),
        runtime=lambda w, attempt: attempt
        * int(30 + minutes_per_epoch(w) * config["epochs"] * len(job_seeds(w))),
        gpu=gpus(),
    params:
        train=train_params(),
        setup=run_setup,
        seeds=job_seeds,
        checkpoint_dirs=lambda w: [
            run_file("checkpoints", w.dataset, s) for s in job_seeds(w)
        ],
        code=package_code("train.py"),
    script:
        "../scripts/train.py"


rule logits:
    input:
        splits=data_file("splits.npz"),
        history=HISTORY,
    output:
        logit_files(),
    log:
        "results/logs/logits/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/logits/{dataset}/seed{seed}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/train.yaml"
    threads: 2
    resources:
        # recorded: 1,000-1,200 MB whatever the epochs; CIFAR-10 8 s an epoch, MNIST < 1 s
        mem_mb=scaled(2000),
        runtime=scaled(5, per_epoch=0.25),
    params:
        checkpoint_dir=lambda w: run_file("checkpoints", w.dataset, w.seed),
        setup=run_setup,
        code=package_code("logits.py"),
    script:
        "../scripts/logits.py"
