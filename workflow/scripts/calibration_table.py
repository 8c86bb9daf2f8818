from _common import run


def main(sm):
    from trustcal.stages import calibration_table_stage

    calibration_table_stage(sm.input.tables, sm.output.table)


run(snakemake, main)  # noqa: F821
