# Stage 8: the reproduction verdict (trustcal.reporting.verdict) and the HTML report.
#
#   snakemake --cores 2                         # every table, figure and results/reproduction.md
#   snakemake --report report.html              # then the browsable report of a finished run (with the
#                                               # run's --configfile/--config; `make report` after `make reproduce`)
#
# The verdict compares each claim of the paper with every run's trust.csv,
# history.csv and trust_bootstrap.npz; one job for all datasets and seeds.


report: "../report/workflow.rst"


rule verdict:
    input:
        trust=all_seed_files(rules.trust.output.trust),
        history=all_seed_files(HISTORY),
        bootstrap=all_seed_files(rules.trust_bootstrap.output.replicates),
        # after the jobs whose warnings the verdict digests (section Warnings; calibrate runs before trust)
        scores=all_seed_files(rules.scores.output.scores),
        claims=config["claims"],  # a user's claims files (docs/claims.md)
    output:
        markdown="results/reproduction.md",
        html=report(
            "results/reproduction.html",
            caption="../report/verdict.rst",
            category="0 Reproduction verdict",
            labels={"file": "reproduction.html"},
        ),
        table=report(
            "results/reproduction.csv",
            caption="../report/verdict.rst",
            category="0 Reproduction verdict",
            labels={"file": "reproduction.csv"},
        ),
        # the run at a glance: the report's landing page (report/workflow.rst) includes it
        summary=report(
            "results/summary.html",
            caption="../report/summary.rst",
            category="0 Reproduction verdict",
            labels={"file": "summary.html"},
        ),
        claims=expand(
            "results/claims/{name}.{ext}",
            name=[Path(f).stem for f in config["claims"]],
            ext=["md", "csv", "html"],
        ),
    log:
        "results/logs/verdict/verdict.log",
    benchmark:
        "results/benchmarks/verdict/verdict.tsv"
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1000),  # recorded: 160 MB, 2 s
        runtime=scaled(5),
    params:
        settings=settings_config(
            "epochs", "clusters", "trust", "calibration", "bootstrap", "setups"
        ),
        configuration=CONFIGURATION,  # the configuration judged, named in the verdict
        setups={ds: setup_params(config, ds) for ds in DATASETS},  # each run's dataset, network, recipe
        code=package_code("verdict.py"),
    script:
        "../scripts/verdict.py"
