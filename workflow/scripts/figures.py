from _common import run


def main(sm):
    from trustcal.stages import figures_stage

    # the params are the config values the figures read (figure_params in figures_helpers.smk), and the
    # digest of the code this job runs (`code`, package_code in common.smk), which only reruns the job
    options = {name: value for name, value in sm.params.items() if name != "code"}
    figures_stage(sm.wildcards.dataset, dict(sm.input.items()), dict(sm.output.items()), options)


run(snakemake, main)  # noqa: F821
