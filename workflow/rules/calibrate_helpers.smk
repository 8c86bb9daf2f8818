# The calibrate stage's helpers (calibrate.smk includes this file): the check of
# calibration.options, a job's calibration parameters, the calibrators' files.
# A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.


def _check_calibration_options():
    """Unknown options of a calibrator stop the run before any job starts (those of a calibrator of your
    own, by its import path, are checked against its constructor with the configuration).
    """
    from trustcal.calibration.methods import calibrator_class
    from trustcal.imports import is_import_path

    for method, options in config["calibration"]["options"].items():
        if is_import_path(method):
            continue
        accepted = calibrator_class(method).options
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            where = config_source(CONFIG_LAYERS, ("calibration", "options", method))
            raise WorkflowError(
                f"{where}: calibration.options.{method}: unknown option(s) {', '.join(unknown)}; "
                f"{method} accepts: {', '.join(accepted) or 'none'}"
            )


_check_calibration_options()


def calibration_params(method):
    """The calibration settings one calibrate job reads (method is the job's calibrator); for a calibrator of
    your own, also its module's sha256, so that a change to its code refits it."""
    from trustcal.calibration.user import source_digest
    from trustcal.imports import is_import_path

    cal = config["calibration"]
    params = dict(
        method=method,
        fit_on=cal["fit_on"],
        t_min=cal["t_min"],
        t_max=cal["t_max"],
        options=cal["options"].get(method, {}),
    )
    if is_import_path(method):
        params["source"] = source_digest(method)
    return params


def calibrator_file(output, calibrator):
    """Rule calibrate's `output` ("states" or "table") for one calibrator: a per-run pattern."""
    return getattr(rules.calibrate.output, output).replace("{calibrator}", calibrator)


def calibrator_files(output):
    """Rule calibrate's `output` for every calibrator fitted in this run (FITTED_METHODS)."""
    return [calibrator_file(output, c) for c in FITTED_METHODS]
