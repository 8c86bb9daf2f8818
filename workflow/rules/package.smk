# The trustcal package this workflow runs, its config file's syntax, and what the command line set:
# included by workflow/Snakefile before its `configfile:` (one file of values, no rules, like common.smk).
# Only Snakemake's public interface: `config`, workflow.configfiles, workflow.basedir and
# workflow.current_basedir (no setting or object of Snakemake's own, which a minor release may change).
#
# Paths are taken relative to this file (workflow.current_basedir), never to
# workflow.basedir: when another workflow imports this one as a `module`,
# workflow.basedir is the importing workflow's directory.
import copy
import os
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

from trustcal.config import (
    CONFIGFILE_FLAGS,
    ConfigError,
    check_yaml_syntax,
    option_values,
)

# Run as the main workflow (this repository's Snakefile or workflow/Snakefile), or imported by another one:
# a `module` (snakedeploy's, config/README.md), whose configuration is the one it passes.
IMPORTED = os.path.realpath(workflow.basedir) not in {
    os.path.realpath(WORKFLOW_DIR),
    os.path.realpath(WORKFLOW_DIR.parent),
}

# What the command line set, for the messages that name the layer a bad value came from (common.smk,
# config_layers). As the main workflow starts, before the `configfile:` that follows, Snakemake has put the
# --configfile files in workflow.configfiles and their merge with --config in `config`. An imported workflow
# starts after its importer's `configfile:`: its --configfile files are the first of workflow.configfiles,
# as many as the command line names, and the rest of the command line's part is not told apart.
if IMPORTED:
    COMMAND_LINE_CONFIGFILES = list(workflow.configfiles)[
        : len(option_values(sys.argv[1:], CONFIGFILE_FLAGS))
    ]
    COMMAND_LINE_CONFIG = None
else:
    COMMAND_LINE_CONFIGFILES = list(workflow.configfiles)
    COMMAND_LINE_CONFIG = copy.deepcopy(config)

# A config.yaml that is not YAML stops here with its line and column (Snakemake's own message, at the
# `configfile:` that follows, names neither). That `configfile:` reads it in the main workflow, and in a
# module that is passed no `config:` (which starts empty); one passed `config:` (snakedeploy's) skips it.
# Snakemake reads --configfile files before the workflow, in its own words.
if not IMPORTED or not config:
    try:  # the path of workflow/Snakefile's `configfile:`
        check_yaml_syntax("config.yaml")
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
