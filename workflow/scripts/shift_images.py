from _common import run


def main(sm):
    from trustcal.shift_stages import shift_images_stage

    shift_images_stage(
        sm.input.splits, sm.output.images, sm.params.shift, sm.input.other[0] if sm.input.other else None
    )


run(snakemake, main)  # noqa: F821
