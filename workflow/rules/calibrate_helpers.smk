# The calibrate stage's helpers (calibrate.smk includes this file): the check of
# calibration.options, a job's calibration parameters, the calibrators' files.
# A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.


def _check_calibration_options():
    """Unknown options of a calibrator stop the run before any job starts."""
    from trustcal.calibration.methods import calibrator_class

    for method, options in config["calibration"]["options"].items():
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
    """The calibration settings one calibrate job reads (method is the job's calibrator)."""
    cal = config["calibration"]
    return dict(
        method=method,
        fit_on=cal["fit_on"],
        t_min=cal["t_min"],
        t_max=cal["t_max"],
        options=cal["options"].get(method, {}),
    )


def calibrator_file(output, calibrator):
    """Rule calibrate's `output` ("states" or "table") for one calibrator: a per-run pattern."""
    return getattr(rules.calibrate.output, output).replace("{calibrator}", calibrator)


def calibrator_files(output):
    """Rule calibrate's `output` for every calibrator fitted in this run (FITTED_METHODS)."""
    return [calibrator_file(output, c) for c in FITTED_METHODS]
