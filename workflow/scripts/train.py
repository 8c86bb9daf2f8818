import sys

from _common import run


def main(sm):
    from trustcal.training.cpu import start_cpu_job

    threads = start_cpu_job(sm.threads)  # before PyTorch is loaded: OpenMP reads its wait policy then

    from trustcal.training.engine import flush_denormals_in_this_process, keep_freed_memory_in_process

    flush_denormals_in_this_process()  # first, before PyTorch starts its worker threads
    keep_freed_memory_in_process()

    from trustcal.registry import setup_of
    from trustcal.stages import train_stage

    histories = sm.output.history
    train_stage(
        setup_of(sm.params.setup),
        sm.params.seeds,
        sm.params.train,
        sm.input.splits,
        sm.params.checkpoint_dirs,
        [histories] if isinstance(histories, str) else list(histories),
        threads=threads,
        progress=sys.stderr.isatty(),
        deterministic=sm.config.get("deterministic", True),  # not a param: it changes nothing on a CPU
    )


run(snakemake, main, progress=True)  # noqa: F821
