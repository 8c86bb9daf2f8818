# The shift stage's helpers (shift.smk includes this file): the shifted sets of each run
# (trustcal.shift.sets.shift_sets), each set's parameters, the inputs of the tables and the
# targets. A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.
from trustcal.shift.sets import shift_sets

SHIFT = config["shift"]
# run → its shifted sets (corruptions of its image shape, then the out-of-distribution sets)
SHIFT_SETS = {
    run: shift_sets(SHIFT, SETUPS[run].dataset.shape, SETUPS[run].dataset.name)
    for run in DATASETS
}
# data name (results/data/{data}/) → set name → set: the images of a set are made once per dataset
SHIFT_DATA_SETS = {}
for _run, _sets in SHIFT_SETS.items():
    for _set in _sets:
        SHIFT_DATA_SETS.setdefault(SETUPS[_run].dataset.name, {})[_set.name] = _set
# the {shiftset} wildcard: the names of every set, or a pattern that matches none
SHIFT_SET_PATTERN = (
    "|".join(
        re.escape(n)
        for n in sorted({s.name for sets in SHIFT_SETS.values() for s in sets})
    )
    or "(?!x)x"
)


def shift_set(wildcards):
    """The set a shift_images job makes (the job's dataset and set)."""
    return SHIFT_DATA_SETS[wildcards.dataset][wildcards.shiftset]


def shift_set_params(wildcards):
    """The `shift` param of a shift_images job: its set's name, kind, source and severities, and the
    seed and cap of shift:, so that adding a set or changing another's severities reruns nothing here.
    """
    s = shift_set(wildcards)
    return dict(
        name=s.name,
        kind=s.kind,
        source=s.source,
        severities=list(s.severities),
        seed=SHIFT["seed"],
        samples=SHIFT["samples"],
    )


def shift_other_splits(wildcards):
    """The prepared splits of the dataset an out-of-distribution set draws on; none for the others."""
    s = shift_set(wildcards)
    return [f"results/data/{s.source}/splits.npz"] if s.kind == "dataset" else []


def shift_images_file(wildcards):
    """The images of the job's set, made for the dataset its run reads."""
    return f"results/data/{SETUPS[wildcards.dataset].dataset.name}/shift/{wildcards.shiftset}.npz"


def shift_set_files(pattern, ood):
    """A per-set `pattern` of every seed and corruption (ood False) or out-of-distribution set (ood True)
    of the job's run (an input function)."""

    def files(wildcards):
        run = wildcards.dataset
        names = [s.name for s in SHIFT_SETS[run] if s.ood == ood]
        return [
            f
            for seed in SEEDS[run]
            for f in expand(pattern, dataset=run, seed=seed, shiftset=names)
        ]

    return files


def shift_clean_files(wildcards):
    """The clean rows of every seed of the job's run."""
    return expand(
        rules.shift_clean.output.scores,
        dataset=wildcards.dataset,
        seed=SEEDS[wildcards.dataset],
    )


def shift_targets():
    """Each run's shift.csv (when it has corrupted sets) and shift_ood.csv (when it has out-of-distribution
    sets): targets of the workflow; none when shift: is left at its defaults."""
    out = []
    for run, sets in SHIFT_SETS.items():
        if any(not s.ood for s in sets):
            out += expand(rules.shift_table.output.table, dataset=run)
        if any(s.ood for s in sets):
            out += expand(rules.shift_ood_table.output.table, dataset=run)
    return out
