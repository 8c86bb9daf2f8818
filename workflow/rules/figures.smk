# Stage 7: figures, from the tidy tables of every seed (trustcal.reporting.figures).
#
# Two jobs per dataset, split by what they read, so that a trust parameter
# (clusters, trust: …) redraws only the trust figures: `figures` reads
# trust.csv / trust_sweep.csv / history.csv, `metric_figures` reads the score
# tables. Each job draws several figures (one Python start-up each).
# Every PNG is flagged for `snakemake --report`, with a caption in
# workflow/report/<figure>.rst; the PDF beside it is for papers. The helpers
# figure_outputs() and seed_files() are in common.smk.


rule figures:
    input:
        trust=seed_files("trust.csv"),
        trust_sweep=seed_files("trust_sweep.csv"),
        history=seed_files("history.csv"),
    output:
        trust_grid=figure_outputs("trust_grid", "1 Paper figures"),
        loss_curves=figure_outputs("loss_curves", "1 Paper figures"),
        network_opinion=figure_outputs("network_opinion", "2 Metrics per epoch"),
        opinion_triangle=figure_outputs("opinion_triangle", "4 Trust variants"),
        cluster_sweep=figure_outputs("cluster_sweep", "4 Trust variants"),
    log:
        "results/logs/figures/{dataset}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        clusters=config["clusters"],
    script:
        "../scripts/figures.py"


rule metric_figures:
    input:
        scores=seed_files("scores.csv"),
        calibration=seed_files("calibration.csv"),
        reliability=seed_files("reliability.csv"),
        trust_spectrum=seed_files("trust_spectrum.csv"),
        trust_density=seed_files("trust_density.csv"),
        history=seed_files("history.csv"),
    output:
        calibration_metrics=figure_outputs("calibration_metrics", "2 Metrics per epoch"),
        geometric_metrics=figure_outputs("geometric_metrics", "2 Metrics per epoch"),
        reliability=figure_outputs("reliability", "3 Chosen epochs"),
        trust_spectrum=figure_outputs("trust_spectrum", "3 Chosen epochs"),
        trust_density=figure_outputs("trust_density", "3 Chosen epochs"),
    log:
        "results/logs/metric_figures/{dataset}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/figures.py"
