"""The minimisers behind temperature, vector, matrix and Dirichlet scaling (docs/method.md §2, §2.5–2.9).

- :func:`bracketed_newton`: the root of an increasing slope g(β) on a bracket [lo, hi], by Newton's method
  safeguarded with bisection (every evaluation narrows the bracket; a step that leaves it bisects it).
  Temperature scaling solves g(β) = 0 for β = 1/T with it.
- :func:`minimize_box`: a convex loss of θ with a box on some components, by projected Newton steps with
  the exact Hessian (Bertsekas 1982), SciPy's L-BFGS-B finishing when Newton stalls or runs out of steps,
  or running alone when :func:`iteration_plan` says the Hessian costs more than it saves (vector scaling
  past K = 1000, matrix and Dirichlet scaling past K = 20), its default iteration limit then also bounded
  by MAX_WORK operations. Where the Hessian is too large to form, a :class:`HessianOperator` (its products
  with a vector, and a preconditioner) gives the Newton steps instead, by preconditioned conjugate gradients
  (truncated Newton; Nocedal & Wright 2006, §7.1): the ODIR fits of cross-validation (docs/method.md §2.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trustcal.numerics import one_blas_thread

FTOL = 1e-14  # L-BFGS-B ftol: relative decrease of the loss per step, near float64 round-off
NEWTON_MAX_ITER = 50  # Newton steps before L-BFGS-B takes over
# The default iteration limit of a fit by L-BFGS-B alone is also bounded by its arithmetic: an iteration's two
# products of N×K by K×K cost 4·N·(K² + K) operations, and MAX_WORK of them are about two minutes on one core
# at 50 GFLOP/s: 1000 iterations up to K ≈ 500 at N = 5000, 49 at K = 1000 and N = 25,000 (docs/method.md §2.9).
MAX_WORK = 5e12
NEWTON_RCOND = 1e-12  # Newton's floor on the Hessian's eigenvalues, a fraction of the largest
ARMIJO_C = 1e-4  # sufficient decrease: the loss falls by at least this fraction of the gradient's prediction
ARMIJO_HALVINGS = 50  # step halvings before a Newton step counts as stalled

CG_MAX_ITER = 250  # conjugate-gradient iterations per truncated Newton step
# The operators of truncated Newton steps economise where only the conjugate gradients see them (:func:`economy`):
# the gradient, the loss and the stopping test stay float64 on every sample, so the optimum reached is the same
# to the tolerance (docs/method.md §2.9). Past FLOAT32_CLASSES classes (ODIR's operator runs past 20, SMS's past
# 100) their products H v run in float32; past ECONOMY_CLASSES, ODIR's preconditioner also averages over a sample.
FLOAT32_CLASSES = 20
ECONOMY_CLASSES = 200
PRECONDITIONER_ROWS = 5000

LossGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class HessianOperator:
    """The Hessian at one point, as an operator: ``product`` v ↦ H v, ``precondition`` r ↦ M⁻¹ r for an
    approximation M of H (symmetric positive definite), and ``diagonal``, H's diagonal (or M's), for the steps
    of the components held at a bound. ``refine``, where given, builds a closer and dearer approximation's
    r ↦ M⁻¹ r, that the conjugate gradients take when ``refine_after`` products have not converged."""

    product: Callable[[np.ndarray], np.ndarray]
    precondition: Callable[[np.ndarray], np.ndarray]
    diagonal: np.ndarray
    refine: Callable[[], Callable[[np.ndarray], np.ndarray]] | None = None
    refine_after: int = 0


def economy(n: int, k: int) -> tuple[type, slice]:
    """(dtype, samples) of a Hessian operator on N×K features: past FLOAT32_CLASSES classes its products H v run
    in float32 (half float64's time), past ECONOMY_CLASSES its preconditioner's costliest averages
    over the samples are taken over at most PRECONDITIONER_ROWS of them (every m-th)."""
    dtype = np.float32 if k > FLOAT32_CLASSES else np.float64
    return dtype, slice(None) if k <= ECONOMY_CLASSES else slice(None, None, -(-n // PRECONDITIONER_ROWS))


@dataclass(frozen=True)
class Root:
    """Where :func:`bracketed_newton` stopped: β, and the slope last evaluated (g(β) when converged, else g at
    the β before the last step)."""

    beta: float
    slope: float
    converged: bool  # |g(β)| ≤ tol or the bracket narrower than tol·max(1, β)
    iterations: int  # evaluations of the slope


def bracketed_newton(
    slope: Callable[[float], tuple[float, float]], beta: float, lo: float, hi: float, tol: float, max_iter: int
) -> Root:
    """The root of the increasing ``slope`` (β ↦ g(β), g'(β)) in [lo, hi], from ``beta`` inside it.

    Each evaluation replaces an end of the bracket by β (hi when g(β) > 0, else lo); the search stops when
    |g(β)| ≤ ``tol`` or the bracket is narrower than ``tol``·max(1, β), else after ``max_iter`` evaluations.
    The next β is the Newton step β − g/g' when it falls strictly inside the bracket, else its midpoint.
    A root beyond an end drives the bracket onto that end. ``slope`` is NaN when nothing was evaluated.
    """
    g, converged, it = np.nan, False, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        g, h = slope(beta)
        if g > 0:
            hi = beta
        else:
            lo = beta
        if abs(g) <= tol or hi - lo <= tol * max(1.0, beta):
            converged = True
            break
        step = beta - g / h if h > 0 else np.nan
        beta = step if lo < step < hi else 0.5 * (lo + hi)
    return Root(beta, g, converged, it)


def iteration_plan(
    n_parameters: int, newton_max_parameters: int, max_iter: int, max_iter_given: bool, work: int
) -> tuple[int, int]:
    """(Newton steps, iterations in all) of :func:`minimize_box`.

    Newton where its exact Hessian pays (up to ``newton_max_parameters`` parameters), for at most
    NEWTON_MAX_ITER of the ``max_iter`` iterations; else L-BFGS-B alone, whose limit, unless ``max_iter_given``,
    is also at most MAX_WORK operations at ``work`` operations an iteration.
    """
    newton = n_parameters <= newton_max_parameters
    newton_steps = min(max_iter, NEWTON_MAX_ITER) if newton else 0
    if not newton and not max_iter_given:
        max_iter = min(max_iter, max(1, int(MAX_WORK / work)))
    return newton_steps, max_iter


@dataclass(frozen=True)
class Box:
    """Bounds lo ≤ θ ≤ hi on each component (±inf where free)."""

    lo: np.ndarray
    hi: np.ndarray

    def held(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Components at, or within ε of, a bound their gradient pushes them across (Bertsekas' ε-active set,
        ε the smaller of 1 % of the box and the length of the projected gradient step)."""
        lo, hi = self.lo, self.hi
        eps = np.minimum(0.01 * (hi - lo), np.linalg.norm(theta - np.clip(theta - grad, lo, hi)))
        return ((theta <= lo + eps) & (grad > 0)) | ((theta >= hi - eps) & (grad < 0))

    def stationary(self, theta: np.ndarray, grad: np.ndarray, tol: float) -> bool:
        """Every component of the projected gradient below tol (L-BFGS-B's gtol test)."""
        outward = ((theta <= self.lo) & (grad > 0)) | ((theta >= self.hi) & (grad < 0))
        return bool(np.abs(np.where(outward, 0.0, grad)).max() <= tol)


@dataclass(frozen=True)
class Minimum:
    """Where :func:`minimize_box` stopped."""

    theta: np.ndarray
    converged: bool
    iterations: int  # Newton steps and L-BFGS-B iterations together


def conjugate_gradient_step(h: HessianOperator, grad: np.ndarray, fixed: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Truncated Newton's direction: H s = −g on the free components by preconditioned conjugate gradients,
    stopped when the residual is below min(½, √|g|)·|g| (superlinear convergence: Eisenstat & Walker 1996), or
    when each of its components is below ½·``tol`` (the residual −g − H s is the gradient that the quadratic
    model predicts after the step: the minimiser's stopping test then holds to the model's accuracy), or
    after CG_MAX_ITER products; a diagonal step on the held ones. Not converged after ``h.refine_after``
    products, they restart from the step so far with the preconditioner of ``h.refine()``, where there is one."""
    free = ~fixed
    rhs = np.where(free, -grad, 0.0)
    norm = np.linalg.norm(rhs)
    target = min(0.5, np.sqrt(norm)) * norm
    step, residual = np.zeros_like(grad), rhs.copy()
    precondition = h.precondition
    z = np.where(free, precondition(residual), 0.0)
    direction, rz = z.copy(), residual @ z
    for i in range(1, CG_MAX_ITER + 1):
        hd = np.where(free, h.product(direction), 0.0)
        curvature = direction @ hd
        if not curvature > 0:  # flat, or rounding: keep the step so far (the gradient's direction at worst)
            if not step.any():
                step = z
            break
        alpha = rz / curvature
        step += alpha * direction
        residual -= alpha * hd
        if np.linalg.norm(residual) <= target or np.abs(residual).max() <= 0.5 * tol:
            break
        if h.refine is not None and i == h.refine_after:  # restart: the directions so far are M-conjugate only
            precondition = h.refine()
            z = np.where(free, precondition(residual), 0.0)
            direction, rz = z.copy(), residual @ z
            continue
        z = np.where(free, precondition(residual), 0.0)
        rz, rz_old = residual @ z, rz
        direction = z + (rz / rz_old) * direction
    diag = h.diagonal[fixed]
    step[fixed] = -grad[fixed] / np.maximum(diag, NEWTON_RCOND * max(h.diagonal.max(), 0.0) + np.finfo(float).tiny)
    return step


def newton_step(h, grad: np.ndarray, fixed: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Projected Newton's direction: the Newton system on the free components, a diagonal step on the held ones.
    ``h``: the Hessian, or a :class:`HessianOperator` (then :func:`conjugate_gradient_step`, to ``tol``).

    H + μI, μ = NEWTON_RCOND × H's largest diagonal entry: the gradient has no component along directions where
    H is singular (the calibrators' dropped directions), and along a direction where the loss keeps falling
    without a minimum (separable data) the long step meets the box.
    """
    from scipy import linalg

    if isinstance(h, HessianOperator):
        return conjugate_gradient_step(h, grad, fixed, tol)
    free = ~fixed
    mu = NEWTON_RCOND * np.diag(h).max()
    step = np.zeros_like(grad)
    h_free = h[np.ix_(free, free)] + mu * np.eye(free.sum())
    try:
        step[free] = -linalg.cho_solve(linalg.cho_factor(h_free), grad[free])
    except linalg.LinAlgError:  # not positive definite in float64: floor the eigenvalues at μ
        lam, vec = np.linalg.eigh(h_free)
        step[free] = -vec @ ((vec.T @ grad[free]) / np.maximum(lam, mu))
    step[fixed] = -grad[fixed] / np.maximum(np.diag(h)[fixed], mu)  # towards their bound
    return step


def armijo(loss_grad: LossGrad, box: Box, theta, loss, grad, step):
    """(θ, loss, gradient) of the first point θ(t) = clip(θ + t·step), t = 1, ½, ¼, …, on the projected path
    whose loss falls by ARMIJO_C of the gradient's prediction; None after ARMIJO_HALVINGS halvings."""
    t = 1.0
    for _ in range(ARMIJO_HALVINGS):
        trial = np.clip(theta + t * step, box.lo, box.hi)
        trial_loss, trial_grad = loss_grad(trial)
        if trial_loss <= loss + ARMIJO_C * (grad @ (trial - theta)):
            return trial, trial_loss, trial_grad
        t *= 0.5
    return None


def projected_newton(loss_grad: LossGrad, make_hessian, box: Box, theta, tol: float, max_steps: int):
    """Projected Newton (Bertsekas 1982) from θ: a component at a bound whose gradient pushes outwards is held
    there; the step solves the Newton system on the others and is projected onto the box, with Armijo
    backtracking. ``make_hessian()`` returns the function θ ↦ H(θ); it is called once, and only when a step is
    to be taken. Stops when :meth:`Box.stationary`, after ``max_steps`` steps, or when no halving of a step
    lowers the loss (float64 rounding). Returns (θ, converged, steps)."""
    loss, grad = loss_grad(theta)
    it = 0
    hessian = make_hessian() if max_steps and not box.stationary(theta, grad, tol) else None
    while not (converged := box.stationary(theta, grad, tol)) and it < max_steps:
        it += 1
        fixed = box.held(theta, grad)
        step = newton_step(hessian(theta), grad, fixed, tol)
        found = armijo(loss_grad, box, theta, loss, grad, step)
        if found is None:
            break  # no decrease along the Newton path: L-BFGS-B finishes
        theta, loss, grad = found
    return theta, converged, it


def lbfgsb(loss_grad: LossGrad, box: Box, theta, tol: float, max_iter: int) -> tuple[np.ndarray, bool, int]:
    """SciPy's L-BFGS-B from θ in the box: (θ, converged, iterations), gtol = ``tol``, ftol = FTOL."""
    from scipy import optimize

    res = optimize.minimize(
        loss_grad,
        theta,
        jac=True,
        method="L-BFGS-B",
        bounds=optimize.Bounds(box.lo, box.hi),
        options=dict(maxiter=max_iter, gtol=tol, ftol=FTOL),
    )
    return res.x, bool(res.success), int(res.nit)


def minimize_box(
    loss_grad: LossGrad, make_hessian, theta0, box: Box, *, tol: float, max_iter: int, newton_steps: int
) -> Minimum:
    """A minimum of a convex ``loss_grad`` (θ ↦ loss, gradient) in ``box`` from ``theta0`` (clipped into it).

    Up to ``newton_steps`` projected Newton steps with the Hessian of ``make_hessian()`` (a function θ ↦ H(θ),
    a matrix or a :class:`HessianOperator`, built only when a step is taken), then, not converged, L-BFGS-B with the iterations left of ``max_iter``.
    Converged: every projected gradient component ≤ ``tol``. BLAS runs on one thread (N×K times K×K: threads
    only add overhead, and fight a busy machine).
    """
    with one_blas_thread():
        theta = np.clip(theta0, box.lo, box.hi)
        theta, converged, it = projected_newton(loss_grad, make_hessian, box, theta, tol, newton_steps)
        nit = it
        if not converged and it < max_iter:
            theta, converged, more = lbfgsb(loss_grad, box, theta, tol, max_iter - it)
            nit = it + more
    return Minimum(theta, converged, nit)
