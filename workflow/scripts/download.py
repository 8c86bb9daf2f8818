from _common import run


def main(sm):
    import hashlib
    from pathlib import Path

    from trustcal.data import download
    from trustcal.io import atomic_path

    files = download(
        sm.wildcards.dataset, sm.params.data_dir,
        verify_checksums=sm.params.verify_checksums, allow_download=sm.params.download,
    )
    with atomic_path(sm.output.manifest) as tmp, open(tmp, "w") as fh:
        fh.write("file\tbytes\tmd5\n")
        for f in files:
            fh.write(f"{f}\t{Path(f).stat().st_size}\t{hashlib.md5(Path(f).read_bytes()).hexdigest()}\n")


run(snakemake, main)  # noqa: F821
