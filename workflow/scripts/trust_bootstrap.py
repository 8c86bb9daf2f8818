from _common import run


def main(sm):
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.stages import trust_bootstrap_stage

    trust_bootstrap_stage(
        sm.input.logits,
        sm.input.temperature,
        sm.output.replicates,
        TrustParams(**sm.params.trust),
        BootstrapParams(**sm.params.bootstrap),
    )


run(snakemake, main)  # noqa: F821
