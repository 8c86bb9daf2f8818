from _common import run


def main(sm):
    from trustcal.reporting.figures import render_figures

    render_figures(  # the params are the config values the figures read (figure_params in figures_helpers.smk)
        sm.wildcards.dataset,
        dict(sm.input.items()),
        dict(sm.output.items()),
        **dict(sm.params.items()),
    )


run(snakemake, main)  # noqa: F821
