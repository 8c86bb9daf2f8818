# Stage 1–2: fetch the raw dataset (torchvision layout) and split it as the paper did.


rule download:
    output:
        manifest="results/data/{dataset}/raw_manifest.tsv",
    params:
        data_dir=config["data_dir"],
        download=config["download"],
        verify_checksums=lambda w: per_dataset(config, "verify_checksums", w.dataset),
    log:
        "results/logs/download/{dataset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        CONDA_ENV
    script:
        "../scripts/download.py"


rule prepare:
    input:
        manifest=rules.download.output.manifest,
    output:
        splits="results/data/{dataset}/splits.npz",
    params:
        data_dir=config["data_dir"],
        validation_split=config["validation_split"],
        verify_checksums=lambda w: per_dataset(config, "verify_checksums", w.dataset),
    log:
        "results/logs/prepare/{dataset}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        CONDA_ENV
    script:
        "../scripts/prepare.py"


localrules:
    download,
