# Set-up and entry points. Needs Python 3.11+ and network access to PyPI for the
# packages; `reproduce` also needs the dataset hosts, or the datasets staged by hand
# (docs/usage.md#the-datasets).
PYTHON ?= python3
VENV   ?= .venv
CORES  ?= all
BIN    := $(VENV)/bin
# The run's configuration, the same for `reproduce` and `report` (the report is of the run that
# configuration made): e.g. RUN_CONFIG="--config epochs=3 'datasets=[mnist]'".
RUN_CONFIG ?=

.PHONY: reproduce report test test-unit lint format docs benchmark mutation clean-venv

reproduce: $(VENV)/.installed  ## the full paper reproduction (both datasets, 100 epochs; RUN_CONFIG: another run)
	$(BIN)/python workflow/scripts/check_configfiles.py $(RUN_CONFIG)
	$(BIN)/snakemake --cores $(CORES) $(RUN_CONFIG) || $(BIN)/python workflow/scripts/failed_jobs.py

report: $(VENV)/.installed  ## report.html, the HTML report of the finished run (the same RUN_CONFIG as its `make reproduce`)
	$(BIN)/python workflow/scripts/check_configfiles.py $(RUN_CONFIG)
	$(BIN)/snakemake --report report.html $(RUN_CONFIG)

test: $(VENV)/.installed-test  ## the test suite
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=40

test-unit: $(VENV)/.installed-test  ## the unit tier: tests/unit/ without the slow tests, on every core (docs/testing.md)
	$(BIN)/python -m pytest tests/unit -m "not slow" -n auto

lint: $(VENV)/.installed-test  ## style checks, as CI runs them (ruff, snakefmt; versions: pyproject's lint extra)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/Snakefile workflow/rules

format: $(VENV)/.installed-test  ## apply the formatters (and ruff's safe fixes)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BIN)/snakefmt Snakefile workflow/Snakefile workflow/rules

docs: $(VENV)/.installed-test  ## the documentation site, into site/ (mkdocs.yml; any warning, e.g. a broken link, fails it)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# MUTATION_SAMPLE mutants drawn at random with MUTATION_SEED (0: all of them, several hours on 2 cores).
MUTATION_SAMPLE ?= 300
MUTATION_SEED ?= 33
mutation: $(VENV)/.installed-test  ## mutation score of measures/, calibration/, tables.py, summary.py (docs/testing.md)
	nice -n 19 $(BIN)/python tests/mutation/run_mutmut.py --sample $(MUTATION_SAMPLE) --seed $(MUTATION_SEED)

benchmark: $(VENV)/.installed  ## training-speed benchmark (benchmarks/README.md)
	$(BIN)/python benchmarks/bench_training.py

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "trustcal needs Python 3.11 or newer; run: make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The workflow extra: torch, torchvision, snakemake and the config checks
# (`pip install trustcal` alone is the light install: trustcal assess and the API).
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[workflow]'
	touch $@

# The test extra includes the workflow extra, so it also stands for .installed.
$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test,lint]'
	touch $(VENV)/.installed $@

clean-venv:
	rm -rf $(VENV)
