"""Every calibrator on real CIFAR-100 predictions of three published networks (docs/method.md §2.7, §2.10, §2.16).

The files are netcal's example records (EFS-OpenSource/calibration-framework): DenseNet-BC-100
(``examples/cifar100/densenet-bc-100-cifar-100.npz``, commit ba3b3c5), WRN-16-4 and LeNet-5
(``examples/classification/records/cifar100/{wideresnet-16-4,lenet-5}-cifar-100.npz``, commit 2a3db8d): the
10,000 CIFAR-100 test images' float32 softmax probabilities (``predictions``) and labels (``ground_truth``).
They are not part of this repository: put them in ``../cifar100-records`` beside it (or set
``TRUSTCAL_CIFAR100_RECORDS``); the test skips, naming the folder, where they are absent. Their sha256 are
checked first.

As a user of ``trustcal assess`` would: fitted on the first 5,000 rows (log max(p, PROB_FLOOR)), judged on the
last 5,000. Measured (test NLL, raw → temperature / matrix = Dirichlet (on log-probabilities the two are one
map) / irm / histogram / isotonic): DenseNet-BC-100 1.2116 → 0.8666 / 0.8600 / 0.8924 / 3.574 / 1.498;
WRN-16-4 0.9439 → 0.9347 / 0.9087 / 0.9354 / 3.191 / 1.529; LeNet-5 3.8251 → 3.8146 / 3.6970 / 3.8198 /
4.416 / 4.285.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from trustcal.calibration import fit_calibrator
from trustcal.calibration.methods import many_classes_advice
from trustcal.numerics import floored_log, logits_nll

pytestmark = pytest.mark.slow

RECORDS = Path(
    os.environ.get("TRUSTCAL_CIFAR100_RECORDS", Path(__file__).resolve().parents[3].parent / "cifar100-records")
)
SHA256 = {
    "densenet-bc-100": "6b8c33de93bdf1ae7de335f485c73c9f7198b359f85de6b1f21066a7e7c6379e",
    "wideresnet-16-4": "ab3ce671b234521fe346977df2bb1c755a2c96b1781c350cef76be0ad36e5e12",
    "lenet-5": "45807c28708ba788ef3e4d9f9d25f59ebe93a2eb5d4dd5fa8380095636a244a0",
}


@pytest.fixture(scope="module", params=sorted(SHA256))
def split(request):
    path = RECORDS / f"{request.param}-cifar-100.npz"
    if not path.is_file():
        pytest.skip(f"{path} not found (netcal's CIFAR-100 records; set TRUSTCAL_CIFAR100_RECORDS to another folder)")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[request.param]
    with np.load(path, allow_pickle=False) as d:
        z, y = floored_log(d["predictions"].astype(np.float64)), d["ground_truth"]
    return z[:5000], y[:5000], z[5000:], y[5000:]


def test_matrix_and_dirichlet_scaling_match_temperature_scaling_or_beat_it(split):
    """Within 0.01 nats of temperature scaling's test NLL or below it, and below the raw model's."""
    zf, yf, zt, yt = split
    temperature = fit_calibrator("temperature", zf, yf).nll(zt, yt)
    for method in ("matrix", "dirichlet"):
        nll = fit_calibrator(method, zf, yf).nll(zt, yt)
        assert nll <= temperature + 0.01 and nll < logits_nll(zt, yt), method


def test_irm_lowers_the_nll_where_one_vs_rest_binning_raises_it_and_is_steered_away(split):
    zf, yf, zt, yt = split
    raw = logits_nll(zt, yt)
    assert fit_calibrator("irm", zf, yf).nll(zt, yt) < raw
    for method in ("histogram", "isotonic"):
        assert fit_calibrator(method, zf, yf).nll(zt, yt) > raw, method
        assert many_classes_advice(method, zf.shape[1]) is not None


# Conjugate-gradient products H v of matrix scaling (cross-validation's path and the final fit), measured with and
# without the refined preconditioner: DenseNet-BC-100 114 → 108 (ODIR's λ stays strong: the path stops at 10⁵),
# WRN-16-4 676 → 254, LeNet-5 1,568 → 180 (the path goes to λ = 10², where the classes' rows couple).
FEWER_PRODUCTS = {"densenet-bc-100": 1.0, "wideresnet-16-4": 2.0, "lenet-5": 4.0}


def test_the_refined_preconditioner_cuts_the_products_where_odirs_penalty_is_weak(split, request, monkeypatch):
    """The same fit (ODIR's λ, the test NLL within the final fit's stopping tolerance) in at least
    FEWER_PRODUCTS times fewer products H v with the refined preconditioner (_class_rows) than without it."""
    from trustcal.calibration import scaling_loss, solver

    zf, yf, zt, yt = split
    cg, products = solver.conjugate_gradient_step, []

    def counted(h, grad, fixed, tol=0.0):
        def product(v):
            products.append(1)
            return h.product(v)

        return cg(dataclasses.replace(h, product=product), grad, fixed, tol)

    monkeypatch.setattr(solver, "conjugate_gradient_step", counted)
    fits, taken, never = {}, {}, solver.CG_MAX_ITER + 1
    for refine_after in (scaling_loss.REFINE_AFTER, never):
        monkeypatch.setattr(scaling_loss, "REFINE_AFTER", refine_after)
        products.clear()
        fits[refine_after] = fit_calibrator("matrix", zf, yf)
        taken[refine_after] = len(products)
    (refined, plain), (refined_products, plain_products) = fits.values(), taken.values()
    assert refined.converged and plain.converged and refined.odir_lambda == plain.odir_lambda
    assert refined.nll(zt, yt) == pytest.approx(plain.nll(zt, yt), abs=1e-6)
    network = request.node.callspec.params["split"]
    assert refined_products * FEWER_PRODUCTS[network] <= plain_products, taken
