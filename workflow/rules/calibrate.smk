# Stage 5: temperature scaling per epoch (docs/method.md §2).


rule calibrate:
    input:
        logits=logit_files,
    output:
        table="results/{dataset}/seed{seed}/calibration.csv",
    params:
        calibration=config["calibration"],
    log:
        "results/logs/calibrate/{dataset}/seed{seed}.log",
    group:
        "evaluate"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    conda:
        CONDA_ENV
    script:
        "../scripts/calibrate.py"
