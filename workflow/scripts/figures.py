from _common import run


def main(sm):
    from trustcal.figures import paper_figures

    paper_figures(
        sm.wildcards.dataset, sm.input.trust, sm.input.history,
        trust_grid_paths=sm.output.trust_grid, loss_paths=sm.output.loss_curves,
    )


run(snakemake, main)  # noqa: F821
