from _common import run


def main(sm):
    from trustcal.shift_stages import shift_table_stage

    shift_table_stage(sm.input.tables, sm.output.table)
    if "curves" in sm.output.keys():  # shift_ood_table: the sets' histograms and ROC curves too
        shift_table_stage(sm.input.curves, sm.output.curves)


run(snakemake, main)  # noqa: F821
