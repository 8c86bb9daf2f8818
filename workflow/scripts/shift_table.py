from _common import run


def main(sm):
    from trustcal.shift_stages import shift_table_stage

    shift_table_stage(sm.input.tables, sm.output.table)


run(snakemake, main)  # noqa: F821
