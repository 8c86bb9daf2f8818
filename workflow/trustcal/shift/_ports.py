"""NumPy/SciPy versions of the library routines that CIFAR-10-C's corruptions call, on stacks of images.

The reference, hendrycks/robustness ``ImageNet-C/create_c/make_cifar_c.py``, calls scikit-image, OpenCV
and ImageMagick (through Wand) on one 32×32 image at a time. Each function here computes what that
library computes, with the same floating-point operations in the same order where the result is
floored to uint8 afterwards (a last-bit difference can move a pixel by one level there), for a stack
of images at once:

* :func:`rgb_to_hsv`, :func:`hsv_to_rgb`: scikit-image's ``skimage.color.rgb2hsv`` / ``hsv2rgb``
  (skimage/color/colorconv.py).
* :func:`skimage_gaussian`: ``skimage.filters.gaussian``, which is SciPy's ``gaussian_filter`` with
  scikit-image's defaults (mode ``nearest``, truncate 4) and sigma 0 along the channel axis.
* :func:`clipped_zoom`: the reference's ``clipped_zoom`` helper (``scipy.ndimage.zoom``, order 1).
* :func:`plasma_fractal`: the reference's ``plasma_fractal`` (diamond-square), its random draws in
  the reference's order.
* :func:`disk_kernel`: the reference's ``disk`` helper, whose 3×3 anti-aliasing blur is OpenCV's
  ``GaussianBlur`` (a separable float32 filter with OpenCV's Gaussian taps, ``BORDER_REFLECT_101``).
* :func:`affine_transform_matrix`, :func:`warp_affine_reflect101`: OpenCV's ``getAffineTransform``
  (its 6×6 LU solve, modules/core/src/matrix_decomp.cpp ``LUImpl``) and ``warpAffine``
  with ``INTER_LINEAR`` and ``BORDER_REFLECT_101`` as OpenCV up to 4.10 computes it
  (modules/imgproc/src/imgwarp.cpp: the inverse map in fixed point, 1/32-pixel steps, and
  ``remapBilinear``'s float32 sum of four weighted neighbours). OpenCV 4.11 and later interpolate at
  the exact position instead; CIFAR-10-C was made with the fixed-point version.
* :func:`magick_motion_blur`: ImageMagick 6's ``MotionBlurImage`` (magick/effect.c,
  ``MotionBlurImageChannel``, ``GetMotionBlurKernel``; magick/gem.c ``GetOptimalKernelWidth1D``) at
  quantum depth 16, as Wand runs it on an 8-bit PNG and writes the result back to an 8-bit PNG.
* :func:`rgb_to_gray_f32`: OpenCV's ``cvtColor(..., COLOR_RGB2GRAY)`` on float32 images, as its
  vectorised loop computes it with fused multiply-adds.
"""

from __future__ import annotations

import math

import numpy as np

# --------------------------------------------------------------------------------------------------
# scikit-image: colour conversion and the Gaussian filter


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """HSV of float RGB images in [0, 1], channels last, as ``skimage.color.rgb2hsv`` computes it: V the
    largest channel, S the range over V (0 where the range is 0), H from the channel that holds the
    maximum (red, then green, then blue taking precedence on ties), divided by 6 and wrapped into [0, 1)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    spread = v - rgb.min(axis=-1)
    flat = spread == 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        s = spread / v
        h = np.where(r == v, (g - b) / spread, 0.0)
        h = np.where(g == v, 2.0 + (b - r) / spread, h)
        h = np.where(b == v, 4.0 + (r - g) / spread, h)
        h = (h / 6.0) % 1.0
    s[flat] = 0.0
    h[flat] = 0.0
    out = np.stack([h, s, v], axis=-1)
    out[np.isnan(out)] = 0.0
    return out


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """RGB of float HSV images, channels last, as ``skimage.color.hsv2rgb`` computes it (the sector
    ``floor(6 h) mod 6`` picks the arrangement of v, p, q, t)."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    sector = np.floor(h * 6)
    f = h * 6 - sector
    p = v * (1 - s)
    q = v * (1 - f * s)
    t = v * (1 - (1 - f) * s)
    sector = sector.astype(np.uint8) % 6
    arrangements = (
        (v, t, p),
        (q, v, p),
        (p, v, t),
        (p, q, v),
        (t, p, v),
        (v, p, q),
    )
    out = np.empty(hsv.shape, dtype=np.result_type(h, s, v))
    for channel in range(3):
        out[..., channel] = np.choose(sector, [arrangement[channel] for arrangement in arrangements])
    return out


def skimage_gaussian(images: np.ndarray, sigma: float, *, mode: str = "nearest", truncate: float = 4.0):
    """``skimage.filters.gaussian`` of float64 images stacked on axis 0, spatial axes 1 and 2 (any axes
    after them, channels, are not filtered): SciPy's ``gaussian_filter`` with sigma 0 on the other axes,
    which SciPy skips, so each image is filtered exactly as alone. scikit-image's defaults: mode
    ``nearest``, truncate 4."""
    from scipy.ndimage import gaussian_filter

    sigmas = [0.0] * images.ndim
    sigmas[1] = sigmas[2] = sigma
    return gaussian_filter(images, sigmas, mode=mode, truncate=truncate)


# --------------------------------------------------------------------------------------------------
# The reference's own helpers


def _linear_zoom_axis(length: int, factor: float, first: int, count: int):
    """Along one axis, what ``scipy.ndimage.zoom(..., order=1)`` (mode ``constant``, grid_mode False) reads for
    output indices ``first`` … ``first + count - 1`` of a ``length``-long axis zoomed by ``factor``: the
    output length is round(length × factor), output k sits at k (length - 1) / (out - 1), its two
    neighbours floor(k …) and the next (the last index again past the edge, where its weight is 0),
    weighted 1 - f and 1 - (1 - f) as SciPy's spline weights are formed, and whether the position
    falls outside the input (then the output is the constant 0)."""
    out = int(round(length * factor))
    ratio = (length - 1) / (out - 1) if out > 1 else 1.0
    position = np.arange(first, first + count, dtype=np.float64) * ratio
    outside = (position < 0) | (position > length - 1)
    low = np.floor(position)
    w0 = 1.0 - (position - low)
    w1 = 1.0 - w0
    low = np.clip(low.astype(np.int64), 0, length - 1)
    high = np.minimum(low + 1, length - 1)
    return low, high, w0, w1, outside


def clipped_zoom(stack: np.ndarray, factor: float) -> np.ndarray:
    """The reference's ``clipped_zoom`` of square images stacked on the last axis, (H, H, K): the central
    ``ceil(H / factor)`` square zoomed by ``factor`` with ``scipy.ndimage.zoom`` (order 1, factor 1 on
    the last axis, so each image is zoomed as alone), then the central H × H of the result. Computed
    for the H × H kept only, with SciPy's arithmetic: each output the sum, in double and in SciPy's
    order, of the four neighbours times the row weight times the column weight (the last axis adds
    exact zeros), stored in the input's dtype. The stack is indexed on its leading axes, where a
    gather copies contiguous rows."""
    h = stack.shape[0]
    crop = int(np.ceil(h / factor))
    top = (h - crop) // 2
    zoomed = int(round(crop * factor))
    trim = (zoomed - h) // 2
    r0, r1, wy0, wy1, r_out = _linear_zoom_axis(crop, factor, trim, h)
    c0, c1, wx0, wx1, c_out = _linear_zoom_axis(crop, factor, trim, h)
    if crop == h and zoomed == h:  # the factor maps each pixel onto itself (weights 1 and 0)
        return stack.copy()
    block = stack[top : top + crop, top : top + crop].astype(np.float64)
    wx0, wx1 = wx0[None, :, None], wx1[None, :, None]
    upper = block[r0] * wy0[:, None, None]  # the row weight first, then the column weight
    lower = block[r1] * wy1[:, None, None]
    total = np.multiply(upper[:, c0], wx0)
    part = np.multiply(upper[:, c1], wx1)
    total += part
    np.multiply(lower[:, c0], wx0, out=part)
    total += part
    np.multiply(lower[:, c1], wx1, out=part)
    total += part
    total[r_out] = 0.0
    total[:, c_out] = 0.0
    return total.astype(stack.dtype)


def plasma_draw_count(mapsize: int) -> int:
    """How many uniform numbers :func:`plasma_fractal` draws for one map of side ``mapsize``."""
    count, step = 0, mapsize
    while step >= 2:
        count += 3 * (mapsize // step) ** 2  # the squares, then two sets of diamonds
        step //= 2
    return count


def plasma_fractal(uniform: np.ndarray, mapsize: int, wibbledecay: float) -> np.ndarray:
    """Diamond-square height maps in [0, 1], one per row of ``uniform`` (N, :func:`plasma_draw_count`),
    numbers in [0, 1) that stand for the reference's ``np.random.uniform(-wibble, wibble, shape)`` draws,
    consumed in its order: at each step size the squares' centres, then the diamonds between them in
    rows, then in columns. The reference's ``plasma_fractal`` (a modification of
    FLHerne/mapgen's diamondsquare.py): ``mapsize`` a power of two, the wobble starting at 100 and
    divided by ``wibbledecay`` at each step, each map shifted to minimum 0 and divided by its maximum."""
    n = uniform.shape[0]
    maps = np.zeros((n, mapsize, mapsize), dtype=np.float64)
    step, wibble, used = mapsize, 100.0, 0

    def wobbled_mean(total: np.ndarray) -> np.ndarray:
        nonlocal used
        size = total.shape[1] * total.shape[2]
        draws = uniform[:, used : used + size].reshape(total.shape)
        used += size
        # uniform(-w, w) is -w + (w - -w) * u for the u a generator's random() returns
        return total / 4 + wibble * (-wibble + (wibble - -wibble) * draws)

    while step >= 2:
        half = step // 2
        corners = maps[:, 0:mapsize:step, 0:mapsize:step]
        squares = corners + np.roll(corners, shift=-1, axis=1)
        squares += np.roll(squares, shift=-1, axis=2)
        maps[:, half:mapsize:step, half:mapsize:step] = wobbled_mean(squares)

        centres = maps[:, half:mapsize:step, half:mapsize:step]
        corners = maps[:, 0:mapsize:step, 0:mapsize:step]
        across = (centres + np.roll(centres, 1, axis=1)) + (corners + np.roll(corners, -1, axis=2))
        maps[:, 0:mapsize:step, half:mapsize:step] = wobbled_mean(across)
        down = (centres + np.roll(centres, 1, axis=2)) + (corners + np.roll(corners, -1, axis=1))
        maps[:, half:mapsize:step, 0:mapsize:step] = wobbled_mean(down)

        step //= 2
        wibble /= wibbledecay

    maps -= maps.min(axis=(1, 2), keepdims=True)
    return maps / maps.max(axis=(1, 2), keepdims=True)


# --------------------------------------------------------------------------------------------------
# OpenCV


def _opencv_gaussian_taps(ksize: int, sigma: float) -> np.ndarray:
    """``cv::getGaussianKernel(ksize, sigma, CV_32F)`` for sigma > 0: exp(-x²/(2σ²)) at x = i - (ksize-1)/2
    rounded to float32, summed in double, each tap scaled by the reciprocal of the sum and rounded again."""
    scale = -0.5 / (sigma * sigma)
    taps = [np.float32(math.exp(scale * (i - (ksize - 1) * 0.5) ** 2)) for i in range(ksize)]
    total = 0.0
    for tap in taps:
        total += float(tap)
    inverse = 1.0 / total
    return np.array([np.float32(float(tap) * inverse) for tap in taps], dtype=np.float32)


def _reflect101_index(index: np.ndarray, length: int) -> np.ndarray:
    """OpenCV's ``borderInterpolate`` with ``BORDER_REFLECT_101`` (gfedcb|abcdefgh|gfedcba)."""
    if length == 1:
        return np.zeros_like(index)
    period = 2 * (length - 1)
    index = np.mod(index, period)
    return np.where(index >= length, period - index, index)


def disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """The reference's ``disk`` for radius ≤ 8: the 17 × 17 float32 disk x² + y² ≤ radius² divided by its
    area, blurred by OpenCV's ``GaussianBlur`` with a 3 × 3 kernel of sigma ``alias_blur``. OpenCV blurs
    a float32 image separably, rows then columns, each output the centre tap times the centre plus the
    side tap times the sum of the two neighbours (its symmetric-kernel filters), in float32, borders
    ``BORDER_REFLECT_101``."""
    if radius > 8:
        raise ValueError("the disk kernel is written for radius ≤ 8 (CIFAR-10-C's radii are at most 1.5)")
    span = np.arange(-8, 8 + 1)
    xx, yy = np.meshgrid(span, span)
    disk = np.array((xx**2 + yy**2) <= radius**2, dtype=np.float32)
    disk /= np.sum(disk)
    side, centre, _ = _opencv_gaussian_taps(3, alias_blur)
    size = disk.shape[0]
    before = _reflect101_index(np.arange(size) - 1, size)
    after = _reflect101_index(np.arange(size) + 1, size)
    rows = disk * centre + (disk[:, before] + disk[:, after]) * side
    return rows * centre + (rows[before, :] + rows[after, :]) * side


def correlate_reflect101(images: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Each channel of float64 images (N, H, W, C) correlated with a 2-D kernel, borders reflected about
    the edge pixel (OpenCV's ``BORDER_REFLECT_101``, SciPy's ``mirror``), the kernel's taps as float64:
    what ``cv2.filter2D(channel, -1, kernel)`` computes for a float64 channel. The kernel is cut to the
    rows and columns that hold a non-zero tap (zeros add nothing); it must stay centred."""
    from scipy.ndimage import correlate

    rows = np.flatnonzero(np.any(kernel != 0, axis=1))
    cols = np.flatnonzero(np.any(kernel != 0, axis=0))
    centre_r, centre_c = kernel.shape[0] // 2, kernel.shape[1] // 2
    reach_r = max(centre_r - rows[0], rows[-1] - centre_r)
    reach_c = max(centre_c - cols[0], cols[-1] - centre_c)
    core = kernel[centre_r - reach_r : centre_r + reach_r + 1, centre_c - reach_c : centre_c + reach_c + 1]
    weights = np.asarray(core, dtype=np.float64)[None, :, :, None]
    return correlate(images, weights, mode="mirror")


def affine_transform_matrix(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``cv::getAffineTransform`` for stacks of three point pairs, src and dst (N, 3, 2) float32: the 2 × 3
    double matrices mapping src onto dst, solved as OpenCV solves its 6 × 6 system (``cv::solve`` with
    ``DECOMP_LU``: Gaussian elimination with partial pivoting, rows scaled by the negated reciprocal
    pivot, back substitution with the stored reciprocals). Returns (N, 2, 3)."""
    n = src.shape[0]
    a = np.zeros((n, 6, 6), dtype=np.float64)
    b = np.zeros((n, 6), dtype=np.float64)
    for i in range(3):
        x, y = src[:, i, 0].astype(np.float64), src[:, i, 1].astype(np.float64)
        a[:, 2 * i, 0] = a[:, 2 * i + 1, 3] = x
        a[:, 2 * i, 1] = a[:, 2 * i + 1, 4] = y
        a[:, 2 * i, 2] = a[:, 2 * i + 1, 5] = 1.0
        b[:, 2 * i] = dst[:, i, 0]
        b[:, 2 * i + 1] = dst[:, i, 1]
    every = np.arange(n)
    m = 6
    for i in range(m):
        pivot = i + np.argmax(np.abs(a[:, i:, i]), axis=1)  # the first of the largest, as OpenCV's scan
        if np.any(np.abs(a[every, pivot, i]) < np.finfo(np.float64).eps * 100):
            raise ValueError("degenerate affine point triple")
        rows_i, rows_p = a[every, i, :].copy(), a[every, pivot, :].copy()
        a[every, i, :], a[every, pivot, :] = rows_p, rows_i
        b_i, b_p = b[every, i].copy(), b[every, pivot].copy()
        b[every, i], b[every, pivot] = b_p, b_i
        d = -1.0 / a[:, i, i]
        for j in range(i + 1, m):
            alpha = a[:, j, i] * d
            for k in range(i + 1, m):
                a[:, j, k] += alpha * a[:, i, k]
            b[:, j] += alpha * b[:, i]
        a[:, i, i] = -d
    for i in range(m - 1, -1, -1):
        s = b[:, i].copy()
        for k in range(i + 1, m):
            s -= a[:, i, k] * b[:, k]
        b[:, i] = s * a[:, i, i]
    return b.reshape(n, 2, 3)


def warp_affine_reflect101(images: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """``cv2.warpAffine(image, M, (W, H), borderMode=cv2.BORDER_REFLECT_101)`` of float32 images
    (N, H, W, C), one forward matrix (2, 3) each, as OpenCV up to 4.10 computes it with
    ``INTER_LINEAR``: the matrix inverted in double; each destination pixel's source position in fixed
    point (the terms rounded to 1/1024 pixel, half to even, then to 1/32 pixel by an arithmetic shift);
    the four neighbours, reflected about the edge where outside, weighted by the products of
    (1 - f, f) for the two 1/32-pixel fractions and summed in float32 in OpenCV's order."""
    n, h, w, _ = images.shape
    m = matrices.reshape(n, 6).astype(np.float64)
    # the inverse map, in OpenCV's order of operations
    det = m[:, 0] * m[:, 4] - m[:, 1] * m[:, 3]
    with np.errstate(divide="ignore"):
        det = np.where(det != 0, 1.0 / det, 0.0)
    a11, a22 = m[:, 4] * det, m[:, 0] * det
    m0, m1, m3, m4 = a11, m[:, 1] * -det, m[:, 3] * -det, a22
    m2 = -m0 * m[:, 2] - m1 * m[:, 5]
    m5 = -m3 * m[:, 2] - m4 * m[:, 5]
    scale, round_delta = 1024, 1024 // 32 // 2
    xs, ys = np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64)
    adelta = np.rint(m0[:, None] * xs * scale).astype(np.int64)  # (N, W)
    bdelta = np.rint(m3[:, None] * xs * scale).astype(np.int64)
    x0 = np.rint((m1[:, None] * ys + m2[:, None]) * scale).astype(np.int64) + round_delta  # (N, H)
    y0 = np.rint((m4[:, None] * ys + m5[:, None]) * scale).astype(np.int64) + round_delta
    fixed_x = (x0[:, :, None] + adelta[:, None, :]) >> 5  # (N, H, W), in 1/32 pixel
    fixed_y = (y0[:, :, None] + bdelta[:, None, :]) >> 5
    sx, sy = fixed_x >> 5, fixed_y >> 5
    fx = (fixed_x & 31).astype(np.float32) * np.float32(1 / 32)
    fy = (fixed_y & 31).astype(np.float32) * np.float32(1 / 32)
    one = np.float32(1)
    weights = ((one - fy) * (one - fx), (one - fy) * fx, fy * (one - fx), fy * fx)
    cols0, cols1 = _reflect101_index(sx, w), _reflect101_index(sx + 1, w)
    rows0, rows1 = _reflect101_index(sy, h), _reflect101_index(sy + 1, h)
    which = np.arange(n)[:, None, None]
    corners = (
        images[which, rows0, cols0],
        images[which, rows0, cols1],
        images[which, rows1, cols0],
        images[which, rows1, cols1],
    )
    total = corners[0] * weights[0][..., None] + corners[1] * weights[1][..., None]
    total = total + corners[2] * weights[2][..., None]
    return total + corners[3] * weights[3][..., None]


def _fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The float32 fused multiply-add a b + c, rounded once: the product is exact in double; the sum's
    rounding error (Knuth's two-sum) settles the one case where rounding the double sum to float32
    could round twice, a double sum exactly halfway between two float32 values."""
    product = a.astype(np.float64) * b.astype(np.float64)
    addend = c.astype(np.float64)
    total = product + addend
    virtual = total - product
    error = (product - (total - virtual)) + (addend - virtual)
    rounded = total.astype(np.float32)
    toward = np.where(total > rounded.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
    other = np.nextafter(rounded, toward)
    tie = (total != rounded.astype(np.float64)) & (2 * total == rounded.astype(np.float64) + other.astype(np.float64))
    above = np.maximum(rounded, other)
    below = np.minimum(rounded, other)
    fixed = np.where(error > 0, above, np.where(error < 0, below, rounded))
    return np.where(tie, fixed, rounded)


def rgb_to_gray_f32(images: np.ndarray) -> np.ndarray:
    """``cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)`` of float32 RGB images (..., 3): 0.299 R + 0.587 G +
    0.114 B with float32 coefficients, as OpenCV's vectorised loop computes it on a machine with FMA
    (AVX2): fma(B, 0.114, fma(R, 0.299, G × 0.587)), each step rounded to float32 once (measured:
    this reproduces OpenCV 4.10's values bit for bit; its scalar loop, on machines without FMA,
    rounds differently)."""
    r, g, b = images[..., 0], images[..., 1], images[..., 2]
    inner = _fma_f32(r, np.float32(0.299), g * np.float32(0.587))
    return _fma_f32(b, np.float32(0.114), inner)


# --------------------------------------------------------------------------------------------------
# ImageMagick


_MAGICK_SQ2PI = 2.50662827463100024161235523934010416269302368164062  # MagickSQ2PI, sqrt(2 pi)
_MAGICK_EPSILON = 1.0e-12  # MagickEpsilon
_QUANTUM_RANGE = 65535.0  # QuantumRange at quantum depth 16


def magick_motion_kernel(radius: float, sigma: float) -> np.ndarray:
    """ImageMagick 6's one-sided motion-blur kernel (magick/effect.c, ``GetMotionBlurKernel``): width
    ``2 ceil(radius) + 1`` (``GetOptimalKernelWidth1D`` for radius > 0), tap i the Gaussian
    exp(-i²/(2σ²)) / (√(2π) σ), divided by their sum, summed in order."""
    width = int(2.0 * math.ceil(radius) + 1.0)
    s = sigma if abs(sigma) >= _MAGICK_EPSILON else _MAGICK_EPSILON  # MagickSigma
    taps = [math.exp(-(float(i) * i) / (2.0 * s * s)) / (_MAGICK_SQ2PI * s) for i in range(width)]
    total = 0.0
    for tap in taps:
        total += tap
    return np.array([tap / total for tap in taps], dtype=np.float64)


def magick_motion_offsets(width: int, angle: float) -> tuple[list[int], list[int]]:
    """The pixel offsets (x to the right, y down) of ImageMagick 6's motion-blur taps along ``angle``
    degrees (``MotionBlurImageChannel``): tap i at ceil(i cos θ - 1/2), ceil(i sin θ - 1/2), with
    cos θ and sin θ as ImageMagick forms them from the point (width sin θ, width cos θ)."""
    theta = math.pi * angle / 180.0  # DegreesToRadians
    px, py = float(width) * math.sin(theta), float(width) * math.cos(theta)
    length = float(np.hypot(px, py))  # the C library's hypot, as ImageMagick calls it
    xs = [math.ceil((i * py) / length - 0.5) for i in range(width)]
    ys = [math.ceil((i * px) / length - 0.5) for i in range(width)]
    return xs, ys


def magick_motion_blur(images: np.ndarray, radius: float, sigma: float, angles: np.ndarray) -> np.ndarray:
    """ImageMagick 6's ``MotionBlurImage(radius, sigma, angle)`` of uint8 images (N, H, W, C), one angle
    each, as the reference runs it through Wand (ImageMagick 6.9 at quantum depth 16): the 8-bit PNG
    read as 16-bit quanta (each value × 257); each output the sum, in double and in tap order, of
    the kernel's taps times the pixels at the taps' offsets (an offset past the edge takes the edge
    pixel, ImageMagick's default virtual-pixel method); rounded to a quantum (``ClampToQuantum``:
    + 0.5, truncated, clamped to [0, 65535]); written back to an 8-bit PNG, which keeps
    floor(quantum / 257) (measured: the reference's bytes agree with this, not with rounding).
    Returns uint8 (N, H, W, C).

    The images are taken in the order of their angles, so that for each tap the images sharing an
    offset are a run of consecutive ones, shifted together by slicing an edge-padded copy."""
    n, h, w, _ = images.shape
    kernel = magick_motion_kernel(radius, sigma)
    width = len(kernel)
    order = np.argsort(angles, kind="stable")
    offsets = [magick_motion_offsets(width, float(angles[i])) for i in order]
    off_x = np.array([xs for xs, _ in offsets], dtype=np.int64).reshape(n, width)
    off_y = np.array([ys for _, ys in offsets], dtype=np.int64).reshape(n, width)
    pad = width
    padded = np.pad(images[order].astype(np.float64) * 257.0, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    total = np.zeros(images.shape, dtype=np.float64)
    for i, tap in enumerate(kernel):
        pairs = off_x[:, i] * (4 * pad + 1) + off_y[:, i]
        starts = np.flatnonzero(np.diff(pairs, prepend=pairs[0] - 1))
        for a, b in zip(starts, [*starts[1:], n]):
            ox, oy = off_x[a, i], off_y[a, i]
            total[a:b] += tap * padded[a:b, pad + oy : pad + oy + h, pad + ox : pad + ox + w]
    quantum = np.where(total <= 0.0, 0.0, np.where(total >= _QUANTUM_RANGE, _QUANTUM_RANGE, total + 0.5))
    quantum = quantum.astype(np.int64)  # (Quantum) truncation
    out = np.empty(images.shape, dtype=np.uint8)
    out[order] = quantum // 257
    return out
