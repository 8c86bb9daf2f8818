"""Figures rendered from the tidy tables with seaborn / matplotlib.

Every figure is a pure function of tidy DataFrames (one row per seed × epoch ×
calibrator × …, with a ``seed`` column) and writes one file per path given
(PNG and PDF, format from the suffix). Several seeds are drawn as their mean
with a band of ± one standard deviation; the seed count is in every legend. A
single set of predictions (one seed, one epoch: ``trustcal assess`` on one file)
is drawn as one: a column per calibration state, no epoch, no seed count.

- :mod:`.registry`: every figure declared once (``FIGURES``, a
  :class:`~.registry.FigureSpec` each), the tables they read (``TABLES``),
  ``draw`` and ``render_figures`` (what the workflow's stage :func:`trustcal.stages.figures_stage` calls);
- :mod:`.style`: style, sizes, colours, ``save`` and the helpers the figures share;
- :mod:`.epochs`: figures against the epoch (trust grid, loss curves, network
  opinion, calibration and geometric metrics);
- :mod:`.distributions`: reliability, trust spectrum, trust density, cluster
  sweep and opinion triangle;
- :mod:`.calibrators`: every calibrator against the raw model (trust, calibration
  error with bootstrap bands, reliability at the best-validation epoch);
- :mod:`.shift`: calibration and trust under dataset shift, from a run's ``shift.csv`` and ``shift_ood.csv``
  (``registry.SHIFT_FIGURES``).

Every public name of these modules is also an attribute of this package
(``figures.FIGURES``, ``figures.draw``, ``figures.STATE_COLOURS``, …). They are
looked up on first use, so that reading the registry (Snakemake parsing the
workflow) imports no matplotlib.
"""

from importlib import import_module

_MODULES = ("registry", "style", "epochs", "distributions", "calibrators", "refinement", "shift")


def __getattr__(name: str):
    if name in _MODULES:  # a submodule not imported yet
        return import_module(f"{__name__}.{name}")
    if not name.startswith("_"):
        for module in _MODULES:
            mod = import_module(f"{__name__}.{module}")
            if hasattr(mod, name):
                value = getattr(mod, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    names = set(globals())
    for module in _MODULES:
        names |= {n for n in dir(import_module(f"{__name__}.{module}")) if not n.startswith("_")}
    return sorted(names)
