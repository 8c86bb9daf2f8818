from _common import run


def main(sm):
    from trustcal.reporting.digest import add_worse_on_test_numbers, recorded_warnings
    from trustcal.settings import Settings
    from trustcal.stages import load_logits, scores_stage

    settings = Settings.from_config(sm.params.settings)
    with recorded_warnings(sm.log[0], sm.rule, sm.wildcards) as records:  # also as records, for the digest
        scores_stage(sm.input.logits, sm.input.calibrators, dict(sm.output.items()), settings)
        if records:
            import pandas as pd

            test = [load_logits(p)["test_logits"].shape for p in sm.input.logits]
            samples, classes = max(s[0] for s in test), test[0][1]
            add_worse_on_test_numbers(records, pd.read_csv(sm.output.scores), samples=samples, classes=classes)


run(snakemake, main)  # noqa: F821
