from _common import run


def main(sm):
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.reporting.tables import SweepParams
    from trustcal.stages import trust_stage

    sweep = SweepParams(clusters=tuple(sm.params.sweep["clusters"]), epochs=tuple(sm.params.sweep["epochs"]))
    trust_stage(
        sm.input.logits,
        sm.input.calibrators,
        dict(sm.output.items()),
        TrustParams(**sm.params.trust),
        sweep,
        BootstrapParams(**sm.params.bootstrap),
    )


run(snakemake, main)  # noqa: F821
