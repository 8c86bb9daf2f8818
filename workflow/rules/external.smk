# Someone else's predictions (config `external:`), assessed like our own runs:
# the same trust and score tables and figures, under results/external/{name}/,
# by the code of `trustcal assess` (trustcal.assessment). One job per prediction set.
# The files of each set are listed when the workflow is parsed (EXTERNAL_FILES), so a
# bad path stops the run before any job starts and a new or changed prediction file
# reruns its set.


include: "external_helpers.smk"


rule external:
    input:
        predictions=lambda w: EXTERNAL_FILES[w.name],
    output:
        trust="results/external/{name}/trust.csv",
        dynamic_trust="results/external/{name}/dynamic_trust.csv",
        trust_sweep="results/external/{name}/trust_sweep.csv",
        selective="results/external/{name}/selective.csv",
        scores="results/external/{name}/scores.csv",
        trust_spectrum="results/external/{name}/trust_spectrum.csv",
        reliability="results/external/{name}/reliability.csv",
        trust_density="results/external/{name}/trust_density.csv",
        smooth_reliability="results/external/{name}/smooth_reliability.csv",
        summary="results/external/{name}/summary.txt",
        warnings="results/external/{name}/warnings.txt",
        figures=directory("results/external/{name}/figures"),
    log:
        "results/logs/external/{name}.log",
    benchmark:
        "results/benchmarks/external/{name}.tsv"
    wildcard_constraints:
        name=r"[^/]+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=scaled(4000),  # not yet recorded: an assessment does what trust and scores do
        runtime=scaled(30),
    params:
        options=lambda w: EXTERNAL[w.name],
        settings=settings_config(
            "clusters", "trust", "metrics", "bootstrap", "calibration"
        ),
        code=package_code("external.py"),
    script:
        "../scripts/external.py"
