from _common import run


def main(sm):
    from trustcal.reporting.figures import render_figures

    # the params are the config values the figures read (figure_params in figures_helpers.smk), and the
    # digest of the code this job runs (`code`, package_code in common.smk), which only reruns the job
    options = {name: value for name, value in sm.params.items() if name != "code"}
    render_figures(sm.wildcards.dataset, dict(sm.input.items()), dict(sm.output.items()), **options)


run(snakemake, main)  # noqa: F821
