from _common import run


def main(sm):
    from pathlib import Path

    from trustcal.stages import verdict_stage

    claims = list(getattr(sm.input, "claims", []))  # the config's `claims:` files
    claims_out = list(getattr(sm.output, "claims", []))
    verdict_stage(
        sm.input.trust,
        sm.input.history,
        sm.output.markdown,
        sm.output.table,
        sm.params.settings,
        provenance=f"Configuration: {sm.params.configuration}.",
        out_html=sm.output.html,
        bootstrap_paths=sm.input.bootstrap,
        claims_paths=claims,
        claims_dir=Path(claims_out[0]).parent if claims_out else None,
        logs_dir=Path(sm.log[0]).parents[1],  # results/logs: the jobs' warnings (section Warnings)
        out_summary=getattr(sm.output, "summary", None),  # the report's landing page: the run at a glance
        setups=getattr(sm.params, "setups", None),
    )


run(snakemake, main)  # noqa: F821
