"""Check the --configfile files of a Snakemake command line before Snakemake reads them.

    .venv/bin/python workflow/scripts/check_configfiles.py --configfile mine.yaml [other Snakemake arguments]

Snakemake reads --configfile files before the workflow and says of a bad one only "Config file is not
valid JSON or YAML"; this names the file, the line and the column (trustcal.config.configfile_problems),
and exits with status 1, or 0 when every file reads. `make reproduce` and `make report` run it on RUN_CONFIG.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's trustcal package

from trustcal.config import configfile_problems  # noqa: E402

if __name__ == "__main__":
    problems = configfile_problems(sys.argv[1:])
    for line in problems:
        print(line, file=sys.stderr)
    sys.exit(1 if problems else 0)
