# Stage 6: trust opinions (docs/method.md §3) and scores (docs/method.md §5) per epoch, for
# the raw model (calibrator `none`) and every calibrator, with bootstrap intervals over
# resamples of the test set. Separate rules, so a change of a trust parameter reruns
# only the trust tables and figures.


rule trust:
    input:
        logits=rules.logits.output,
        calibrators=calibrator_files("states"),
    output:
        trust="results/{dataset}/seed{seed}/trust.csv",
        dynamic_trust="results/{dataset}/seed{seed}/dynamic_trust.csv",
        trust_sweep="results/{dataset}/seed{seed}/trust_sweep.csv",
        selective="results/{dataset}/seed{seed}/selective.csv",
    log:
        "results/logs/trust/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/trust/{dataset}/seed{seed}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        # recorded: 210 MB + 1.4 MB an epoch and calibration state; 0.2 s an epoch and state
        mem_mb=scaled(500, per_epoch=3, per_state=True),
        runtime=scaled(5, per_epoch=0.01, per_state=True),
    params:
        settings=settings_config("clusters", "trust", "bootstrap"),
        code=package_code("trust.py"),
    script:
        "../scripts/trust.py"


rule scores:
    input:
        logits=rules.logits.output,
        calibrators=calibrator_files("states"),
    output:
        scores="results/{dataset}/seed{seed}/scores.csv",
        trust_spectrum="results/{dataset}/seed{seed}/trust_spectrum.csv",
        reliability="results/{dataset}/seed{seed}/reliability.csv",
        trust_density="results/{dataset}/seed{seed}/trust_density.csv",
        smooth_reliability="results/{dataset}/seed{seed}/smooth_reliability.csv",
        paired="results/{dataset}/seed{seed}/paired.npz",
    log:
        "results/logs/scores/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/scores/{dataset}/seed{seed}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        # recorded: 300 MB + 3.4 MB an epoch and calibration state; 0.5 s an epoch and state
        # (before the paired replicates, about 1 MB more an epoch and state)
        mem_mb=scaled(500, per_epoch=8, per_state=True),
        runtime=scaled(5, per_epoch=0.02, per_state=True),
    params:
        settings=settings_config("metrics", "bootstrap"),
        code=package_code("scores.py"),
    script:
        "../scripts/scores.py"


rule trust_bootstrap:
    input:
        logits=rules.logits.output,
        temperature=calibrator_file("states", "temperature"),
    output:
        replicates="results/{dataset}/seed{seed}/trust_bootstrap.npz",
    log:
        "results/logs/trust_bootstrap/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/trust_bootstrap/{dataset}/seed{seed}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        # recorded: 175 MB + 4 MB an epoch; 0.35 s an epoch (the raw model and temperature scaling)
        mem_mb=scaled(500, per_epoch=8),
        runtime=scaled(5, per_epoch=0.02),
    params:
        settings=settings_config("clusters", "trust", "bootstrap"),
        code=package_code("trust_bootstrap.py"),
    script:
        "../scripts/trust_bootstrap.py"
