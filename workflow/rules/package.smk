# The trustcal package this workflow runs, and its config file's syntax: included by
# workflow/Snakefile before its `configfile:` (one file of values, no rules, like common.smk).
#
# Paths are taken relative to this file (workflow.current_basedir), never to
# workflow.basedir: when another workflow imports this one as a `module`,
# workflow.basedir is the importing workflow's directory.
import sys
from pathlib import Path

# workflow/ of this repository, first on the path: the config check runs this
# checkout's trustcal package, as every job does (workflow/scripts/_common.py),
# whatever else is installed (e.g. an editable install of another clone). A
# remote module (github(...)) has no local copy and needs trustcal installed.
WORKFLOW_DIR = Path(str(workflow.current_basedir)).parent
if (WORKFLOW_DIR / "trustcal").is_dir():
    sys.path.insert(0, str(WORKFLOW_DIR))
    import trustcal
    from trustcal.errors import foreign_package

    _problem = foreign_package(WORKFLOW_DIR, Path(trustcal.__file__).resolve().parent)
    if _problem:
        raise WorkflowError(_problem)

from trustcal.config import ConfigError, check_yaml_syntax

# A config.yaml that is not YAML stops here with its line and column (Snakemake's own message, at the
# `configfile:` that follows, names neither); not when an importing workflow passes `config:`, which
# skips that `configfile:`. Snakemake reads --configfile files before the workflow, in its own words.
if not workflow.modifier.skip_configfile:
    try:  # the path of workflow/Snakefile's `configfile:`
        check_yaml_syntax("config.yaml")
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
