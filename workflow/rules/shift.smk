# Trust under dataset shift (config `shift:`, off by default): each run's test images corrupted
# (CIFAR-10-C's or MNIST-C's corruptions) and out-of-distribution sets, evaluated at the epochs of
# shift.epochs with every calibrator's state of that epoch applied unchanged. One job per set at
# every step, so that adding a corruption runs its own jobs (and the run's table) only:
# shift_images (per dataset and set) → shift_logits → shift_scores (per run, seed and set) →
# shift_table / shift_ood_table (per run) → shift_figures (per run: the figures of SHIFT_FIGURES,
# trustcal/reporting/figures/shift_registry.py); shift_clean: the clean rows the sets are compared with.


include: "shift_helpers.smk"


rule shift_images:
    input:
        splits="results/data/{dataset}/splits.npz",
        other=shift_other_splits,
        official=shift_official_files,
    output:
        images="results/data/{dataset}/shift/{shiftset}.npz",
    log:
        "results/logs/shift_images/{dataset}/{shiftset}.log",
    benchmark:
        "results/benchmarks/shift_images/{dataset}/{shiftset}.tsv"
    wildcard_constraints:
        shiftset=SHIFT_SET_PATTERN,
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        # not yet recorded: a CIFAR-10-C corruption of 10,000 images at 5 severities takes minutes
        mem_mb=scaled(3000),
        runtime=scaled(60),
    params:
        shift=shift_set_params,
        code=package_code("shift_images.py"),
    script:
        "../scripts/shift_images.py"


rule shift_logits:
    input:
        splits=data_file("splits.npz"),
        history=HISTORY,
        images=shift_images_file,
    output:
        logits="results/{dataset}/seed{seed}/shift/{shiftset}/logits.npz",
    log:
        "results/logs/shift_logits/{dataset}/seed{seed}/{shiftset}.log",
    benchmark:
        "results/benchmarks/shift_logits/{dataset}/seed{seed}/{shiftset}.tsv"
    wildcard_constraints:
        shiftset=SHIFT_SET_PATTERN,
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        # not yet recorded: the logits rule's forward pass, once per epoch and severity
        mem_mb=scaled(3000),
        runtime=scaled(20),
    params:
        checkpoint_dir=lambda w: run_file("checkpoints", w.dataset, w.seed),
        setup=run_setup,
        epochs=SHIFT["epochs"],
        code=package_code("shift_logits.py"),
    script:
        "../scripts/shift_logits.py"


rule shift_scores:
    input:
        logits=rules.shift_logits.output.logits,
        run_logits=rules.logits.output,
        calibrators=calibrator_files("states"),
    output:
        scores="results/{dataset}/seed{seed}/shift/{shiftset}/scores.csv",
        curves="results/{dataset}/seed{seed}/shift/{shiftset}/curves.csv",
    log:
        "results/logs/shift_scores/{dataset}/seed{seed}/{shiftset}.log",
    benchmark:
        "results/benchmarks/shift_scores/{dataset}/seed{seed}/{shiftset}.tsv"
    wildcard_constraints:
        shiftset=SHIFT_SET_PATTERN,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        # not yet recorded: the scores rule's four metrics and the trust opinion, per severity
        mem_mb=scaled(1000, per_state=True),
        runtime=scaled(10, per_state=True),
    params:
        settings=settings_config("clusters", "trust", "bootstrap", "metrics"),
        code=package_code("shift_scores.py"),
    script:
        "../scripts/shift_scores.py"


rule shift_clean:
    input:
        logits=rules.logits.output,
        calibrators=calibrator_files("states"),
        history=HISTORY,
    output:
        scores="results/{dataset}/seed{seed}/shift/clean.csv",
    log:
        "results/logs/shift_clean/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/shift_clean/{dataset}/seed{seed}.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1000, per_state=True),  # not yet recorded
        runtime=scaled(10, per_state=True),
    params:
        settings=settings_config("clusters", "trust", "bootstrap", "metrics"),
        shift={k: SHIFT[k] for k in ("epochs", "samples", "seed")},
        code=package_code("shift_clean.py"),
    script:
        "../scripts/shift_clean.py"


rule shift_table:
    input:
        tables=lambda w: [
            *shift_clean_files(w),
            *shift_set_files(rules.shift_scores.output.scores, ood=False)(w),
        ],
    output:
        table="results/{dataset}/shift.csv",
    log:
        "results/logs/shift_table/{dataset}.log",
    benchmark:
        "results/benchmarks/shift_table/{dataset}.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(500),  # not yet recorded
        runtime=scaled(5),
    params:
        code=package_code("shift_table.py"),
    script:
        "../scripts/shift_table.py"


rule shift_ood_table:
    input:
        tables=shift_set_files(rules.shift_scores.output.scores, ood=True),
        curves=shift_set_files(rules.shift_scores.output.curves, ood=True),
    output:
        table="results/{dataset}/shift_ood.csv",
        curves="results/{dataset}/shift_ood_curves.csv",
    log:
        "results/logs/shift_ood_table/{dataset}.log",
    benchmark:
        "results/benchmarks/shift_ood_table/{dataset}.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(500),  # not yet recorded
        runtime=scaled(5),
    params:
        code=package_code("shift_table.py"),
    script:
        "../scripts/shift_table.py"


rule shift_figures:
    input:
        unpack(shift_figure_inputs),
    output:
        **shift_figure_outputs(),
    log:
        "results/logs/shift_figures/{dataset}.log",
    benchmark:
        "results/benchmarks/shift_figures/{dataset}.tsv"
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1000),  # not yet recorded: four figures, as the figures rule draws
        runtime=scaled(10),
    params:
        title=lambda w: SETUPS[w.dataset].title,
        code=package_code("shift_figures.py"),
    script:
        "../scripts/shift_figures.py"
