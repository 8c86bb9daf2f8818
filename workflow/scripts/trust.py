from _common import run


def main(sm):
    from trustcal.settings import Settings
    from trustcal.stages import trust_stage

    settings = Settings.from_config(sm.params.settings)
    trust_stage(sm.input.logits, sm.input.calibrators, dict(sm.output.items()), settings)


run(snakemake, main)  # noqa: F821
