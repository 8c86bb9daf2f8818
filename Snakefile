# trustcal: reproduce Ouattara, "Quantifying Calibration Error in Modern Neural
# Networks through Evidence Based Theory", end to end.
#
#   snakemake --cores 2                       # the paper's configuration
#   snakemake --cores 2 --config epochs=3 'datasets=[mnist]'
#   snakemake --report report.html            # after a run, with its --configfile/--config: figures and verdict in one file
#
# The workflow itself is workflow/Snakefile (the layout the Snakemake workflow
# catalog and snakedeploy expect): the configfile (config.yaml), the container,
# the rule files of workflow/rules/ (one per stage: download → prepare → train
# → logits → calibrate → trust / scores → figures → verdict) and `rule all`.


include: "workflow/Snakefile"


# Snakemake keeps the default target of the main Snakefile only (an include's
# `default_target: True` is undone when the include returns): name it here.
# rules.all.rule.name is `all`, or its new name when this workflow is imported as a
# module (`use rule * from trustcal as trustcal_*`: `trustcal_all`).
workflow.default_target = rules.all.rule.name
