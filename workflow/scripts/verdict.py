from _common import run


def main(sm):
    from trustcal.reporting.verdict import verdict_stage

    verdict_stage(
        sm.input.trust,
        sm.input.history,
        sm.output.markdown,
        sm.output.table,
        dict(sm.params.settings),
        out_html=sm.output.html,
        bootstrap_paths=sm.input.bootstrap,
    )


run(snakemake, main)  # noqa: F821
