from _common import run


def main(sm):
    from trustcal.settings import Settings
    from trustcal.shift_stages import shift_clean_stage

    settings = Settings.from_config(sm.params.settings)
    keys = dict(run=sm.wildcards.dataset, seed=int(sm.wildcards.seed))
    shift_clean_stage(
        sm.input.logits, sm.input.calibrators, sm.input.history, sm.output.scores, settings, sm.params.shift, keys
    )


run(snakemake, main)  # noqa: F821
