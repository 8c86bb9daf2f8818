from _common import run


def main(sm):
    from trustcal.bootstrap import BootstrapParams
    from trustcal.stages import trust_bootstrap_stage
    from trustcal.trust import TrustParams

    trust_bootstrap_stage(sm.input.logits, sm.input.calibration, sm.output.replicates,
                          TrustParams(**sm.params.trust), BootstrapParams(**sm.params.bootstrap))


run(snakemake, main)  # noqa: F821
