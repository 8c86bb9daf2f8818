from _common import run


def main(sm):
    from trustcal.data.splits import prepare
    from trustcal.registry import dataset_spec

    prepare(
        dataset_spec(sm.wildcards.dataset, sm.params.dataset),
        sm.params.data_dir,
        sm.output.splits,
        validation_split=sm.params.validation_split,
        verify_checksums=sm.params.verify_checksums,
    )


run(snakemake, main)  # noqa: F821
