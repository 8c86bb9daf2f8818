from _common import run


def main(sm):
    from trustcal.stages import trust_stage
    from trustcal.trust import TrustParams

    trust_stage(sm.input.logits, sm.input.calibration, sm.output.table, TrustParams(**sm.params.trust))


run(snakemake, main)  # noqa: F821
