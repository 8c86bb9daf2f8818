# The figure stage's helpers (figures.smk includes this file): a figure job's
# inputs, outputs and params, read from the registry (FIGURES).
# A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.


# Each table a figure reads (its name in the registry) → the rule output that writes it, per run.
RUN_TABLES = {
    "history": HISTORY,
    "calibration": rules.calibration_table.output.table,
    **dict(rules.trust.output.items()),
    **dict(rules.scores.output.items()),
}


def job_figures(job):
    """The registry's figures drawn by rule `job`."""
    return [f for f in FIGURES.values() if f.job == job]


def figure_inputs(job):
    """Table name → its file of every seed (input functions), for each table `job`'s figures read; and
    `splits`, the class names of a dataset of the user's own."""
    tables = dict.fromkeys(t for f in job_figures(job) for t in f.tables)
    return {t: seed_files(RUN_TABLES[t]) for t in tables} | {"splits": user_classes}


def figure_outputs(job):
    """Figure name → [png, pdf] for each figure of `job`; the PNG goes into the report under dataset › stage."""
    outputs = {}
    for f in job_figures(job):
        prefix = f"results/figures/{{dataset}}/{f.name}"
        png = report(
            f"{prefix}.png",
            caption=f"../report/{f.caption}",  # relative to workflow/rules/
            category=lambda w: SETUPS[w.dataset].title,
            subcategory=f.section,
            labels={"figure": f.name.replace("_", " "), "dataset": "{dataset}"},
        )
        outputs[f.name] = [png, f"{prefix}.pdf"]
    return outputs


def figure_params(job):
    """The config values `job`'s figures read (a change reruns that job only), and the run's title and
    class names (trustcal.reporting.figures.render_figures' `run`)."""
    params = {key: config[key] for f in job_figures(job) for key in f.params}
    params["run"] = lambda w: dict(
        title=SETUPS[w.dataset].title, classes=list(SETUPS[w.dataset].dataset.classes)
    )
    return params
