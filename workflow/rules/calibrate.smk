# Stage 5: temperature scaling per epoch (docs/method.md §2).


rule calibrate:
    input:
        logits=logit_files,
    output:
        table="results/{dataset}/seed{seed}/calibration.csv",
    log:
        "results/logs/calibrate/{dataset}/seed{seed}.log",
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        calibration=config["calibration"],
    script:
        "../scripts/calibrate.py"
