from _common import run


def main(sm):
    from trustcal.stages import train_stage

    train_stage(
        sm.wildcards.dataset, sm.wildcards.seed, sm.params.train, sm.input.splits,
        sm.params.checkpoint_dir, sm.output.history, threads=sm.threads,
    )


run(snakemake, main)  # noqa: F821
