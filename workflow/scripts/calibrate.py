from _common import run


def main(sm):
    from trustcal.stages import calibrate_stage

    calibrate_stage(sm.input.logits, sm.output.states, sm.output.table, **sm.params.calibration)


run(snakemake, main)  # noqa: F821
