# Stage 5: post-hoc calibration per epoch (docs/method.md §2). One job per
# calibrator, each cached on its own: adding a method to calibration.methods
# fits that method only. calibration.csv gathers every calibrator's rows.


include: "calibrate_helpers.smk"


rule calibrate:
    input:
        logits=rules.logits.output,
    output:
        states="results/{dataset}/seed{seed}/calibration/{calibrator}.npz",
        table="results/{dataset}/seed{seed}/calibration/{calibrator}.csv",
    log:
        "results/logs/calibrate/{dataset}/seed{seed}/{calibrator}.log",
    benchmark:
        "results/benchmarks/calibrate/{dataset}/seed{seed}/{calibrator}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        # recorded: 150-240 MB + up to 6 MB an epoch; up to 0.7 s an epoch (one calibrator)
        mem_mb=scaled(500, per_epoch=10),
        runtime=scaled(5, per_epoch=0.05),
    params:
        calibration=lambda w: calibration_params(w.calibrator),
        code=package_code("calibrate.py"),
    script:
        "../scripts/calibrate.py"


rule calibration_table:
    input:
        tables=calibrator_files("table"),
    output:
        table="results/{dataset}/seed{seed}/calibration.csv",
    log:
        "results/logs/calibration_table/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/calibration_table/{dataset}/seed{seed}.tsv"
    group:
        "evaluate"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(500),  # recorded: 160 MB, 2 s
        runtime=scaled(5),
    params:
        code=package_code("calibration_table.py"),
    script:
        "../scripts/calibration_table.py"
