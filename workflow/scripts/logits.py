from _common import run


def main(sm):
    from trustcal.training.cpu import start_cpu_job

    threads = start_cpu_job(sm.threads)  # before PyTorch is loaded: OpenMP reads its wait policy then

    import torch

    from trustcal.registry import setup_of
    from trustcal.stages import logits_stage
    from trustcal.training.engine import keep_freed_memory_in_process

    keep_freed_memory_in_process()

    torch.set_num_threads(threads)
    logits_stage(setup_of(sm.params.setup), sm.input.splits, sm.params.checkpoint_dir, sm.output)


run(snakemake, main)  # noqa: F821
