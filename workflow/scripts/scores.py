from _common import run


def main(sm):
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.reporting.tables import MetricParams
    from trustcal.stages import scores_stage

    params = MetricParams(**{**sm.params.metrics, "ece_bins": tuple(sm.params.metrics["ece_bins"])})
    scores_stage(
        sm.input.logits, sm.input.calibrators, dict(sm.output.items()), params, BootstrapParams(**sm.params.bootstrap)
    )


run(snakemake, main)  # noqa: F821
