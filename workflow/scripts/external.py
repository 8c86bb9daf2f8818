from _common import run


def main(sm):
    import logging
    from pathlib import Path

    from trustcal.assessment import assess_to_dir
    from trustcal.predictions import ReadOptions
    from trustcal.reporting.digest import recorded_warnings
    from trustcal.settings import Settings

    opts = dict(sm.params.options)
    source, history, title = opts.pop("path"), opts.pop("history", None), opts.pop("title", sm.wildcards.name)
    result = assess_to_dir(
        [source],
        Path(sm.output.summary).parent,
        ReadOptions(**opts),
        Settings.from_config(sm.params.settings),  # calibrators: temperature and calibration.methods, where possible
        history=history,
        title=title,
    )
    with recorded_warnings(sm.log[0], sm.rule, sm.wildcards):  # also as records, for the digest
        for w in result.warnings:
            logging.warning("[%s] %s", w.code, w)
    logging.info("assessed %s:\n%s", source, result.summary())


run(snakemake, main)  # noqa: F821
