"""CIFAR-10-C's corruptions (Hendrycks & Dietterich, ICLR 2019) at severities 1–5, on uint8 image arrays.

The reference is hendrycks/robustness ``ImageNet-C/create_c/make_cifar_c.py`` (commit 8190fe3, its
32 × 32 variants, not ImageNet-C's): every corruption here takes that file's parameters per severity
and its order of operations, and ends as it ends: the result, a float image in [0, 255] (clipped to
[0, 1] and times 255 where the reference does so), cast to uint8 by ``np.uint8``, which truncates.
The library routines it calls are computed in NumPy/SciPy/Pillow (:mod:`trustcal.shift._ports`).

Images: :func:`corrupt` takes a stack of RGB images as the project stores them, uint8 (N, 3, 32, 32)
(NCHW, torchvision's CIFAR arrays after :mod:`trustcal.data.cifar`), or (N, 32, 32, 3) with
``layout="NHWC"``, and returns the same shape and dtype. The per-corruption functions
(``CORRUPTIONS[name].function``) take NHWC, the reference's layout. The parameters are CIFAR-10-C's
for 32 × 32 RGB images; other sizes are refused.

Random numbers: a corruption that draws them takes ``rng``, a ``numpy.random.Generator`` (seeded by
the caller) or a legacy ``numpy.random.RandomState``. The draws are made in the reference's order,
image after image (the reference calls ``np.random`` once per image and step), so a RandomState
seeded as the reference's global state reproduces the reference's images; the exact-match tests
rely on this. Splitting a stack into chunks does not change the result.

Matching the reference (tests/unit/shift/test_corruptions_reference.py): every corruption here gives
the reference's uint8 images exactly, pixel for pixel, at every severity, given the same draws, on
the tests' synthetic images and on the first 200 of CIFAR-10's test images. The
reference's result depends on the libraries it ran on, and these are the ones matched:
scikit-image ≥ 0.19 (impulse_noise's draws: a uniform number per value for the hit, one for salt
or pepper; earlier versions drew the same trials from other numbers), OpenCV 4.10 (elastic_transform's
``warpAffine`` in 1/32-pixel steps; 4.11 and later interpolate at the exact position, which moves
10–15 % of the values of CIFAR-10's test images by 1 to 3 levels; snow's RGB→gray with fused multiply-adds, as its vectorised
loop runs on a machine with AVX2), ImageMagick 6.9.11 at quantum depth 16 (motion_blur and snow:
its 8-bit PNG keeps floor(quantum / 257)), Pillow's libjpeg (jpeg_compression). defocus_blur's
OpenCV ``filter2D`` sums the 17 × 17 kernel by a DFT and this sums it directly: the float sums
differ in the last bits, so a value within about 1e-13 of an integer level could truncate
differently; none did in the values tested.

Left out: frost, which blends crops of six photographs (frost1.png … frost6.jpg) that the reference's
repository holds beside the script and that are not available here (:func:`unavailable`).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from typing import Literal

import numpy as np

from trustcal.shift import _ports

Rng = np.random.Generator | np.random.RandomState
Layout = Literal["NCHW", "NHWC"]
SEVERITIES = (1, 2, 3, 4, 5)
SIZE = 32  # CIFAR's images are 32 × 32; the parameters below are for that size
REFERENCE = "hendrycks/robustness ImageNet-C/create_c/make_cifar_c.py"
REFERENCE_COMMIT = "8190fe329f5f072a06e3a2aea02bb5dda69aed9f"


def _unit(images: np.ndarray) -> np.ndarray:
    """uint8 → float64 in [0, 1], as ``np.array(x) / 255.``."""
    return images / 255.0


def _to_uint8(unit: np.ndarray) -> np.ndarray:
    """The reference's last step, ``np.clip(x, 0, 1) * 255``, and ``np.uint8`` of it (truncation)."""
    return (np.clip(unit, 0, 1) * 255).astype(np.uint8)


def _integers(rng: Rng, low: int, high: int, size) -> np.ndarray:
    """Integers in [low, high): ``Generator.integers`` or ``RandomState.randint``."""
    if isinstance(rng, np.random.RandomState):
        return rng.randint(low, high, size=size)
    return rng.integers(low, high, size=size)


# --------------------------------------------------------------------------------------------------
# Noise


def gaussian_noise(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Additive Gaussian noise of sd c = 0.04, 0.06, 0.08, 0.09, 0.10 on [0, 1] values, clipped
    (make_cifar_c.py ``gaussian_noise``)."""
    c = (0.04, 0.06, 0.08, 0.09, 0.10)[severity - 1]
    x = _unit(images)
    return _to_uint8(x + rng.normal(size=x.shape, scale=c))


def shot_noise(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Poisson noise: Poisson(x c) / c for c = 500, 250, 100, 75, 50 (make_cifar_c.py ``shot_noise``)."""
    c = (500, 250, 100, 75, 50)[severity - 1]
    x = _unit(images)
    return _to_uint8(rng.poisson(x * c) / c)


def impulse_noise(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Salt-and-pepper noise on a fraction c = 0.01, 0.02, 0.03, 0.05, 0.07 of the values
    (make_cifar_c.py ``impulse_noise``, which calls ``skimage.util.random_noise(mode='s&p')``): each
    value is hit with probability c (a uniform draw ≤ c), then set to 1 or 0 with even odds (a second
    draw ≤ 0.5 is salt), the two draws per image made as scikit-image ≥ 0.19 makes them (all of the
    image's first draws, then all of its second). Earlier versions of scikit-image drew the same
    trials from other numbers."""
    c = (0.01, 0.02, 0.03, 0.05, 0.07)[severity - 1]
    x = _unit(images)
    draws = rng.random((x.shape[0], 2, *x.shape[1:]))
    hit, salt = draws[:, 0] <= c, draws[:, 1] <= 0.5
    x[hit & salt] = 1.0
    x[hit & ~salt] = 0.0
    return _to_uint8(x)


# --------------------------------------------------------------------------------------------------
# Blur


def defocus_blur(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """Each channel correlated with an anti-aliased disk of radius 0.3, 0.4, 0.5, 1, 1.5 (its blur sigma
    0.4, 0.5, 0.6, 0.2, 0.1), borders reflected about the edge pixel (make_cifar_c.py
    ``defocus_blur`` and ``disk``; ``cv2.filter2D``). OpenCV sums a kernel this large by a DFT and
    this sums it directly: the float results may differ in the last bits (see the module's notes)."""
    radius, alias_blur = ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1))[severity - 1]
    kernel = _ports.disk_kernel(radius, alias_blur)
    return _to_uint8(_ports.correlate_reflect101(_unit(images), kernel))


def glass_blur(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Gaussian blur (sigma 0.05, 0.25, 0.4, 0.25, 0.4), truncated to uint8, local pixel shuffling (1, 1,
    1, 2, 2 rounds), Gaussian blur again (make_cifar_c.py ``glass_blur``, ``skimage.filters.gaussian``).

    A round visits rows 31 … 2 and in each columns 31 … 2, drawing dx, dy in {-1, 0} (``randint(-1,
    1, size=2)``), and sets the pixel to the one at (row + dy, column + dx). The reference writes this
    as a swap, ``x[h, w], x[h', w'] = x[h', w'], x[h, w]``, whose right-hand side holds views of the
    array: the second assignment writes back the value just copied, so only the first takes effect.
    With dx, dy ≤ 0 every source pixel is one the round has not visited yet (or the pixel itself), so
    a round is one gather from the image as it was before it (CIFAR-10-C's max_delta is 1 at every
    severity)."""
    sigma, max_delta, rounds = ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2))[severity - 1]
    n, h, w, _ = images.shape
    x = (_ports.skimage_gaussian(_unit(images), sigma) * 255).astype(np.uint8)
    # dx, dy for each image, round, row h = H-1 … 1+max_delta, column w = W-1 … 1+max_delta, in the reference's order
    visited_h, visited_w = h - 2 * max_delta, w - 2 * max_delta
    draws = _integers(rng, -max_delta, max_delta, (n, rounds, visited_h, visited_w, 2))
    draws = draws[:, :, ::-1, ::-1]  # back to increasing row and column
    rows = np.arange(max_delta + 1, h - max_delta + 1)[:, None]
    cols = np.arange(max_delta + 1, w - max_delta + 1)[None, :]
    which = np.arange(n)[:, None, None]
    for r in range(rounds):
        dx, dy = draws[:, r, :, :, 0], draws[:, r, :, :, 1]
        x[:, rows, cols] = x[which, rows + dy, cols + dx]
    return _to_uint8(_ports.skimage_gaussian(_unit(x), sigma))


def _zoom_factors(severity: int) -> np.ndarray:
    stop = (1.06, 1.11, 1.16, 1.21, 1.26)[severity - 1]
    return np.arange(1, stop, 0.01)  # as the reference: np.arange's float steps decide the last factor


def zoom_blur(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """The mean of the image and its zooms by 1, 1.01, … (``np.arange(1, stop, 0.01)`` for stop 1.06, 1.11,
    1.16, 1.21, 1.26, whose float steps reach 1.06 and 1.11 but not 1.16, 1.21, 1.26: 7, 12, 16, 21,
    26 zooms), each the central crop zoomed back to 32 × 32 (``scipy.ndimage.zoom``, order 1), in
    float32 (make_cifar_c.py ``zoom_blur`` and ``clipped_zoom``)."""
    n, h, w, ch = images.shape
    x = _unit(images).astype(np.float32)
    stack = np.ascontiguousarray(x.transpose(1, 2, 0, 3).reshape(h, w, n * ch))  # the images side by side
    total = np.zeros_like(stack)
    factors = _zoom_factors(severity)
    for factor in factors:
        total += _ports.clipped_zoom(stack, factor)
    stack = (stack + total) / (len(factors) + 1)
    return _to_uint8(stack.reshape(h, w, n, ch).transpose(2, 0, 1, 3))


def motion_blur(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """ImageMagick's motion blur with radius 6, 6, 6, 8, 9 and sigma 1, 1.5, 2, 2, 2.5, at an angle drawn
    uniformly in [-45, 45) degrees per image (make_cifar_c.py ``motion_blur``, Wand's
    ``MagickMotionBlurImage``; :func:`trustcal.shift._ports.magick_motion_blur`)."""
    radius, sigma = ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5))[severity - 1]
    angles = rng.uniform(-45, 45, size=images.shape[0])
    return _ports.magick_motion_blur(images, radius, sigma, angles)


# --------------------------------------------------------------------------------------------------
# Weather


def snow(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """Snow (make_cifar_c.py ``snow``): per image a 32 × 32 Gaussian layer (mean, sd) zoomed by a factor,
    values under a threshold set to 0, truncated to uint8 and motion-blurred by ImageMagick along an
    angle drawn in [-135, -45) degrees; the image whitened towards max(x, 1.5 gray + 0.5) (gray
    OpenCV's RGB→gray, float32), the layer added with its 180° rotation, clipped. Parameters
    (mean, sd, zoom, threshold, blur radius, blur sigma, weight of the image) per severity:
    (0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9), (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
    (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85), (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)."""
    c = (
        (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
        (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
        (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
        (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
        (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
    )[severity - 1]
    n, h, w, _ = images.shape
    layers = np.empty((h, w, n), dtype=np.float64)
    angles = np.empty(n, dtype=np.float64)
    for i in range(n):  # the reference's draws for one image: the layer, then the angle
        layers[:, :, i] = rng.normal(size=(h, w), loc=c[0], scale=c[1])
        angles[i] = rng.uniform(-135, -45)
    layers = _ports.clipped_zoom(layers, c[2])
    layers[layers < c[3]] = 0
    flakes = (np.clip(layers, 0, 1) * 255).astype(np.uint8).transpose(2, 0, 1)[..., None]  # (N, H, W, 1)
    flakes = _ports.magick_motion_blur(flakes, c[4], c[5], angles) / 255.0

    x = np.asarray(images, dtype=np.float32) / 255.0
    gray = _ports.rgb_to_gray_f32(x)[..., None]
    x = c[6] * x + (1 - c[6]) * np.maximum(x, gray * 1.5 + 0.5)
    return _to_uint8(x + flakes + np.rot90(flakes, k=2, axes=(1, 2)))


def fog(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A plasma fractal (diamond-square, one per image, its 1,023 uniform draws in the reference's order)
    times c0 = 0.2, 0.5, 0.75, 1, 1.5 added to the image, rescaled by m / (m + c0) for m the image's
    maximum; the fractal's roughness decay c1 = 3, 3, 2.5, 2, 1.75 (make_cifar_c.py ``fog`` and
    ``plasma_fractal``)."""
    c = ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75))[severity - 1]
    n = images.shape[0]
    x = _unit(images)
    peak = x.max(axis=(1, 2, 3), keepdims=True)
    uniform = rng.random((n, _ports.plasma_draw_count(SIZE)))
    plasma = _ports.plasma_fractal(uniform, SIZE, c[1])[:, :SIZE, :SIZE, None]
    x += c[0] * plasma
    return _to_uint8(x * peak / (peak + c[0]))


# --------------------------------------------------------------------------------------------------
# Digital


def brightness(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """V of HSV raised by c = 0.05, 0.1, 0.15, 0.2, 0.3 and clipped to [0, 1] (make_cifar_c.py
    ``brightness``; scikit-image's ``rgb2hsv`` / ``hsv2rgb``)."""
    c = (0.05, 0.1, 0.15, 0.2, 0.3)[severity - 1]
    hsv = _ports.rgb_to_hsv(_unit(images))
    hsv[..., 2] = np.clip(hsv[..., 2] + c, 0, 1)
    return _to_uint8(_ports.hsv_to_rgb(hsv))


def contrast(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """Each channel pulled towards its mean over the image, (x - mean) c + mean for c = 0.75, 0.5, 0.4,
    0.3, 0.15 (make_cifar_c.py ``contrast``)."""
    c = (0.75, 0.5, 0.4, 0.3, 0.15)[severity - 1]
    x = _unit(images)
    means = np.mean(x, axis=(1, 2), keepdims=True)  # summed in the order NumPy sums one image's (0, 1)
    return _to_uint8((x - means) * c + means)


def _pillow_each(images: np.ndarray, transform: Callable) -> np.ndarray:
    from PIL import Image

    out = np.empty_like(images)
    for i, image in enumerate(images):
        out[i] = np.asarray(transform(Image.fromarray(image)))
    return out


def pixelate(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """Pillow's BOX resize to int(32 c) pixels a side, c = 0.95, 0.9, 0.85, 0.75, 0.65 (30, 28, 27, 24,
    20), and BOX back to 32 (make_cifar_c.py ``pixelate``)."""
    from PIL import Image

    c = (0.95, 0.9, 0.85, 0.75, 0.65)[severity - 1]
    small = int(SIZE * c)

    def transform(image):
        return image.resize((small, small), Image.BOX).resize((SIZE, SIZE), Image.BOX)

    return _pillow_each(images, transform)


def jpeg_compression(images: np.ndarray, severity: int, rng: Rng | None = None) -> np.ndarray:
    """JPEG at Pillow quality 80, 65, 58, 50, 40 (its default 4:2:0 chroma subsampling), decoded again
    (make_cifar_c.py ``jpeg_compression``)."""
    from PIL import Image

    quality = (80, 65, 58, 50, 40)[severity - 1]

    def transform(image):
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality)
        return Image.open(buffer)

    return _pillow_each(images, transform)


def elastic_transform(images: np.ndarray, severity: int, rng: Rng) -> np.ndarray:
    """A random affine warp, then a smooth random displacement field (make_cifar_c.py
    ``elastic_transform``, itself after erniejunior's elastic-transform gist). Parameters, multiples of
    the image size 32: (alpha, sigma, affine jitter) = 32 × (0, 0, 0.08), (0.05, 0.2, 0.07),
    (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03).

    Per image: the corners of a triangle about the centre, (26, 26), (26, 6), (6, 6), each moved by a
    uniform draw in ±jitter, define the affine map (OpenCV's ``getAffineTransform``, then
    ``warpAffine`` with bilinear interpolation and reflected borders, in float32); two fields of
    uniform draws in [-1, 1) smoothed by a Gaussian of that sigma (``skimage.filters.gaussian``, mode
    ``reflect``, truncate 3) times alpha displace the rows and columns, and the image is sampled there
    by ``scipy.ndimage.map_coordinates`` (order 1, mode ``reflect``)."""
    from scipy.ndimage import map_coordinates

    alpha, sigma, jitter = (
        (SIZE * 0, SIZE * 0, SIZE * 0.08),
        (SIZE * 0.05, SIZE * 0.2, SIZE * 0.07),
        (SIZE * 0.08, SIZE * 0.06, SIZE * 0.06),
        (SIZE * 0.1, SIZE * 0.04, SIZE * 0.05),
        (SIZE * 0.1, SIZE * 0.03, SIZE * 0.03),
    )[severity - 1]
    n, h, w, ch = images.shape
    moves = np.empty((n, 3, 2), dtype=np.float64)
    fields = np.empty((n, 2, h, w), dtype=np.float64)
    for i in range(n):  # the reference's draws for one image: the triangle, dx's field, dy's field
        moves[i] = rng.uniform(-jitter, jitter, size=(3, 2))
        fields[i, 0] = rng.uniform(-1, 1, size=(h, w))
        fields[i, 1] = rng.uniform(-1, 1, size=(h, w))

    x = np.asarray(images, dtype=np.float32) / 255.0
    centre = np.float32((h, w)) // 2
    side = min(h, w) // 3
    triangle = np.float32([centre + side, [centre[0] + side, centre[1] - side], centre - side])
    src = np.broadcast_to(triangle, (n, 3, 2))
    dst = src + moves.astype(np.float32)
    x = _ports.warp_affine_reflect101(x, _ports.affine_transform_matrix(src, dst))

    smooth = _ports.skimage_gaussian(fields.reshape(n * 2, h, w), sigma, mode="reflect", truncate=3)
    shifts = (smooth * alpha).astype(np.float32).reshape(n, 2, h, w)
    dx, dy = shifts[:, 0], shifts[:, 1]
    rows = np.arange(h)[None, :, None] + dy  # int + float32 → float64, as the reference's meshgrid sum
    cols = np.arange(w)[None, None, :] + dx
    planes = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(n * ch, h, w)
    which = np.broadcast_to(np.arange(n * ch)[:, None, None], (n * ch, h, w)).astype(np.float64)
    coords = np.stack([which, np.repeat(rows, ch, axis=0), np.repeat(cols, ch, axis=0)])
    sampled = map_coordinates(planes, coords, order=1, mode="reflect").reshape(n, ch, h, w)
    return _to_uint8(sampled.transpose(0, 2, 3, 1))


# --------------------------------------------------------------------------------------------------
# The registry


@dataclasses.dataclass(frozen=True)
class Corruption:
    """One corruption of CIFAR-10-C (or MNIST-C, :mod:`trustcal.shift.mnist_c`): ``function(images uint8,
    severity, rng) -> images`` (NHWC; MNIST-C's (N, 28, 28)); whether
    it draws random numbers (then ``rng`` is required); the reference function it follows; how it
    matches that reference (``exact`` or a sentence); the modules it needs; and, where it cannot be
    computed, why (``function`` is then None)."""

    name: str
    function: Callable[[np.ndarray, int, Rng | None], np.ndarray] | None
    random: bool
    reference: str
    match: str = "exact"
    needs: tuple[str, ...] = ()
    reason: str | None = None

    @classmethod
    def of(cls, function, random: bool, match: str = "exact", needs: tuple[str, ...] = ()) -> Corruption:
        """The corruption computed by ``function``, named as it and as the reference function it follows."""
        return cls(function.__name__, function, random, function.__name__, match, needs)


def by_name(*corruptions: Corruption) -> dict[str, Corruption]:
    """The corruptions by name, in their order: a registry."""
    return {c.name: c for c in corruptions}


_DEFOCUS_MATCH = (
    "exact in every value tested; OpenCV's filter2D sums the 17 × 17 kernel by a DFT and this sums it "
    "directly, so a value within about 1e-13 of an integer level could truncate differently"
)
_OPENCV_410 = "exact, as OpenCV up to 4.10 computes warpAffine (1/32-pixel steps)"
_MAGICK = "exact, as ImageMagick 6.9 at quantum depth 16 blurs and writes an 8-bit PNG"

CORRUPTIONS: dict[str, Corruption] = by_name(
    Corruption.of(gaussian_noise, True),
    Corruption.of(shot_noise, True),
    Corruption.of(impulse_noise, True),
    Corruption.of(defocus_blur, False, _DEFOCUS_MATCH, ("scipy",)),
    Corruption.of(glass_blur, True, needs=("scipy",)),
    Corruption.of(motion_blur, True, _MAGICK),
    Corruption.of(zoom_blur, False),
    Corruption.of(snow, True, _MAGICK),
    Corruption(
        "frost",
        None,
        True,
        "frost",
        reason=(
            "needs the six frost photographs (frost1.png, frost2.png, frost3.png, frost4.jpg, frost5.jpg, "
            "frost6.jpg) that the reference blends in; they are not available here"
        ),
    ),
    Corruption.of(fog, True),
    Corruption.of(brightness, False),
    Corruption.of(contrast, False),
    Corruption.of(elastic_transform, True, _OPENCV_410, ("scipy",)),
    Corruption.of(pixelate, False, needs=("PIL",)),
    Corruption.of(jpeg_compression, False, needs=("PIL",)),
)
"""The fifteen corruptions of CIFAR-10-C, in the reference's order."""


def _missing(corruption: Corruption) -> str | None:
    import importlib.util

    if corruption.reason is not None:
        return corruption.reason
    lacking = [module for module in corruption.needs if importlib.util.find_spec(module) is None]
    if lacking:
        return f"needs {', '.join(lacking)}, not installed (pip install scipy pillow)"
    return None


def available() -> list[str]:
    """The corruptions this machine can compute, in the reference's order."""
    return [name for name, corruption in CORRUPTIONS.items() if _missing(corruption) is None]


def unavailable() -> dict[str, str]:
    """The corruptions this machine cannot compute, each with the reason."""
    return {name: reason for name, corruption in CORRUPTIONS.items() if (reason := _missing(corruption)) is not None}


def corrupt(
    name: str,
    images: np.ndarray,
    severity: int,
    rng: Rng | None = None,
    *,
    layout: Layout = "NCHW",
    chunk: int = 256,
) -> np.ndarray:
    """``images`` with the corruption ``name`` at ``severity`` (1–5), as CIFAR-10-C makes it.

    ``images``: uint8 RGB, (N, 3, 32, 32) for ``layout="NCHW"`` (the project's arrays) or (N, 32, 32, 3)
    for ``"NHWC"``; the result has the same shape and dtype. ``rng``: a seeded ``numpy.random.Generator``
    (or ``RandomState``), required for the corruptions that draw random numbers (``CORRUPTIONS[name].random``)
    and ignored by the others. The images are corrupted ``chunk`` at a time, which bounds the memory and
    does not change the result."""
    corruption = checked(CORRUPTIONS, "", name, severity, SEVERITIES, "an integer from 1 to 5", rng)
    images = np.asarray(images)
    expected = {"NCHW": (3, SIZE, SIZE), "NHWC": (SIZE, SIZE, 3)}
    if layout not in expected:
        raise ValueError(f"layout must be 'NCHW' or 'NHWC', not {layout!r}")
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != expected[layout]:
        raise ValueError(
            f"images must be uint8 of shape (N, {', '.join(map(str, expected[layout]))}) ({layout}, CIFAR-10-C's "
            f"32 × 32 RGB), not {images.dtype} of shape {images.shape}"
        )
    out = in_chunks(corruption, images.transpose(0, 2, 3, 1) if layout == "NCHW" else images, severity, rng, chunk)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)) if layout == "NCHW" else out


def checked(registry: dict, family: str, name: str, severity, severities, allowed: str, rng) -> Corruption:
    """``registry[name]`` (``family``: "" for CIFAR-10-C, "MNIST-C "), or a ValueError in one line: an unknown
    name (with "did you mean"), one this machine cannot compute, a severity not in ``severities`` (``allowed``
    says which), a random corruption without a generator."""
    from trustcal.registry import did_you_mean

    if name not in registry:
        raise ValueError(
            f"unknown {family}corruption {name!r}{did_you_mean(name, registry)}; known: {', '.join(registry)}"
        )
    corruption = registry[name]
    reason = _missing(corruption)
    if reason is not None:
        raise ValueError(f"{family}corruption {name!r} cannot be computed here: {reason}")
    if isinstance(severity, bool) or not isinstance(severity, int | np.integer) or severity not in severities:
        raise ValueError(f"severity must be {allowed}, not {severity!r}")
    if corruption.random and not isinstance(rng, np.random.Generator | np.random.RandomState):
        raise ValueError(
            f"{family}corruption {name!r} draws random numbers: pass rng, a seeded numpy.random.Generator, "
            f"not {type(rng).__name__}"
        )
    return corruption


def in_chunks(corruption: Corruption, stack: np.ndarray, severity: int, rng, chunk) -> np.ndarray:
    """``corruption`` of ``stack`` (its function's layout), ``chunk`` images at a time (the draws stay in
    order, so the result does not depend on ``chunk``)."""
    if isinstance(chunk, bool) or not isinstance(chunk, int | np.integer) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, not {chunk!r}")
    out = np.empty(stack.shape, dtype=np.uint8)
    for start in range(0, len(stack), chunk):
        part = np.ascontiguousarray(stack[start : start + chunk])
        out[start : start + chunk] = corruption.function(part, int(severity), rng)
    return out
