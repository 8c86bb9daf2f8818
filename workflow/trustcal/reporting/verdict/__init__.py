"""The reproduction verdict: every result statement of the paper (Ouattara §7, with the abstract and
conclusion where they speak of these experiments) against our tables, with its uncertainty.

**Claims.** Each quantitative or directional statement is a :class:`Claim` with the paper's words
(``quote``), what we measure and a decision rule. Before- and after-calibration statements are
separate claims. A measure is computed per training seed from ``trust.csv`` (per-label opinions),
``history.csv`` (losses) and, when present, ``trust_bootstrap.npz`` (the same opinions on resamples
of the test set, :mod:`trustcal.measures.bootstrap`); measures are vectorised over those resamples.

**Uncertainty.** Over seeds: mean ± sd (n seeds). Over test samples: the percentile interval of the
seed mean over the bootstrap resamples (the same resamples for every seed: one test set). The two
are independent sources, so the decision interval adds their half-widths in quadrature::

    lo = mean − √((mean − q_lo)² + (t·sd/√n)²),   hi = mean + √((q_hi − mean)² + (t·sd/√n)²)

with q the bootstrap quantiles and t Student's 97.5 % quantile with n − 1 degrees of freedom (no
seed term for one seed). Claims about the training history have no test-set term.

A claim that compares the two calibration states (``Claim.paired``: after − before at every epoch,
"steadier after", "similar at the start") has the paired interval with seeds instead
(:func:`trustcal.measures.paired.paired_interval`, docs/method.md §12): its measure is taken on each
resample with both states on the same drawn rows; the test-set term is the resampling noise the seeds
share (their replicates' mean cross-covariance), the seed term the seeds' sample variance over n, each
half-width at its own t quantile, added in quadrature. The percentile quadrature above counts the
seed × test-set noise twice (once in the bootstrap of the seed mean, once in the seeds' sd).

**Decision** (an equivalence test on that interval): *reproduced* when the whole interval lies in the
claim's band (``near``: paper value ± tolerance; ``at_most``: ≤ bound; ``at_least``: ≥ bound), *not
reproduced* when it lies wholly outside, *inconclusive* when it straddles an edge. Each seed is also
decided on its own bootstrap interval; seeds that disagree are named. A claim is *not comparable* when
its dataset is not in the run, the run is too short, or the paper's number cannot come from the
algorithm it describes.

**Beyond the paper** (:mod:`trustcal.reporting.verdict.general`). A claim that is a case of a statement about
training and calibration in general (``general:`` in the claims file: trust higher after temperature scaling
than before, disbelief rising before it, …) also gives a general claim, judged with the same measure, interval
and rule on every run of the workflow (any dataset × network, the paper's two included): the section "Does it
hold beyond the paper?" and rows of ``scope`` ``general`` in reproduction.csv (``dataset``: the run). Levels
are never general: a perfect classifier's belief is 2M/(2M + K), set by the classes K and clusters M.

**Tolerances.** Opinion masses ± ``MASS_TOLERANCE`` = 0.05: the paper's values are read off line plots
of ten overlapping label curves and given to two decimals. Per-label statements use the mean over the
ten class opinions (not the network opinion).
"""

from trustcal.reporting.verdict.claimfile import (
    CLAIM_KINDS,
    CONDITIONS,
    MASS_TOLERANCE,
    MEASURES,
    PAPER_CLAIMS_FILE,
    ClaimsFileError,
    claim_from_dict,
    load_claims,
)
from trustcal.reporting.verdict.claims import (
    ABSTRACT_IMPROVED,
    CLAIMS,
    CONCLUSION_IMPROVED,
    CONCLUSION_STABLE,
    GAP_TOLERANCE,
    INTRO_STABLE,
    INTRO_STABLE_QUOTE,
    ONSET_TOLERANCE,
    OVERALL,
    OVERALL_QUOTE,
    PAPER_SETTINGS,
    TENSIONS,
    UNCERTAINTY_REASON,
    Claim,
    Tension,
    invariance_note,
    settings_notes,
)
from trustcal.reporting.verdict.evaluation import (
    GENERAL_SCOPE,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    PAPER_SCOPE,
    REPRODUCED,
    T975,
    VERDICT_COLUMNS,
    Estimate,
    decide,
    decision_rule,
    describe_flagged,
    evaluate,
    evaluate_claim,
    is_direction,
    t975,
)
from trustcal.reporting.verdict.general import (
    GeneralClaim,
    evaluate_general,
    general_claims,
    level_dependence,
    run_classes,
    run_order,
    run_titles,
)
from trustcal.reporting.verdict.render import (
    DECISION_TEXT,
    GENERAL_TITLE,
    HEADER,
    INTRO,
    VERDICT_COLOURS,
    render_html,
    render_markdown,
    write_run_verdicts,
    write_verdict,
)
from trustcal.reporting.verdict.runs import (
    AFTER,
    BEFORE,
    COMPONENTS,
    LATE_EPOCH,
    Run,
    change,
    curve,
    decline_after_onset,
    final_gap,
    gap_grows_after_minimum,
    highest_difference,
    label_peak,
    level,
    load_runs,
    lowest_difference,
    mean_gap,
    overfitting_onset,
    perfect_classifier_opinion,
    run_from_tables,
    spread,
    stability_gain,
    start_gap,
    val_loss_minimum,
)
from trustcal.reporting.verdict.settings import VerdictSettings

__all__ = [
    "load_claims",
    "claim_from_dict",
    "ClaimsFileError",
    "PAPER_CLAIMS_FILE",
    "MEASURES",
    "CLAIM_KINDS",
    "CONDITIONS",
    "ABSTRACT_IMPROVED",
    "AFTER",
    "BEFORE",
    "CLAIMS",
    "COMPONENTS",
    "CONCLUSION_IMPROVED",
    "CONCLUSION_STABLE",
    "Claim",
    "DECISION_TEXT",
    "Estimate",
    "GAP_TOLERANCE",
    "GENERAL_SCOPE",
    "GENERAL_TITLE",
    "GeneralClaim",
    "PAPER_SCOPE",
    "evaluate_general",
    "general_claims",
    "level_dependence",
    "run_classes",
    "run_order",
    "run_titles",
    "HEADER",
    "INCONCLUSIVE",
    "INTRO",
    "INTRO_STABLE",
    "INTRO_STABLE_QUOTE",
    "LATE_EPOCH",
    "MASS_TOLERANCE",
    "NOT_COMPARABLE",
    "NOT_REPRODUCED",
    "ONSET_TOLERANCE",
    "OVERALL",
    "OVERALL_QUOTE",
    "PAPER_SETTINGS",
    "REPRODUCED",
    "Run",
    "T975",
    "TENSIONS",
    "Tension",
    "UNCERTAINTY_REASON",
    "VERDICT_COLOURS",
    "VERDICT_COLUMNS",
    "VerdictSettings",
    "change",
    "curve",
    "decide",
    "decision_rule",
    "decline_after_onset",
    "describe_flagged",
    "evaluate",
    "evaluate_claim",
    "final_gap",
    "gap_grows_after_minimum",
    "highest_difference",
    "invariance_note",
    "is_direction",
    "label_peak",
    "level",
    "load_runs",
    "lowest_difference",
    "mean_gap",
    "overfitting_onset",
    "perfect_classifier_opinion",
    "render_html",
    "render_markdown",
    "run_from_tables",
    "settings_notes",
    "spread",
    "stability_gain",
    "start_gap",
    "t975",
    "val_loss_minimum",
    "write_run_verdicts",
    "write_verdict",
]
