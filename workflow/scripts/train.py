from _common import run


def main(sm):
    from trustcal.engine import flush_denormals_in_this_process

    flush_denormals_in_this_process()  # first, before PyTorch starts its worker threads

    from trustcal.stages import train_stage

    histories = sm.output.history
    train_stage(
        sm.wildcards.dataset, sm.params.seeds, sm.params.train, sm.input.splits,
        sm.params.checkpoint_dirs, [histories] if isinstance(histories, str) else list(histories),
        threads=sm.threads,
    )


run(snakemake, main, progress=True)  # noqa: F821
