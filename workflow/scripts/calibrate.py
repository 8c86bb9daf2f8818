from _common import run


def main(sm):
    from trustcal.stages import calibrate_stage

    params = dict(sm.params.calibration)
    params.pop("source", None)  # a user calibrator's code digest: there to rerun this job when the code changes
    calibrate_stage(sm.input.logits, sm.output.states, sm.output.table, **params)


run(snakemake, main)  # noqa: F821
