# The external stage's helpers (external.smk includes this file): each prediction
# set's files and targets.
# A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.

EXTERNAL = config["external"]


def external_files(name):
    """The files an external set reads: its predictions, and its labels/validation/history files."""
    from trustcal.predictions import ReadOptions, discover, history_beside
    from trustcal.errors import TrustcalError

    entry = EXTERNAL[name]
    options = {k: v for k, v in entry.items() if k not in ("path", "history", "title")}
    try:
        files, skipped = discover([entry["path"]], ReadOptions(**options))
    except TrustcalError as exc:
        raise WorkflowError(
            f"{config_source(CONFIG_LAYERS, ('external', name))}: external.{name}: {exc}"
        ) from None
    history = entry.get("history") or history_beside(skipped)
    return [str(f.path) for f in files] + [
        str(p) for p in (entry.get("labels"), entry.get("validation"), history) if p
    ]


EXTERNAL_FILES = {name: external_files(name) for name in EXTERNAL}


def external_targets():
    """Each set's tables, summary and figures (outputs of the external rule): targets of the workflow."""
    out = rules.external.output
    wanted = [out.trust, out.scores, out.summary, out.figures]
    return [f for name in EXTERNAL for f in expand(wanted, name=name)]
