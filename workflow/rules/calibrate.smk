# Stage 5: temperature scaling per epoch (SPEC §2).


rule calibrate:
    input:
        logits=logit_files,
    output:
        table=RUN + "/calibration.csv",
    params:
        calibration=config["calibration"],
    log:
        LOGS + "/calibrate/{dataset}/seed{seed}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    script:
        "../scripts/calibrate.py"
