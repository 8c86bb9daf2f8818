# The shift stage's helpers (shift.smk includes this file): the shifted sets of each run
# (trustcal.shift.sets.shift_sets), each set's parameters, the inputs of the tables and the
# targets. A file without rules: `snakemake --lint` (which the workflow catalog runs) flags a
# file that mixes functions and rules.
from trustcal.reporting.figures.shift_registry import SHIFT_FIGURES
from trustcal.shift.sets import official_files, shift_sets

SHIFT = config["shift"]
# run → its shifted sets (corruptions of its image shape, then the out-of-distribution sets)
SHIFT_SETS = {
    run: shift_sets(SHIFT, SETUPS[run].dataset.shape, SETUPS[run].dataset.name)
    for run in DATASETS
}
# data name (results/data/{data}/) → set name → set: the images of a set are made once per dataset
SHIFT_DATA_SETS = {}
DATA_SHAPES = {}  # data name → its images' shape (C, H, W)
for _run, _sets in SHIFT_SETS.items():
    DATA_SHAPES[SETUPS[_run].dataset.name] = SETUPS[_run].dataset.shape
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
        official=SHIFT["official"] if s.kind == "corruption" else None,
    )


def shift_official_files(wildcards):
    """The published files a corruption set is read from when shift.official names their folder."""
    s = shift_set(wildcards)
    if s.kind != "corruption" or not SHIFT["official"]:
        return []
    return [
        str(p)
        for p in official_files(
            SHIFT["official"], s.source, DATA_SHAPES[wildcards.dataset]
        )
    ]


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
    """Each run's shift.csv (when it has corrupted sets), shift_ood.csv (when it has out-of-distribution
    sets) and its shift figures: targets of the workflow; none when shift: is left at its defaults.
    """
    out = []
    for run, sets in SHIFT_SETS.items():
        if any(not s.ood for s in sets):
            out += expand(rules.shift_table.output.table, dataset=run)
        if any(s.ood for s in sets):
            out += expand(rules.shift_ood_table.output.table, dataset=run)
        if sets:
            out += expand(list(rules.shift_figures.output), dataset=run)
    return out


# --- the figures of a run under shift (rule shift_figures; trustcal.reporting.figures.shift_registry)
# the tables some run writes: a figure is declared when any run has its table (a run without it gets a
# notice figure in its place, workflow/scripts/shift_figures.py); all of them when shift: asks for nothing
SHIFT_RUN_TABLES = {
    "shift": [run for run, sets in SHIFT_SETS.items() if any(not s.ood for s in sets)],
    "shift_ood": [run for run, sets in SHIFT_SETS.items() if any(s.ood for s in sets)],
}
SHIFT_RUN_TABLES["shift_ood_curves"] = SHIFT_RUN_TABLES["shift_ood"]
SHIFT_FIGURE_NAMES = [
    f.name for f in SHIFT_FIGURES.values() if all(SHIFT_RUN_TABLES[t] for t in f.tables)
] or list(SHIFT_FIGURES)


def shift_figure_inputs(wildcards):
    """Table name → the run's file, for each table of SHIFT_RUN_TABLES the run writes (unpack)."""
    files = {
        "shift": rules.shift_table.output.table,
        "shift_ood": rules.shift_ood_table.output.table,
        "shift_ood_curves": rules.shift_ood_table.output.curves,
    }
    return {
        t: expand(files[t], dataset=wildcards.dataset)
        for t, runs in SHIFT_RUN_TABLES.items()
        if wildcards.dataset in runs
    }


def shift_figure_outputs():
    """Figure name → [png, pdf] of each figure of SHIFT_FIGURE_NAMES; the PNG goes into the report under
    dataset › "6 Dataset shift", with its caption (workflow/report/<figure>.rst)."""
    outputs = {}
    for name in SHIFT_FIGURE_NAMES:
        f = SHIFT_FIGURES[name]
        prefix = f"results/figures/{{dataset}}/{f.name}"
        png = report(
            f"{prefix}.png",
            caption=f"../report/{f.caption}",  # relative to workflow/rules/
            category=lambda w: SETUPS[w.dataset].title,
            subcategory=f.section,
            labels={"figure": f.name.replace("_", " "), "dataset": "{dataset}"},
        )
        outputs[f.name] = [png, f"{prefix}.pdf"]
    return outputs
