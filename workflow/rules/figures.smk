# Stage 7: figures, from the tidy tables of every seed (trustcal.reporting.figures).
#
# Every figure is declared once, in trustcal/reporting/figures/registry.py
# (FIGURES): the rule that draws it, the tables it reads, its report section and
# caption, the config values it uses. The inputs, outputs and params below come
# from there (figures_helpers.smk).
#
# Two jobs per dataset, split by what they read, so that a trust parameter
# (clusters, trust: …) redraws only the trust figures: `figures` reads
# trust.csv / trust_sweep.csv / history.csv, `metric_figures` reads the score
# tables. Each job draws several figures (one Python start-up each).
# Every PNG is flagged for `snakemake --report`, with a caption in
# workflow/report/<figure>.rst; the PDF beside it is for papers.


include: "figures_helpers.smk"


rule figures:
    input:
        **figure_inputs("figures"),
    output:
        **figure_outputs("figures"),
    log:
        "results/logs/figures/{dataset}.log",
    benchmark:
        "results/benchmarks/figures/{dataset}.tsv"
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1000),  # recorded: 300 MB, 15-25 s
        runtime=scaled(10),
    params:
        **figure_params("figures"),
        code=package_code("figures.py"),
    script:
        "../scripts/figures.py"


rule metric_figures:
    input:
        **figure_inputs("metric_figures"),
    output:
        **figure_outputs("metric_figures"),
    log:
        "results/logs/metric_figures/{dataset}.log",
    benchmark:
        "results/benchmarks/metric_figures/{dataset}.tsv"
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1000),  # recorded: 300 MB, 30-40 s
        runtime=scaled(10),
    params:
        **figure_params("metric_figures"),
        code=package_code("figures.py"),
    script:
        "../scripts/figures.py"
