from _common import run


def main(sm):
    from trustcal.reporting.figures import render_figures

    # the params are the config values the figures read (figure_params in figures_helpers.smk), and the
    # digest of the code this job runs (`code`, package_code in common.smk), which only reruns the job
    options = {name: value for name, value in sm.params.items() if name != "code"}
    inputs = dict(sm.input.items())
    splits = list(inputs.pop("splits", None) or [])  # the splits of a dataset of the user's own, or none
    if splits:  # its class names are in them
        from trustcal.data.splits import prepared_classes

        options["run"] = dict(options["run"], classes=list(prepared_classes(splits[0])))
    render_figures(sm.wildcards.dataset, inputs, dict(sm.output.items()), **options)


run(snakemake, main)  # noqa: F821
