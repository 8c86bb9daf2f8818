from _common import run


def main(sm):
    from trustcal.reporting.digest import add_calibration_numbers, recorded_warnings
    from trustcal.stages import calibrate_stage

    params = dict(sm.params.calibration)
    params.pop("source", None)  # a user calibrator's code digest: there to rerun this job when the code changes
    with recorded_warnings(sm.log[0], sm.rule, sm.wildcards) as records:  # also as records, for the digest
        table = calibrate_stage(sm.input.logits, sm.output.states, sm.output.table, **params)
        add_calibration_numbers(records, table)


run(snakemake, main)  # noqa: F821
