from _common import run


def main(sm):
    from trustcal.settings import Settings
    from trustcal.stages import scores_stage

    settings = Settings.from_config(sm.params.settings)
    scores_stage(sm.input.logits, sm.input.calibrators, dict(sm.output.items()), settings)


run(snakemake, main)  # noqa: F821
