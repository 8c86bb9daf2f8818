from _common import run

# What a figure of the rule shows when its run has none of the rows it needs (another run's sets made the
# workflow declare it): the table it reads → the reason.
MISSING = {
    "shift": "No corrupted set was evaluated for this run (shift.corruptions names none of its image shape).",
    "shift_ood": "No out-of-distribution set was evaluated for this run (shift.ood names only its own dataset).",
}
MISSING["shift_ood_curves"] = MISSING["shift_ood"]


def main(sm):
    from trustcal.reporting.figures.shift import notice
    from trustcal.reporting.figures.shift_registry import SHIFT_FIGURES, render_shift_figures

    # the params: the run's title, and the digest of the code this job runs (`code`, package_code in
    # common.smk), which only reruns the job
    outputs = dict(sm.output.items())
    drawn = render_shift_figures(dict(sm.input.items()), outputs, title=sm.params.title)
    for name in sorted(set(outputs) - set(drawn)):
        (table,) = SHIFT_FIGURES[name].tables
        notice(MISSING[table], sm.params.title, name.replace("_", " "), outputs[name])


run(snakemake, main)  # noqa: F821
