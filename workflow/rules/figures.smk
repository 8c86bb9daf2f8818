# Stage 7: the paper's figures, from the tidy tables of every seed.


rule figures:
    input:
        trust=expand(RUN + "/trust.csv", seed=SEEDS, allow_missing=True),
        history=expand(RUN + "/history.csv", seed=SEEDS, allow_missing=True),
    output:
        trust_grid=multiext(RESULTS + "/figures/{dataset}/trust_grid", ".png", ".pdf"),
        loss_curves=multiext(RESULTS + "/figures/{dataset}/loss_curves", ".png", ".pdf"),
    log:
        LOGS + "/figures/{dataset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/figures.py"


localrules:
    figures,
