# Stage 1–2: fetch the raw dataset (torchvision layout) and split it as the paper did.


rule download:
    input:
        user_data,
    output:
        manifest="results/data/{dataset}/raw_manifest.tsv",
    log:
        "results/logs/download/{dataset}.log",
    benchmark:
        "results/benchmarks/download/{dataset}.tsv"
    localrule: True
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=scaled(1500),  # recorded: 950 MB, 15 s (files staged; a download takes longer)
        runtime=scaled(30),
    params:
        data_dir=config["data_dir"],
        download=config["download"],
        verify_checksums=lambda w: per_dataset(config, "verify_checksums", w.dataset),
        dataset=lambda w: DATA[w.dataset],
        code=package_code("download.py"),
    script:
        "../scripts/download.py"


rule prepare:
    input:
        manifest=rules.download.output.manifest,
    output:
        splits="results/data/{dataset}/splits.npz",
    log:
        "results/logs/prepare/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare/{dataset}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=scaled(2000),  # recorded: 1,130 MB, 14 s
        runtime=scaled(10),
    params:
        data_dir=config["data_dir"],
        validation_split=config["validation_split"],
        verify_checksums=lambda w: per_dataset(config, "verify_checksums", w.dataset),
        dataset=lambda w: DATA[w.dataset],
        code=package_code("prepare.py"),
    script:
        "../scripts/prepare.py"
