# Stage 6: trust opinions (SPEC §3) and scores (SPEC §5) per epoch, before and
# after calibration. Separate rules, so a change of a trust parameter reruns
# only the trust tables and figures.


rule trust:
    input:
        logits=logit_files,
        calibration=rules.calibrate.output.table,
    output:
        table="results/{dataset}/seed{seed}/trust.csv",
    params:
        trust=dict(clusters=config["clusters"], **config["trust"]),
    log:
        "results/logs/trust/{dataset}/seed{seed}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    conda:
        CONDA_ENV
    script:
        "../scripts/trust.py"


rule scores:
    input:
        logits=logit_files,
        calibration=rules.calibrate.output.table,
    output:
        table="results/{dataset}/seed{seed}/scores.csv",
    params:
        metrics=config["metrics"],
    log:
        "results/logs/scores/{dataset}/seed{seed}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    conda:
        CONDA_ENV
    script:
        "../scripts/scores.py"
