"""Tests of the subjective-logic operators (docs/method.md §4; Jøsang 2016 ch. 3 and 12)."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustcal.measures.opinions import (
    Opinion,
    averaging_fusion,
    cumulative_fusion,
    evidence_from_opinion,
    fuse,
    fuse_evidence,
    opinion_from_evidence,
    projected_probability,
    vacuous_opinion,
    weighted_fusion,
)

SETTINGS = settings(max_examples=60, deadline=None)
unit = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def opinions(draw, dogmatic=True, vacuous=True):
    """A random binomial opinion, optionally sometimes dogmatic (u = 0) or vacuous (u = 1)."""
    a = draw(unit)
    kinds = ["regular"] + (["dogmatic"] if dogmatic else []) + (["vacuous"] if vacuous else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "dogmatic":
        b = draw(unit)
        return Opinion(b, 1.0 - b, 0.0, a)
    if kind == "vacuous":
        return Opinion(0.0, 0.0, 1.0, a)
    x, y, z = draw(unit), draw(unit), draw(st.floats(1e-3, 1.0))  # u > 0
    s = x + y + z
    return Opinion(x / s, y / s, z / s, a)


def assert_valid(op):
    b, d, u, a = (np.asarray(f) for f in op)
    for f in (b, d, u, a):
        assert np.all(np.isfinite(f))
        assert np.all((f >= -1e-12) & (f <= 1 + 1e-12))
    np.testing.assert_allclose(b + d + u, 1.0, atol=1e-12)


def assert_same(x, y, atol=1e-9):
    for f, g in zip(x, y):
        np.testing.assert_allclose(f, g, atol=atol, rtol=0)


# --- Jøsang's explicit two-source formulas, written out independently --------


def josang_cumulative(x, y):
    """Jøsang 2016 Eq. 12.18 (paper Eq. 2), γ = 1/2 for two dogmatic opinions."""
    (bx, dx, ux, ax), (by, dy, uy, ay) = x, y
    if ux == 0 and uy == 0:
        return Opinion((bx + by) / 2, (dx + dy) / 2, 0.0, (ax + ay) / 2)
    k = ux + uy - ux * uy
    b = (bx * uy + by * ux) / k
    d = (dx * uy + dy * ux) / k
    u = ux * uy / k
    if ux == 1 and uy == 1:
        a = (ax + ay) / 2
    else:
        a = (ax * uy + ay * ux - (ax + ay) * ux * uy) / (ux + uy - 2 * ux * uy)
    return Opinion(b, d, u, a)


def josang_averaging(x, y):
    """Jøsang 2016 Eq. 12.21."""
    (bx, dx, ux, ax), (by, dy, uy, ay) = x, y
    if ux == 0 and uy == 0:
        return Opinion((bx + by) / 2, (dx + dy) / 2, 0.0, (ax + ay) / 2)
    return Opinion(
        (bx * uy + by * ux) / (ux + uy), (dx * uy + dy * ux) / (ux + uy), 2 * ux * uy / (ux + uy), (ax + ay) / 2
    )


def josang_weighted(x, y):
    """Jøsang 2018, Categories of Belief Fusion, Def. 9."""
    (bx, dx, ux, ax), (by, dy, uy, ay) = x, y
    if ux == 0 and uy == 0:
        return Opinion((bx + by) / 2, (dx + dy) / 2, 0.0, (ax + ay) / 2)
    if ux == 1 and uy == 1:
        return Opinion(0.0, 0.0, 1.0, (ax + ay) / 2)
    k = ux + uy - 2 * ux * uy
    return Opinion(
        (bx * (1 - ux) * uy + by * (1 - uy) * ux) / k,
        (dx * (1 - ux) * uy + dy * (1 - uy) * ux) / k,
        (2 - ux - uy) * ux * uy / k,
        (ax * (1 - ux) + ay * (1 - uy)) / (2 - ux - uy),
    )


# --- hand-computed cases ----------------------------------------------------


def test_golden_vector_cumulative_fusion():
    # docs/method.md §4 (reference Java implementation): evidence per unit W is b/u, d/u:
    # r' = 1/6 + 1 + 3.5 = 4.6667, s' = 0.5 + 0.5 + 0.5 = 1.5, 1 + r' + s' = 7.1667
    # → b = 0.651, d = 0.209, u = 0.140.
    ops = Opinion(np.array([0.1, 0.4, 0.7]), np.array([0.3, 0.2, 0.1]), np.array([0.6, 0.4, 0.2]), 0.5)
    fused = fuse(ops)
    assert (round(fused.b, 3), round(fused.d, 3), round(fused.u, 3)) == (0.651, 0.209, 0.140)
    chained = cumulative_fusion(
        cumulative_fusion(Opinion(0.1, 0.3, 0.6), Opinion(0.4, 0.2, 0.4)), Opinion(0.7, 0.1, 0.2)
    )
    assert (round(chained.b, 3), round(chained.d, 3), round(chained.u, 3)) == (0.651, 0.209, 0.140)


def test_opinion_from_evidence_hand_case():
    # r = 3, s = 1, W = 2: W + r + s = 6 → b = 1/2, d = 1/6, u = 1/3; P = 1/2 + 0.2/3.
    op = opinion_from_evidence(3, 1, weight=2.0, base_rate=0.2)
    assert_same(op, (0.5, 1 / 6, 1 / 3, 0.2), atol=1e-15)
    assert math.isclose(op.projected_probability(), 0.5 + 0.2 / 3)
    assert math.isclose(projected_probability(op), 0.5 + 0.2 / 3)
    assert (op.b, op.d, op.u, op.a) == tuple(op)
    # no evidence → vacuous
    assert_same(opinion_from_evidence(0, 0), (0.0, 0.0, 1.0, 0.5))


def test_evidence_roundtrip_and_dogmatic_evidence():
    r, s = evidence_from_opinion(opinion_from_evidence([0.0, 2.5, 7.0], [1.0, 0.0, 3.0], weight=2.0))
    np.testing.assert_allclose(r, [0.0, 2.5, 7.0], atol=1e-12)
    np.testing.assert_allclose(s, [1.0, 0.0, 3.0], atol=1e-12)
    # u = 0: infinite evidence where b (or d) > 0, none where it is 0
    r, s = evidence_from_opinion(Opinion(np.array([1.0, 0.25]), np.array([0.0, 0.75]), np.array([0.0, 0.0])))
    assert r.tolist() == [math.inf, math.inf] and s.tolist() == [0.0, math.inf]
    # and back: infinite evidence is the dogmatic limit
    assert_same(opinion_from_evidence(math.inf, 5.0), (1.0, 0.0, 0.0, 0.5))


def test_pairwise_hand_case():
    # x = (0.1, 0.3, 0.6, a=0.3), y = (0.4, 0.2, 0.4, a=0.8):
    # cumulative: k = 0.6 + 0.4 − 0.24 = 0.76, b = (0.04 + 0.24)/0.76, u = 0.24/0.76,
    #             a = (0.12 + 0.48 − 1.1·0.24)/(1 − 0.48) = 0.336/0.52
    x, y = Opinion(0.1, 0.3, 0.6, 0.3), Opinion(0.4, 0.2, 0.4, 0.8)
    assert_same(cumulative_fusion(x, y), (0.28 / 0.76, 0.24 / 0.76, 0.24 / 0.76, 0.336 / 0.52), atol=1e-12)
    # averaging: b = (0.04 + 0.24)/1.0, u = 2·0.24/1.0, a = 0.55
    assert_same(averaging_fusion(x, y), (0.28, 0.24, 0.48, 0.55), atol=1e-12)
    # weighted: k = 1 − 0.48 = 0.52, b = (0.1·0.4·0.4 + 0.4·0.6·0.6)/0.52 = 0.16/0.52,
    #           u = 1.0·0.24/0.52, a = (0.3·0.4 + 0.8·0.6)/1.0 = 0.6
    assert_same(weighted_fusion(x, y), (0.16 / 0.52, 0.12 / 0.52, 0.24 / 0.52, 0.6), atol=1e-12)


def test_dogmatic_and_vacuous_cases():
    dog1, dog2 = Opinion(1.0, 0.0, 0.0, 0.2), Opinion(0.0, 1.0, 0.0, 0.6)
    soft = Opinion(0.3, 0.3, 0.4, 0.9)
    for fusion in (cumulative_fusion, averaging_fusion, weighted_fusion):
        # two dogmatic opinions: equal relative dogmatism → the average
        assert_same(fusion(dog1, dog2), (0.5, 0.5, 0.0, 0.4))
    # a dogmatic opinion dominates a non-dogmatic one (cumulative and averaging)
    assert_same(cumulative_fusion(dog1, soft), dog1)
    assert_same(averaging_fusion(dog1, soft)[:3], dog1[:3])
    # many opinions, two of them dogmatic: their plain average
    many = Opinion(
        np.array([1.0, 0.3, 0.0, 0.1]),
        np.array([0.0, 0.3, 1.0, 0.1]),
        np.array([0.0, 0.4, 0.0, 0.8]),
        np.array([0.2, 0.9, 0.6, 0.1]),
    )
    assert_same(fuse(many), (0.5, 0.5, 0.0, 0.4))
    assert_same(fuse(many, method="averaging")[:3], (0.5, 0.5, 0.0))
    # only vacuous opinions: vacuous, with the mean base rate
    vac = Opinion(np.zeros(3), np.zeros(3), np.ones(3), np.array([0.1, 0.2, 0.6]))
    for method in ("cumulative", "averaging", "weighted"):
        assert_same(fuse(vac, method=method), (0.0, 0.0, 1.0, 0.3))


def test_fuse_is_vectorised_over_other_axes():
    rng = np.random.default_rng(0)
    r, s = rng.uniform(0, 50, (4, 6)), rng.uniform(0, 50, (4, 6))
    ops = opinion_from_evidence(r, s, base_rate=rng.uniform(0, 1, (4, 6)))
    for method in ("cumulative", "averaging", "weighted"):
        fused = fuse(ops, axis=1, method=method)
        assert np.shape(fused.b) == (4,)
        for i in range(4):  # row by row through the scalar pairwise operator
            pair = {"cumulative": cumulative_fusion, "averaging": averaging_fusion, "weighted": weighted_fusion}[method]
            if method != "cumulative":  # averaging/weighted are not associative: compare to fuse of the row
                row = fuse(Opinion(*(f[i] for f in ops)), method=method)
            else:
                row = Opinion(*(f[i, 0] for f in ops))
                for j in range(1, 6):
                    row = pair(row, Opinion(*(f[i, j] for f in ops)))
            assert_same(Opinion(*(f[i] for f in fused)), row, atol=1e-10)
    # axis=0 reduces the other axis
    assert np.shape(fuse(ops, axis=0).b) == (6,)


def test_invalid_arguments():
    """Each guard raises its own message: an empty set of opinions would also fail later (numpy's minimum of an
    empty array raises a ValueError of its own), so only the message shows that the guard is there."""
    with pytest.raises(ValueError, match="method must be one of"):
        fuse(Opinion(np.array([0.5]), np.array([0.5]), np.array([0.0])), method="bogus")
    with pytest.raises(ValueError, match=r"^cannot fuse an empty set of opinions$"):
        fuse(Opinion(np.empty(0), np.empty(0), np.empty(0)))
    with pytest.raises(ValueError, match=r"^cannot fuse an empty set of opinions$"):
        fuse(Opinion(np.empty((3, 0)), np.empty((3, 0)), np.empty((3, 0))), axis=1, method="weighted")
    with pytest.raises(ValueError, match="fuse needs array fields"):
        fuse(Opinion(0.5, 0.5, 0.0))
    with pytest.raises(ValueError, match="evidence r and s must be non-negative"):
        opinion_from_evidence(-1.0, 0.0)
    with pytest.raises(ValueError, match="weight W must be > 0"):
        opinion_from_evidence(1.0, 0.0, weight=0.0)
    with pytest.raises(ValueError, match="method must be one of"):
        fuse_evidence(np.ones(2), np.ones(2), method="bogus")
    with pytest.raises(ValueError, match="evidence r and s must be non-negative"):
        fuse_evidence(np.array([1.0, -1.0]), np.ones(2))


# --- properties ---------------------------------------------------------------


@SETTINGS
@given(opinions(), opinions(), st.sampled_from(["cumulative", "averaging", "weighted"]))
def test_fusion_result_is_an_opinion_never_nan(x, y, method):
    assert_valid(fuse(Opinion(*(np.array([f, g]) for f, g in zip(x, y))), method=method))


def exact(op):
    return Opinion(*(Fraction(float(f)) for f in op))


@SETTINGS
@given(opinions(), opinions())
def test_pairwise_operators_match_josang_formulas(x, y):
    # The formulas are evaluated in exact rational arithmetic: in floats they cancel
    # catastrophically for nearly vacuous pairs (u_x + u_y − 2 u_x u_y ≈ 0).
    for ours, josang in (
        (cumulative_fusion, josang_cumulative),
        (averaging_fusion, josang_averaging),
        (weighted_fusion, josang_weighted),
    ):
        assert_same(ours(x, y), tuple(float(f) for f in josang(exact(x), exact(y))))


@SETTINGS
@given(opinions(), opinions(), st.sampled_from(["cumulative", "averaging", "weighted"]))
def test_commutativity(x, y, method):
    fusion = {"cumulative": cumulative_fusion, "averaging": averaging_fusion, "weighted": weighted_fusion}[method]
    assert_same(fusion(x, y), fusion(y, x), atol=1e-12)


@SETTINGS
@given(opinions(dogmatic=False), opinions(dogmatic=False), opinions(dogmatic=False))
def test_cumulative_fusion_is_associative(x, y, z):
    # Associative for non-dogmatic opinions (the pairwise dogmatic average is not);
    # the base rate too, unless all three are vacuous (then pairwise means of a).
    left = cumulative_fusion(cumulative_fusion(x, y), z)
    right = cumulative_fusion(x, cumulative_fusion(y, z))
    assert_same(left[:3], right[:3])
    if min(x.u, y.u, z.u) < 1:
        assert math.isclose(left.a, right.a, abs_tol=1e-9)


@SETTINGS
@given(opinions(), unit)
def test_vacuous_opinion_is_neutral_for_cumulative_fusion(x, a):
    fused = cumulative_fusion(x, vacuous_opinion(a))
    assert_same(fused[:3], x[:3], atol=1e-12)
    if x.u < 1:  # fusing two vacuous opinions averages their base rates
        assert math.isclose(fused.a, x.a, abs_tol=1e-12)


evidence = st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 1e3), unit), min_size=1, max_size=8)


@SETTINGS
@given(evidence)
def test_cumulative_fusion_sums_and_averaging_averages_evidence(ev):
    r, s, a = (np.array(c) for c in zip(*ev))
    ops = opinion_from_evidence(r, s, weight=2.0, base_rate=a)
    fused = fuse(ops, method="cumulative")
    assert_same(fused[:3], opinion_from_evidence(r.sum(), s.sum())[:3], atol=1e-10)
    # base rate: evidence-weighted mean (the two-source formula generalised)
    tot = r + s
    w = tot / tot.max() if tot.max() > 0 else np.ones_like(tot)  # scaled: no subnormal underflow
    assert math.isclose(fused.a, (w @ a) / w.sum(), abs_tol=1e-9)
    assert_same(fuse(ops, method="averaging")[:3], opinion_from_evidence(r.mean(), s.mean())[:3], atol=1e-10)
    # fuse_evidence: the same in evidence space
    np.testing.assert_allclose(fuse_evidence(r, s), (r.sum(), s.sum()))
    np.testing.assert_allclose(fuse_evidence(r, s, method="averaging"), (r.mean(), s.mean()))
    rw, sw = fuse_evidence(r, s, method="weighted")
    assert_same(opinion_from_evidence(rw, sw)[:3], fuse(ops, method="weighted")[:3], atol=1e-9)


@SETTINGS
@given(st.lists(opinions(), min_size=1, max_size=6), st.sampled_from(["cumulative", "averaging", "weighted"]))
def test_many_opinions_with_dogmatic_members_stay_valid(ops, method):
    stacked = Opinion(*(np.array(f) for f in zip(*ops)))
    assert_valid(fuse(stacked, method=method))


def test_nearly_dogmatic_opinions_do_not_overflow():
    tiny = 5e-324  # smallest subnormal: b/u would overflow
    ops = Opinion(np.array([0.5, 0.2]), np.array([0.5 - tiny, 0.8]), np.array([tiny, 0.0]))
    assert_valid(fuse(ops))
    ops = Opinion(np.array([0.5, 0.2]), np.array([0.5, 0.8 - 1e-300]), np.array([1e-300, 1e-300]))
    assert_same(fuse(ops), (0.35, 0.65, 5e-301, 0.5), atol=1e-12)


def test_dogmatic_evidence_and_infinite_evidence_without_warnings():
    """A dogmatic opinion (u = 0) has infinite evidence only on its committed side: (0, 1, 0) is r = 0, s = ∞;
    infinite evidence on both sides gives the dogmatic (½, ½, 0) without a floating-point warning (inf/inf)."""
    r, s = evidence_from_opinion(Opinion(0.0, 1.0, 0.0))
    assert (r, s) == (0.0, math.inf)
    r, s = evidence_from_opinion(Opinion(1.0, 0.0, 0.0))
    assert (r, s) == (math.inf, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op = opinion_from_evidence(math.inf, math.inf)
    assert (op.b, op.d, op.u) == (0.5, 0.5, 0.0)
