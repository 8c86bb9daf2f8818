# trustcal: reproduce Ouattara, "Quantifying Calibration Error in Modern Neural
# Networks through Evidence Based Theory", end to end.
#
#   snakemake --cores 2                       # the paper's configuration
#   snakemake --cores 2 --config epochs=3 'datasets=[mnist]'
#   snakemake --report report.html            # after a run: figures and verdict in one file
#
# Stages (one rule file each, in workflow/rules/): download → prepare → train
# → logits → calibrate → trust / scores → figures → verdict (report.smk).

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


# --sdm apptainer (with conda): every job's conda environment (envs/) inside this
# image; `snakemake --containerize` writes a Dockerfile with the environments built in.
container: "docker://condaforge/miniforge3:24.11.3-0"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/trust.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/external.smk"


rule all:
    default_target: True
    input:
        all_targets(),
