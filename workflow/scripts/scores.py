from _common import run


def main(sm):
    from trustcal.stages import scores_stage

    scores_stage(sm.input.logits, sm.input.calibration, sm.output.table, **sm.params.metrics)


run(snakemake, main)  # noqa: F821
