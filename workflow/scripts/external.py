from _common import run


def main(sm):
    import logging
    from pathlib import Path

    from trustcal.assessment import WherePossible, assess_to_dir
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.predictions import ReadOptions
    from trustcal.reporting.tables import MetricParams, SweepParams

    opts = dict(sm.params.options)
    source, history, title = opts.pop("path"), opts.pop("history", None), opts.pop("title", sm.wildcards.name)
    result = assess_to_dir(
        [source],
        Path(sm.output.summary).parent,
        ReadOptions(**opts),
        TrustParams(**sm.params.trust),
        MetricParams(**{**sm.params.metrics, "ece_bins": tuple(sm.params.metrics["ece_bins"])}),
        SweepParams(clusters=tuple(sm.params.sweep["clusters"]), epochs=tuple(sm.params.sweep["epochs"])),
        t_min=sm.params.calibration["t_min"],
        t_max=sm.params.calibration["t_max"],
        calibrators=WherePossible(dict.fromkeys(["temperature", *sm.params.calibration["methods"]])),
        bootstrap=BootstrapParams(**sm.params.bootstrap),
        history=history,
        title=title,
    )
    for w in result.warnings:
        logging.warning("[%s] %s", w.code, w)
    logging.info("assessed %s:\n%s", source, result.summary())


run(snakemake, main)  # noqa: F821
