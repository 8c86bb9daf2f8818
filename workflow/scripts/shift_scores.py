from _common import run


def main(sm):
    from trustcal.settings import Settings
    from trustcal.shift_stages import shift_scores_stage

    settings = Settings.from_config(sm.params.settings)
    keys = dict(run=sm.wildcards.dataset, seed=int(sm.wildcards.seed), set=sm.wildcards.shiftset)
    shift_scores_stage(
        sm.input.logits, sm.input.run_logits, sm.input.calibrators, sm.output.scores, settings, keys, sm.output.curves
    )


run(snakemake, main)  # noqa: F821
