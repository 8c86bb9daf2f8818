# Stage 7: the paper's figures, from the tidy tables of every seed.


rule figures:
    input:
        trust=expand(rules.trust.output.trust, seed=SEEDS, allow_missing=True),
        history=expand("results/{dataset}/seed{seed}/history.csv", seed=SEEDS, allow_missing=True),
    output:
        trust_grid=multiext("results/figures/{dataset}/trust_grid", ".png", ".pdf"),
        loss_curves=multiext("results/figures/{dataset}/loss_curves", ".png", ".pdf"),
    log:
        "results/logs/figures/{dataset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    script:
        "../scripts/figures.py"


localrules:
    figures,
