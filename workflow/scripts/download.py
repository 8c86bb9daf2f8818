from _common import run


def main(sm):
    from trustcal.data.staging import download, write_manifest
    from trustcal.registry import dataset_spec

    verified = download(
        dataset_spec(sm.wildcards.dataset, sm.params.dataset),
        sm.params.data_dir,
        verify_checksums=sm.params.verify_checksums,
        allow_download=sm.params.download,
    )
    write_manifest(verified, sm.output.manifest)


run(snakemake, main)  # noqa: F821
