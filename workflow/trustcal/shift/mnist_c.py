"""MNIST-C's corruptions (Mu & Gilmer, 2019), on uint8 MNIST image arrays.

The reference is google-research/mnist-c ``corruptions.py`` (commit bba57e4, its list ``CORRUPTIONS``,
the fifteen corruptions of the MNIST-C benchmark and ``identity``). MNIST-C applies each corruption at
ONE fixed strength: the reference's functions take a ``severity`` whose default is the one the
benchmark used, and the parameters here are those defaults' (shot_noise 5, impulse_noise 4,
glass_blur 1, motion_blur 1, shear 2, scale 3, rotate 2, brightness 5, translate 3, fog 5, spatter 4;
stripe, dotted_line, zigzag and canny_edges have none). So the only severity here is 1
(:data:`SEVERITIES`), which stands for "as in MNIST-C". Each corruption follows the reference's order
of operations and ends as it ends, a float32 image in [0, 255]; the uint8 result is that image cast by
``astype(np.uint8)``, which truncates (the reference returns float32 and leaves the conversion to its
caller; the released MNIST-C files are uint8). Only NumPy and SciPy are used, no scikit-image, OpenCV
or ImageMagick.

Images: :func:`corrupt_mnist` takes a stack of grey images as the project stores MNIST, uint8
(N, 1, 28, 28), or (N, 28, 28), and returns the same shape and dtype; other sizes are refused. The
per-corruption functions (``MNIST_C[name].function``) take (N, 28, 28).

Random numbers: a corruption that draws them takes ``rng``, a ``numpy.random.Generator`` or a legacy
``numpy.random.RandomState``; the draws are made in the reference's order, image after image, so a
RandomState seeded as the reference's global ``np.random`` reproduces its images (impulse_noise: a
Generator seeded as the one scikit-image ≥ 0.19 draws from). Splitting a stack into chunks does not
change the result.

Matching the reference (tests/unit/shift/test_mnist_c_reference.py), run with scikit-image 0.26,
OpenCV 4.10 and ImageMagick 6.9.11 at quantum depth 16: every corruption gives the reference's uint8
images exactly, on the tests' synthetic digits and on the first 200 of MNIST's test images. Where
the reference's result depends on a library's version, this follows the version noted:

* shear: scikit-image's ``AffineTransform(shear=s)`` as of 2019, when MNIST-C was made: the matrix
  [[1, -sin s], [0, cos s]]; later versions (0.26 among them) build [[1, -tan s], [0, 1]] instead.
* shear, scale, rotate, translate: ``skimage.transform.warp`` (bilinear, constant 0 outside, the
  result clipped to the image's range) in its Cython arithmetic.
* glass_blur: ``gaussian(..., multichannel=True)`` on a 2-D image blurs along its first axis only,
  down the columns (the last axis is taken for channels); scikit-image ≥ 0.19 spells it ``channel_axis=-1``. Its
  pixel swaps are real swaps here (each pixel of a 2-D image is a scalar).
* spatter: scikit-image 0.26 blurs the float32 mask in float32; a version that blurs it in float64
  could truncate a value near a level differently.
* canny_edges: ``skimage.feature.canny`` as scikit-image 0.26 computes it (its Cython non-maximum
  suppression, whose low threshold is a C float; older versions suppressed in NumPy).
* motion_blur: ImageMagick 6's ``MotionBlurImage`` (:func:`trustcal.shift._ports.magick_motion_blur`).

The values also rest on the machine's ``log`` (dotted_line, zigzag) and on NumPy's BLAS for
zigzag's ``ndarray.dot`` of a 2 × 2 rotation, called as the reference calls them: another machine's
last bits could move a value lying at a level's edge.

Not ported: the sixteen other corruptions of the reference's ``ALL_CORRUPTIONS`` (gaussian_noise,
speckle_noise, pessimal_noise, gaussian_blur, defocus_blur, zoom_blur, frost, snow, contrast,
saturate, jpeg_compression, pixelate, elastic_transform, quantize, line, inverse), which the
paper's appendix tried and the benchmark left out; they are not MNIST-C's, so not listed here.
"""

from __future__ import annotations

import math

import numpy as np

from trustcal.shift import _ports
from trustcal.shift.corruptions import Corruption, _missing, by_name, checked, in_chunks

Rng = np.random.Generator | np.random.RandomState
SEVERITIES = (1,)
SIZE = 28  # MNIST's images are 28 × 28; the parameters below are for that size
REFERENCE = "google-research/mnist-c corruptions.py"
REFERENCE_COMMIT = "bba57e4ccc282f106907c5239958e72298451ea7"
_CENTRE = 13.5  # the reference keeps the point (13.5, 13.5) fixed under its affine maps


def _finish(values: np.ndarray) -> np.ndarray:
    """The reference's float32 result, cast to uint8 (truncation)."""
    return np.asarray(values).astype(np.float32).astype(np.uint8)


def _integers(rng: Rng, low: int, high: int, size) -> np.ndarray:
    """Integers in [low, high): ``Generator.integers`` or ``RandomState.randint``."""
    if isinstance(rng, np.random.RandomState):
        return rng.randint(low, high, size=size)
    return rng.integers(low, high, size=size)


def _signs(rng: Rng, size) -> np.ndarray:
    """``np.random.choice([-1, 1], ...)``: -1 or 1 with even odds (a RandomState draws ``randint(0, 2)``)."""
    return np.array([-1, 1])[_integers(rng, 0, 2, size)]


# --------------------------------------------------------------------------------------------------
# Noise and blur


def identity(images: np.ndarray, severity: int = 1, rng: Rng | None = None) -> np.ndarray:
    """The clean images (corruptions.py ``identity``)."""
    return images.copy()


def shot_noise(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Poisson noise: Poisson(3 x) / 3 on [0, 1] values, clipped (``shot_noise``, severity 5, c = 3)."""
    return _finish(np.clip(rng.poisson(images / 255.0 * 3) / 3.0, 0, 1) * 255)


def impulse_noise(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Salt-and-pepper noise on a fraction 0.17 of the values (``impulse_noise``, severity 4, which calls
    ``skimage.util.random_noise(mode='s&p', amount=0.17)``): a value is hit where a uniform draw is
    ≤ 0.17 and set to 1 where a second is ≤ 0.5, else to 0; per image all first draws, then all
    second ones, as scikit-image ≥ 0.19 draws them from its Generator."""
    x = images / 255.0
    draws = rng.random((x.shape[0], 2, *x.shape[1:]))
    hit, salt = draws[:, 0] <= 0.17, draws[:, 1] <= 0.5
    x[hit & salt] = 1.0
    x[hit & ~salt] = 0.0
    return _finish(np.clip(x, 0, 1) * 255)


def _glass_draws(rng: Rng, n: int, count: int):
    """For each image and each of ``count`` visited pixels: whether it is swapped
    (``np.random.choice([True, False])``) and, only then, dx and dy (``randint(-1, 1, size=2)``).
    A RandomState draws each of these from one 32-bit word of its stream (the lowest bit): the words
    are read ahead, the swaps decoded, and the state moved on by the words used."""
    if not isinstance(rng, np.random.RandomState):  # per image and pixel: the choice, dx, dy (all drawn)
        draws = rng.integers(0, 2, size=(n, count, 3))
        return draws[:, :, 0] == 0, draws[:, :, 1:] - 1
    chosen = np.zeros((n, count), dtype=bool)
    shifts = np.zeros((n, count, 2), dtype=np.int64)
    for i in range(n):
        state = rng.get_state()
        bits = (rng.randint(0, 2**32, size=3 * count, dtype=np.uint32) & 1).tolist()
        used, picked, moves = 0, [], []
        for p in range(count):
            if bits[used] == 0:  # index 0 of [True, False]
                picked.append(p)
                moves.append((bits[used + 1] - 1, bits[used + 2] - 1))
                used += 3
            else:
                used += 1
        rng.set_state(state)
        rng.randint(0, 2**32, size=used, dtype=np.uint32)
        chosen[i, picked] = True
        shifts[i, picked] = np.array(moves, dtype=np.int64).reshape(-1, 2)
    return chosen, shifts


def glass_blur(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Blur, local pixel swaps, blur (``glass_blur``, severity 1: sigma 0.7, max_delta 1, 2 rounds).

    The blur is ``gaussian(x, sigma=0.7, multichannel=True)``, which on a 2-D image filters along the
    rows' axis only (mode ``nearest``, truncate 4); the first is truncated to uint8. A round visits
    rows 27 … 2 and in each columns 27 … 2; at each pixel, with even odds, it swaps the pixel with the
    one at (row + dy, column + dx) for dx, dy drawn in {-1, 0}."""
    sigma, rounds = 0.7, 2
    n = images.shape[0]
    x = (_rows_blur(images / 255.0, sigma) * 255).astype(np.uint8)
    visited = range(SIZE - 1, 1, -1)
    positions = [(h, w) for h in visited for w in visited]
    chosen, shifts = _glass_draws(rng, n, rounds * len(positions))
    chosen = chosen.reshape(n, rounds, len(positions))
    shifts = shifts.reshape(n, rounds, len(positions), 2)
    for r in range(rounds):
        for p, (h, w) in enumerate(positions):
            which = np.flatnonzero(chosen[:, r, p])
            if which.size == 0:
                continue
            hp, wp = h + shifts[which, r, p, 1], w + shifts[which, r, p, 0]
            moved, kept = x[which, hp, wp], x[which, h, w]
            x[which, h, w] = moved
            x[which, hp, wp] = kept
    return _finish(np.clip(_rows_blur(x / 255.0, sigma), 0, 1) * 255)


def _rows_blur(stack: np.ndarray, sigma: float) -> np.ndarray:
    """``skimage.filters.gaussian(image, sigma, multichannel=True)`` of each 2-D image of a stack: SciPy's
    ``gaussian_filter`` along the images' first axis only, mode ``nearest``, truncate 4."""
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(stack, (0.0, sigma, 0.0), mode="nearest", truncate=4.0)


def motion_blur(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """ImageMagick's motion blur with radius 10 and sigma 3 at an angle drawn uniformly in [-45, 45)
    degrees per image (``motion_blur``, severity 1; Wand's ``MagickMotionBlurImage`` on the 8-bit grey
    PNG; :func:`trustcal.shift._ports.magick_motion_blur`)."""
    angles = rng.uniform(-45, 45, size=images.shape[0])
    return _ports.magick_motion_blur(images[..., None], 10, 3, angles)[..., 0]


# --------------------------------------------------------------------------------------------------
# Affine maps: skimage.transform.warp


def _warp(x: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """``skimage.transform.warp(image, inverse_map=AffineTransform(matrix))`` of float64 images (N, 28, 28),
    one (2, 3) matrix each mapping output (column, row) to input (column, row): bilinear, 0 outside
    (``_warp_fast``: c = m00 col + m01 row + m02, r likewise; floor and ceil of each, the fractions,
    then (1 - dr) ((1 - dc) tl + dc tr) + dr ((1 - dc) bl + dc br)), clipped to the image's range
    (widened to 0 where no pixel is 0 and the output reaches 0, as ``_clip_warp_output`` does)."""
    n, h, w = x.shape
    rows, cols = np.mgrid[0:h, 0:w].astype(np.float64)
    m = matrices[:, :, :, None, None]
    c = m[:, 0, 0] * cols + m[:, 0, 1] * rows + m[:, 0, 2]
    r = m[:, 1, 0] * cols + m[:, 1, 1] * rows + m[:, 1, 2]
    minr, minc, maxr, maxc = np.floor(r), np.floor(c), np.ceil(r), np.ceil(c)
    dr, dc = r - minr, c - minc
    which = np.arange(n)[:, None, None]

    def pixel(rr: np.ndarray, cc: np.ndarray) -> np.ndarray:
        inside = (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
        values = x[which, np.clip(rr, 0, h - 1).astype(np.int64), np.clip(cc, 0, w - 1).astype(np.int64)]
        return np.where(inside, values, 0.0)

    top = (1 - dc) * pixel(minr, minc) + dc * pixel(minr, maxc)
    bottom = (1 - dc) * pixel(maxr, minc) + dc * pixel(maxr, maxc)
    out = (1 - dr) * top + dr * bottom
    low = x.min(axis=(1, 2), keepdims=True)
    high = x.max(axis=(1, 2), keepdims=True)
    widen = (low > 0) & (out.min(axis=(1, 2), keepdims=True) <= 0)
    return np.clip(out, np.where(widen, 0.0, low), high)


def _about_centre(a: np.ndarray) -> np.ndarray:
    """(N, 2, 2) linear parts → (N, 2, 3), translated so that (13.5, 13.5) stays put: a3 = 13.5 (1 - a1 -
    a2), b3 = 13.5 (1 - b1 - b2), as the reference computes them."""
    t = _CENTRE * (1 - a[:, :, 0] - a[:, :, 1])
    return np.concatenate([a, t[:, :, None]], axis=2)


def _warped(images: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    return _finish(np.clip(_warp(images / 255.0, matrices), 0, 1) * 255.0)


def shear(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A shear by s = ±0.4, the sign drawn with even odds per image (``shear``, severity 2), about the
    centre: ``AffineTransform(shear=s)`` as scikit-image computed it in 2019, [[1, -sin s], [0, cos s]]."""
    s = 0.4 * _signs(rng, images.shape[0])
    a = np.zeros((len(s), 2, 2))
    for i, angle in enumerate(s.tolist()):
        a[i] = [[1.0 * math.cos(0.0), -1.0 * math.sin(angle)], [1.0 * math.sin(0.0), 1.0 * math.cos(angle)]]
    return _warped(images, _about_centre(a))


def rotate(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A rotation by ±0.4 radians, the sign drawn with even odds per image (``rotate``, severity 2), about
    the centre."""
    s = 0.4 * _signs(rng, images.shape[0])
    a = np.array([[[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]] for t in s.tolist()]).reshape(-1, 2, 2)
    return _warped(images, _about_centre(a))


def scale(images: np.ndarray, severity: int = 1, rng: Rng | None = None) -> np.ndarray:
    """The inverse map scaled by 1 / 0.7 about the centre, so the digit shrinks to 0.7 (``scale``,
    severity 3)."""
    k = 1 / 0.7
    a = np.broadcast_to(np.array([[k, -0.0], [0.0, k]]), (images.shape[0], 2, 2))
    return _warped(images, _about_centre(a))


def translate(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A shift by ±3 pixels along each axis, the two signs drawn with even odds per image (``translate``,
    severity 3)."""
    d = 3 * _signs(rng, (images.shape[0], 2))
    matrices = np.zeros((len(d), 2, 3))
    matrices[:, 0, 0] = matrices[:, 1, 1] = 1.0
    matrices[:, :, 2] = d
    return _warped(images, matrices)


# --------------------------------------------------------------------------------------------------
# Digital and weather


def brightness(images: np.ndarray, severity: int = 1, rng: Rng | None = None) -> np.ndarray:
    """V of HSV raised by 0.5 and clipped (``brightness``, severity 5): the grey image's RGB has H = S = 0
    and V = x, so HSV → RGB gives min(x + 0.5, 1) in each channel, and ``rgb2gray`` weighs them by
    0.2125, 0.7154, 0.0721 (``rgb @ coeffs``)."""
    v = np.clip(images / 255.0 + 0.5, 0, 1)
    rgb = np.stack([v, v, v], axis=-1)
    return _finish(np.clip(rgb @ np.array([0.2125, 0.7154, 0.0721]), 0, 1) * 255)


def stripe(images: np.ndarray, severity: int = 1, rng: Rng | None = None) -> np.ndarray:
    """Columns 0–6 and 21–27 inverted, 255 - x (``stripe``)."""
    x = images.copy()
    x[:, :, :7] = 255 - x[:, :, :7]
    x[:, :, 21:] = 255 - x[:, :, 21:]
    return x


def fog(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A 256 × 256 plasma fractal (roughness decay 1.4; its 65,535 uniform draws per image in the
    reference's order), its top-left 28 × 28 times 3 added, rescaled by m / (m + 3) for m the image's
    maximum (``fog``, severity 5). Computed 16 images at a time."""
    x = images / 255.0
    out = np.empty(images.shape, dtype=np.uint8)
    for start in range(0, len(x), 16):
        part = x[start : start + 16]
        peak = part.max(axis=(1, 2), keepdims=True)
        uniform = rng.random((len(part), _ports.plasma_draw_count(256)))
        plasma = _ports.plasma_fractal(uniform, 256, 1.4)[:, :SIZE, :SIZE]
        out[start : start + 16] = _finish(np.clip((part + 3.0 * plasma) * peak / (peak + 3.0), 0, 1) * 255)
    return out


def spatter(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Mud spatter (``spatter``, severity 4): a Gaussian layer (mean 0.65, sd 0.3) per image, blurred
    (sigma 1), its values over 0.65 a mask, the mask blurred in float32 (sigma 1.5) and kept where ≥ 0.8;
    the image darkened by 1 - mask and mud of level 63 added where the mask is."""
    from scipy.ndimage import gaussian_filter

    x = np.asarray(images, dtype=np.float32) / 255.0
    liquid = rng.normal(size=images.shape, loc=0.65, scale=0.3)
    liquid = gaussian_filter(liquid, (0.0, 1.0, 1.0), mode="nearest", truncate=4.0)
    liquid[liquid < 0.65] = 0
    mask = np.where(liquid > 0.65, 1, 0).astype(np.float32)
    mask = gaussian_filter(mask, (0.0, 1.5, 1.5), mode="nearest", truncate=4.0)
    mask[mask < 0.8] = 0
    colour = 63 / 255.0 * np.ones_like(x) * mask
    x *= 1 - mask
    return _finish(np.clip(x + colour, 0, 1) * 255)


# --------------------------------------------------------------------------------------------------
# Lines and edges


_GRID = np.linspace(0, SIZE - 1, SIZE)  # the reference's meshgrid of linspace(0, 27, 28)


def _line(c0, r0, c1, r1) -> np.ndarray:
    """The reference's ``line_from_points``: the line through (c0, r0) and (c1, r1) (column, row), each
    pixel at vertical distance d < 2.3 from it lit by log(1 - d / 2.3) + 1 clipped to [0, 1], the
    columns before floor(c0) and from ceil(c1) on dark (with Python's slicing, as the reference);
    nothing where c0 = c1."""
    if c1 == c0:
        return np.zeros((SIZE, SIZE))
    slope = (r1 - r0) / (c1 - c0)
    dist = np.clip(np.abs(_GRID[:, None] - (slope * (_GRID[None, :] - c0) + r0)), 0, 2.3 - 1e-10)
    line = np.clip(np.log(1 - dist / 2.3) + 1, 0, 1)
    line[:, : int(np.floor(c0))] = 0
    line[:, int(np.ceil(c1)) :] = 0
    return line


def dotted_line(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A dotted line across the image (``dotted_line``): from (0, r0) to (27, r1), rows r0, r1 drawn in
    0 … 26 per image, column 27 and the column pairs [0, 2), [4, 6), … [24, 26) dark, added and
    clipped."""
    ends = _integers(rng, 0, SIZE - 1, (images.shape[0], 2))
    r0, r1 = ends[:, 0, None, None], ends[:, 1, None, None]
    slope = (r1 - r0) / (SIZE - 1 - 0)
    dist = np.clip(np.abs(_GRID[None, :, None] - (slope * (_GRID[None, None, :] - 0) + r0)), 0, 2.3 - 1e-10)
    line = np.clip(np.log(1 - dist / 2.3) + 1, 0, 1)
    line[:, :, SIZE - 1 :] = 0
    for start in range(0, 26, 4):
        line[:, :, start : start + 2] = 0
    return _finish(np.clip(images / 255.0 + line, 0, 1) * 255)


def _zigzag_one(x: np.ndarray, r0: int, r1: int) -> np.ndarray:
    """One image of the reference's ``zigzag``: a zigzag of pitch a = 2 and amplitude b = 2 along the
    segment from (2, r0) to (25, r1), drawn as the reference draws it (its endpoints rotated by the
    segment's angle with ``ndarray.dot``, each stroke added and clipped in turn)."""
    a, b, c0, c1 = 2.0, 2.0, 2, 25
    theta = np.arctan((r1 - r0) / (c1 - c0))
    d = (c1 - c0) / np.cos(theta)
    endpoints = [(0, 0)]
    r_i = 0.0
    for i in range(int((d - a) // (2 * a)) + 1):
        r_i = (-1) ** i * b
        endpoints.append(((2 * i + 1) * a, r_i))
    max_c = (2 * a) * (d // (2 * a))
    if d != max_c:
        endpoints.append((d, r_i / (2 * (d - max_c))))
    turn = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    cs, rs = turn.dot(np.array(endpoints).T)
    cs += c0
    rs += r0
    for i in range(1, len(cs)):
        x = np.clip(x + _line(cs[i - 1], rs[i - 1], cs[i], rs[i]), 0, 1)
    return x


def zigzag(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A zigzag line (``zigzag``): per image a row r0 drawn in 0 … 26, then r1 = r0 + an offset drawn in
    -5 … 4, and the zigzag from (2, r0) towards (25, r1) added (:func:`_zigzag_one`)."""
    out = np.empty(images.shape, dtype=np.float64)
    for i, image in enumerate(images):
        r0 = int(_integers(rng, 0, SIZE - 1, None))
        r1 = r0 + int(_integers(rng, -5, 5, None))
        out[i] = _zigzag_one(image / 255.0, r0, r1)
    return _finish(out * 255)


def _suppress(isobel: np.ndarray, jsobel: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """scikit-image's ``_nonmaximum_suppression_bilinear`` on stacks (N, H, W), border pixels excluded and
    the low threshold 0.1 a C float: a pixel keeps its magnitude m ≥ 0.1 where m is at least the
    magnitudes interpolated, with weight w the ratio of the smaller to the larger absolute gradient, at
    the two neighbours along the gradient, in the Cython's branches and arithmetic."""
    n, h, w = magnitude.shape
    out = np.zeros_like(magnitude)
    gi, gj, m = isobel[:, 1:-1, 1:-1], jsobel[:, 1:-1, 1:-1], magnitude[:, 1:-1, 1:-1]

    def at(dx: int, dy: int) -> np.ndarray:  # magnitude[x + dx, y + dy] for the interior pixels
        return magnitude[:, 1 + dx : h - 1 + dx, 1 + dy : w - 1 + dy]

    ai, aj = np.abs(gi), np.abs(gj)
    same_sign = (gi <= 0) == (gj <= 0)  # cond1: both gradients positive or both not
    first = np.where(same_sign, ai > aj, ai < aj)
    steep = np.where(same_sign, first, ~first)  # the branches that divide |jsobel| by |isobel|
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(steep, aj / ai, ai / aj)
    choices = (  # (cond1, first): neigh1_1, neigh1_2, neigh2_1, neigh2_2
        ((True, True), (at(1, 0), at(1, 1), at(-1, 0), at(-1, -1))),
        ((True, False), (at(0, 1), at(1, 1), at(0, -1), at(-1, -1))),
        ((False, True), (at(0, 1), at(-1, 1), at(0, -1), at(1, -1))),
        ((False, False), (at(-1, 0), at(-1, 1), at(1, 0), at(1, -1))),
    )
    keep = np.zeros(m.shape, dtype=bool)
    for (cond1, branch), (n11, n12, n21, n22) in choices:
        here = (same_sign == cond1) & (first == branch)
        plus = (n12 * weight + n11 * (1.0 - weight)) <= m
        minus = (n22 * weight + n21 * (1.0 - weight)) <= m
        keep |= here & plus & minus
    keep &= m >= float(np.float32(0.1))
    out[:, 1:-1, 1:-1] = np.where(keep, m, 0.0)
    return out


def canny_edges(images: np.ndarray, severity: int = 1, rng: Rng | None = None) -> np.ndarray:
    """The edges of ``skimage.feature.canny(x)`` at 255 (``canny_edges``): sigma 1, mode ``constant``
    (the Gaussian of the image divided by that of a plane of ones plus machine epsilon), SciPy's Sobel
    gradients, non-maximum suppression (:func:`_suppress`), and hysteresis: the 8-connected runs of
    kept pixels that hold one of magnitude ≥ 0.2."""
    from scipy import ndimage as ndi

    gauss = {"mode": "constant", "cval": 0.0, "truncate": 4.0}
    bleed = ndi.gaussian_filter(np.ones((SIZE, SIZE)), 1.0, **gauss) + np.finfo(np.float64).eps
    smoothed = ndi.gaussian_filter(images / 255.0, (0.0, 1.0, 1.0), **gauss) / bleed

    def sobel(axis: int, other: int) -> np.ndarray:  # ndi.sobel of each image along ``axis``
        out = ndi.correlate1d(smoothed, [-1, 0, 1], axis, mode="reflect")
        return ndi.correlate1d(out, [1, 2, 1], other, out, mode="reflect")

    jsobel, isobel = sobel(2, 1), sobel(1, 2)
    magnitude = isobel * isobel
    magnitude += jsobel * jsobel
    np.sqrt(magnitude, out=magnitude)
    low = _suppress(isobel, jsobel, magnitude)
    strel = np.zeros((3, 3, 3), dtype=bool)
    strel[1] = True  # 8-connected within each image, never across images
    labels, _ = ndi.label(low > 0, strel)
    good = np.zeros(labels.max() + 1, dtype=bool)
    good[labels[(low > 0) & (low >= 0.2)]] = True
    good[0] = False
    return _finish(good[labels].astype(np.float32) * 255)


# --------------------------------------------------------------------------------------------------
# The registry


MNIST_C: dict[str, Corruption] = by_name(
    Corruption.of(identity, False),
    Corruption.of(shot_noise, True),
    Corruption.of(impulse_noise, True),
    Corruption.of(glass_blur, True, needs=("scipy",)),
    Corruption.of(motion_blur, True),
    Corruption.of(shear, True),
    Corruption.of(scale, False),
    Corruption.of(rotate, True),
    Corruption.of(brightness, False),
    Corruption.of(translate, True),
    Corruption.of(stripe, False),
    Corruption.of(fog, True),
    Corruption.of(spatter, True, needs=("scipy",)),
    Corruption.of(dotted_line, True),
    Corruption.of(zigzag, True),
    Corruption.of(canny_edges, False, needs=("scipy",)),
)
"""MNIST-C's corruptions (the reference's ``CORRUPTIONS``: identity and the benchmark's fifteen), in its
order. Every one matches the reference exactly (``match == "exact"``)."""


def available_mnist() -> list[str]:
    """The MNIST-C corruptions this machine can compute, in the reference's order."""
    return [name for name, corruption in MNIST_C.items() if _missing(corruption) is None]


def unavailable_mnist() -> dict[str, str]:
    """The MNIST-C corruptions this machine cannot compute, each with the reason (none where SciPy is
    installed)."""
    return {name: reason for name, corruption in MNIST_C.items() if (reason := _missing(corruption)) is not None}


def corrupt_mnist(
    images: np.ndarray, name: str, severity: int = 1, rng: Rng | None = None, *, chunk: int = 256
) -> np.ndarray:
    """``images`` with MNIST-C's corruption ``name``, as MNIST-C makes it.

    ``images``: uint8, (N, 1, 28, 28) (the project's MNIST arrays) or (N, 28, 28); the result has the same
    shape and dtype. ``severity``: 1, the only one (MNIST-C fixes each corruption's strength). ``rng``:
    a seeded ``numpy.random.Generator`` (or ``RandomState``), required for the corruptions that draw
    random numbers (``MNIST_C[name].random``) and ignored by the others. The images are corrupted
    ``chunk`` at a time, which bounds the memory and does not change the result."""
    corruption = checked(
        MNIST_C,
        "MNIST-C ",
        name,
        severity,
        SEVERITIES,
        "1 (MNIST-C applies each corruption at one fixed strength)",
        rng,
    )
    images = np.asarray(images)
    shape = images.shape
    if images.dtype != np.uint8 or shape[1:] not in ((1, SIZE, SIZE), (SIZE, SIZE)):
        raise ValueError(
            f"images must be uint8 of shape (N, 1, 28, 28) or (N, 28, 28) (MNIST's 28 × 28 grey images), "
            f"not {images.dtype} of shape {shape}"
        )
    return in_chunks(corruption, images.reshape(shape[0], SIZE, SIZE), severity, rng, chunk).reshape(shape)
