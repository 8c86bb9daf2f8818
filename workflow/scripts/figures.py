from _common import run


def main(sm):
    from trustcal.reporting.figures import render_figures

    render_figures(
        sm.wildcards.dataset, dict(sm.input.items()), dict(sm.output.items()),
        clusters=getattr(sm.params, "clusters", None),
    )


run(snakemake, main)  # noqa: F821
