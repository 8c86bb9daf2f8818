from _common import run


def main(sm):
    from trustcal.settings import Settings
    from trustcal.stages import trust_bootstrap_stage

    settings = Settings.from_config(sm.params.settings)
    trust_bootstrap_stage(sm.input.logits, sm.input.temperature, sm.output.replicates, settings)


run(snakemake, main)  # noqa: F821
