r"""The SVGD direction as kernel bodies: pairwise distances, the RBF kernel, its sums.

Stein variational gradient descent (Liu & Wang 2016, eq. 8; the OPVI paper, Algorithm 1;
docs/algorithms.md section 5) moves ``n`` particles ``x_1..x_n`` (rows of ``X`` (n, d))
along

.. math::

    \phi(x_i) = \frac1n \sum_j \big[k(x_j, x_i)\, g_j + r\, \nabla_{x_j} k(x_j, x_i)\big],
    \qquad k(x, x') = \exp(-|x - x'|^2 / h),

with ``g_j = grad log p(x_j)`` and the repulsion weight ``r`` (1 in SVGD, 0.1 in OPVI).
Since ``grad_{x_j} k(x_j, x_i) = (2/h)(x_i - x_j) k_ij``, with ``c = 2 r / h``,
``S_i = sum_j k_ij`` and ``Y = G - c X`` (rows ``y_j = g_j - c x_j``)

.. math::

    n\,\phi(x_i) = \sum_j k_{ij}\, y_j + c\, S_i\, x_i ,

one weighted sum of ``n`` rows per particle (``K Y`` as a matrix product). The bodies:

- :func:`sqdist_row`: row ``i`` of the squared distances from the differences, looping
  over the coordinates outside and the particles inside (``XT`` (d, n), the transposed
  particles): every iteration of the inner loop is independent, so it vectorises without
  fast-math (a per-pair reduction over ``d`` would not: docs/performance.md, the slow prange).
- :func:`kernel_row`: the row's kernel values in place, ``exp(-D_ij / h)`` through
  :func:`exp_nonpos` (a branch-free exponential that LLVM vectorises; ``math.exp`` is a
  scalar libm call in Numba without SVML), and their sum ``S_i``.
- :func:`phi_row`: ``(sum_j k_ij y_j + c S_i x_i) / n``, vectorised over the coordinates.
- :func:`median_sqdist`: the median heuristic's order statistics, exact, by sampling
  selection on the strict lower triangle (a strided sample brackets the middle ranks, one
  pass gathers the pairs inside, quickselect on those; O(n^2), no sort, no copy of all).
- The BLAS form's row passes: :func:`sqdist_from_gram_lower` (the distances the median
  reads), :func:`neg_scaled_sqdist_row` (the exponents ``-D_ij / h`` from the Gram row),
  :func:`shifted_grads_ones` (``[G - c X | 1]``: the product with ``K`` carries the row
  sums ``S_i``) and :func:`phi_finish_sums_row`.

The CPU drivers (:mod:`vits_ref.drivers.cpu.particles`) run the row bodies in a
``prange`` over particles, or, for large ``n d``, compute ``X X^T`` and ``K [Y | 1]`` with
BLAS and the exponentials with NumPy's SIMD ``np.exp`` (about 4x faster than
:func:`exp_nonpos` there); the CUDA drivers run the row bodies one thread per particle.
The CPU drivers first shift the particles near the origin (:func:`centre_into`): the
direction does not change under a common shift, its products' rounding does. Bodies
allocate nothing.
"""

import math

from vits_ref.config import kernel

INV_LN2 = 1.4426950408889634
# Cody-Waite split of log(2) (fdlibm's e_exp.c): n * LN2_HI is exact for |n| < 2^11
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
# adding then subtracting 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer
ROUND_SHIFT = 6755399441055744.0
#: below this argument :func:`exp_nonpos` returns 0 (``exp(-700) = 9.9e-305``)
EXP_FLOOR = -700.0


@kernel(inline=True)
def exp_nonpos(y):
    """``exp(y)`` for ``y <= 0``, within 1 ulp of libm's (tested on 10^6 arguments).

    Branch-free, so a loop over it vectorises: ``y = m log 2 + r`` with ``|r| <= log(2)/2``
    (Cody-Waite reduction), ``exp(r)`` by its Taylor polynomial of degree 13 (truncation
    ``< |r|^14/14! = 4e-18``) and ``2^m`` as a product of the selected factors
    ``2^-512, ..., 2^-1`` (largest first, so no product is subnormal: a subnormal
    intermediate, even in an unselected lane, costs a microcode assist of ~100 cycles).
    Returns 0 for ``y < -700`` (where ``exp(y) < 1e-304``).
    """
    yc = y if y > EXP_FLOOR else EXP_FLOOR
    nf = (yc * INV_LN2 + ROUND_SHIFT) - ROUND_SHIFT
    r = (yc - nf * LN2_HI) - nf * LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    a = int(-nf)
    s = 2.0 ** -512 if (a & 512) != 0 else 1.0
    s *= 2.0 ** -256 if (a & 256) != 0 else 1.0
    s *= 2.0 ** -128 if (a & 128) != 0 else 1.0
    s *= 2.0 ** -64 if (a & 64) != 0 else 1.0
    s *= 2.0 ** -32 if (a & 32) != 0 else 1.0
    s *= 2.0 ** -16 if (a & 16) != 0 else 1.0
    s *= 2.0 ** -8 if (a & 8) != 0 else 1.0
    s *= 0.0625 if (a & 4) != 0 else 1.0
    s *= 0.25 if (a & 2) != 0 else 1.0
    s *= 0.5 if (a & 1) != 0 else 1.0
    return p * s if y >= EXP_FLOOR else 0.0


@kernel(inline=True)
def exp_nonpos_into(y, out):
    """``out[j] = exp_nonpos(y[j])`` (tests and benchmarks of the exponential)."""
    for j in range(y.shape[0]):
        out[j] = exp_nonpos(y[j])


@kernel(inline=True)
def centre_into(X, Xc, mu):
    """``Xc = X - shift``, ``mu`` the shift (d,): the particles moved near the origin, what
    the direction's products read.

    The direction is invariant under a common shift of the particles, but its two forms
    compute it from quantities that are not: the Gram products ``|x_i|^2 + |x_j|^2 - 2
    x_i.x_j`` lose the digits of ``|x_i - x_j|^2`` that ``|x|^2`` carries beyond them (all
    of them once ``|x| / |x_i - x_j| > 1e8``), and ``g_j - c x_j`` with ``c S_i x_i`` added
    back lose ``|g|`` to ``c |x|``. Per coordinate ``k`` the shift is the particles' mean
    rounded to a multiple of ``2^e >= 4 R_k`` (``R_k = max_j |x_jk - mean_k|``), so the
    shifted coordinates are within ``3 R_k`` of 0 and a cloud already that near the origin
    (``|mean_k| < 2 R_k``) is not moved at all: its arithmetic is unchanged, bit for bit,
    and so is any structure finer than its mean's rounding (a mean-centring would round
    every coordinate to ``eps |mean|``). A coordinate where all particles agree is
    shifted by that value (to 0 exactly). ``tests/test_svgd_edges.py``.
    """
    n, d = X.shape
    for k in range(d):
        m = 0.0
        for j in range(n):
            m += X[j, k]
        m /= n
        r = 0.0
        for j in range(n):
            a = abs(X[j, k] - m)
            r = a if a > r else r
        if r == 0.0:
            shift = X[0, k]
        else:
            step = math.ldexp(1.0, math.frexp(4.0 * r)[1])  # a power of two > 4 r
            shift = math.floor(m / step + 0.5) * step
        mu[k] = shift
        for j in range(n):
            Xc[j, k] = X[j, k] - shift


@kernel(inline=True)
def transpose_into(X, XT):
    """``XT = X.T`` (d, n) for :func:`sqdist_row`."""
    n, d = X.shape
    for j in range(n):
        for k in range(d):
            XT[k, j] = X[j, k]


@kernel(inline=True)
def sqdist_row(X, XT, i, out):
    """``out[j] = |x_i - x_j|^2`` for every particle ``j`` (``out[i] = 0`` exactly)."""
    d, n = XT.shape
    for j in range(n):
        out[j] = 0.0
    for k in range(d):
        xik = X[i, k]
        row = XT[k]
        for j in range(n):
            t = xik - row[j]
            out[j] += t * t


@kernel(inline=True)
def sqdist_from_gram_lower(sq, i, row):
    """Squared distances from the Gram matrix's row ``row`` (in place), for ``j < i`` only
    (what the median reads): ``row[j] <- |x_i|^2 + |x_j|^2 - 2 x_i.x_j``, clipped at 0
    (rounding); the rest of the row keeps the Gram matrix's values."""
    si = sq[i]
    for j in range(i):
        v = si + sq[j] - 2.0 * row[j]
        row[j] = v if v > 0.0 else 0.0


@kernel(inline=True)
def neg_scaled_sqdist_row(sq, i, row, inv_h, lower_done):
    """``row[j] <- -|x_i - x_j|^2 / h`` (``inv_h = 1/h``): the exponent of the kernel row.

    ``row`` holds the Gram matrix's row ``i`` (``x_i.x_j``), or, when ``lower_done``, the
    squared distances already for ``j < i`` (:func:`sqdist_from_gram_lower`). The
    distances are clipped at 0 (rounding) and the diagonal is exactly 0.
    """
    n = sq.shape[0]
    si = sq[i]
    if lower_done:
        for j in range(i):
            row[j] = -row[j] * inv_h
    else:
        for j in range(i):
            v = si + sq[j] - 2.0 * row[j]
            row[j] = -(v if v > 0.0 else 0.0) * inv_h
    row[i] = 0.0
    for j in range(i + 1, n):
        v = si + sq[j] - 2.0 * row[j]
        row[j] = -(v if v > 0.0 else 0.0) * inv_h


@kernel(inline=True)
def kernel_row(row, inv_h):
    """``row[j] <- exp(-row[j] / h)`` in place (``inv_h = 1/h``); returns the row's sum."""
    n = row.shape[0]
    for j in range(n):
        row[j] = exp_nonpos(-row[j] * inv_h)
    s = 0.0
    for j in range(n):
        s += row[j]
    return s


@kernel(inline=True)
def shifted_grads(X, G, c, Y, i):
    """Row ``i`` of ``Y = G - c X``."""
    for k in range(X.shape[1]):
        Y[i, k] = G[i, k] - c * X[i, k]


@kernel(inline=True)
def phi_row(krow, Y, X, i, c, s, out):
    """``out = (sum_j krow[j] Y[j] + c s x_i) / n``: the SVGD direction of particle ``i``."""
    n, d = Y.shape
    for k in range(d):
        out[k] = 0.0
    for j in range(n):
        kij = krow[j]
        yj = Y[j]
        for k in range(d):
            out[k] += kij * yj[k]
    inv_n = 1.0 / n
    cs = c * s
    for k in range(d):
        out[k] = (out[k] + cs * X[i, k]) * inv_n


@kernel(inline=True)
def shifted_grads_ones(X, G, c, Y1, i):
    """Row ``i`` of ``[G - c X | 1]`` (``Y1`` (n, d + 1)): the product ``K Y1`` carries
    the kernel's row sums ``S_i`` in its last column."""
    d = X.shape[1]
    for k in range(d):
        Y1[i, k] = G[i, k] - c * X[i, k]
    Y1[i, d] = 1.0


@kernel(inline=True)
def phi_finish_sums_row(acc, X, i, c, out):
    """``out = (acc[:d] + c acc[d] x_i) / n`` (``acc`` = row ``i`` of ``K [Y | 1]``)."""
    n, d = X.shape
    inv_n = 1.0 / n
    cs = c * acc[d]
    for k in range(d):
        out[k] = (acc[k] + cs * X[i, k]) * inv_n


# --------------------------------------------------------------------------- median heuristic


@kernel
def select_kth(w, k):
    """The ``k``-th smallest (0-based) of ``w``, by quickselect in place (Hoare partition,
    median-of-three pivot); on return ``w[:k] <= w[k] <= w[k + 1:]``."""
    lo = 0
    hi = w.shape[0] - 1
    while hi > lo:
        mid = (lo + hi) // 2
        # median of three to w[mid]
        if w[mid] < w[lo]:
            w[mid], w[lo] = w[lo], w[mid]
        if w[hi] < w[lo]:
            w[hi], w[lo] = w[lo], w[hi]
        if w[hi] < w[mid]:
            w[hi], w[mid] = w[mid], w[hi]
        pivot = w[mid]
        i = lo
        j = hi
        while i <= j:
            while w[i] < pivot:
                i += 1
            while w[j] > pivot:
                j -= 1
            if i <= j:
                w[i], w[j] = w[j], w[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return w[k]


#: below this many pairs :func:`median_sqdist` selects on a copy of all of them
MEDIAN_DIRECT_MAX = 4096


@kernel(inline=True)
def sqdist_at(D, t):
    """Entry ``t`` (0-based) of the strict lower triangle of ``D`` in row order:
    ``D[i, j]`` with ``t = i (i - 1) / 2 + j``, ``0 <= j < i``."""
    i = int((1.0 + math.sqrt(1.0 + 8.0 * t)) * 0.5)
    while i * (i - 1) // 2 > t:  # the float root may be off by one either way
        i -= 1
    while (i + 1) * i // 2 <= t:
        i += 1
    return D[i, t - i * (i - 1) // 2]


@kernel(inline=True)
def median_sqdist(D, w):
    """The median heuristic's ``med^2`` from the squared distances ``D`` (n, n).

    ``med`` is the median of the ``m = n (n - 1) / 2`` distances ``|x_i - x_j|``, ``i > j``
    (NumPy's ``median``: the mean of the two middle values when ``m`` is even), so
    ``med^2`` is computed from the square roots of the middle squared distances (the
    square root is increasing: order statistics of squared distances are the squares of
    the distances'). Only the strict lower triangle of ``D`` is read. ``w`` holds at least
    ``m`` values (scratch). Returns 0 for ``n < 2``.

    Exact selection by sampling (Floyd & Rivest 1975): ``s ~ 8 sqrt(m)`` entries at a
    fixed stride give two bracketing values ``lo <= hi`` (the sample's order statistics
    ``3 sqrt(s)`` ranks either side of the middle ranks' place; for a random sample the
    population median's sample rank has standard deviation ``sqrt(s)/2``, so 6 of them),
    one pass counts the entries below ``lo`` and gathers those in ``[lo, hi]`` (about
    ``6 m / sqrt(s) = 2.1 m^(3/4)``: 8% of them at ``m = 5e5``), and quickselect runs on the
    gathered ones. When the middle ranks fall outside the bracket (an adversarial order of
    the pairs) it falls back to quickselect on all ``m``: the result is exact either way,
    only the time differs. ``m <= MEDIAN_DIRECT_MAX``: quickselect on all directly.
    """
    n = D.shape[0]
    m = n * (n - 1) // 2
    if m == 0:
        return 0.0
    half = (m - 1) // 2
    last = half + 1 if m % 2 == 0 else half  # the largest rank needed
    base = 0  # rank offset of w[0:cnt] among all m
    cnt = 0
    if m > MEDIAN_DIRECT_MAX:
        s = int(8.0 * math.sqrt(m))
        stride = m // s
        for q in range(s):
            w[q] = sqdist_at(D, q * stride + stride // 2)
        delta = int(3.0 * math.sqrt(s)) + 1
        r_lo = (half * s) // m - delta
        r_hi = (last * s) // m + delta
        lo = select_kth(w[:s], r_lo) if r_lo >= 0 else -1.0
        hi = select_kth(w[:s], r_hi) if r_hi < s else math.inf
        below = 0
        for i in range(1, n):
            row = D[i]
            for j in range(i):
                v = row[j]
                below += 1 if v < lo else 0
                w[cnt] = v  # branch-free gather: cnt never passes the entries read
                cnt += 1 if (v >= lo and v <= hi) else 0
        if below <= half and below + cnt > last:
            base = below
        else:
            cnt = 0
    if cnt == 0:  # direct, or the bracket missed: every pair
        for i in range(1, n):
            for j in range(i):
                w[cnt] = D[i, j]
                cnt += 1
    wm = w[:cnt]
    a = math.sqrt(select_kth(wm, half - base))
    if m % 2 == 1:
        return a * a
    b = wm[half - base + 1]
    for t in range(half - base + 2, cnt):
        if wm[t] < b:
            b = wm[t]
    med = 0.5 * (a + math.sqrt(b))
    return med * med


@kernel(inline=True)
def median_bandwidth_from(med2, n):
    """``h = med^2 / log n`` (BlackJAX's ``median_heuristic``; docs/algorithms.md section 5).

    Degenerate cases, stated: ``n < 2`` (no pair; the kernel sum does not depend on ``h``)
    and ``med = 0`` (more than half the pairs coincide) give ``h = 1``.
    """
    if n < 2 or med2 <= 0.0:
        return 1.0
    return med2 / math.log(n)


# --------------------------------------------------------------------------- AdaGrad


@kernel(inline=True)
def adagrad_row(x, phi, hist, i, step, alpha, fudge, first):
    """One ascent step of particle ``i`` with the SVGD reference code's AdaGrad.

    ``hist <- phi^2`` at the first step, else ``alpha hist + (1 - alpha) phi^2``;
    ``x <- x + step phi / (fudge + sqrt(hist))`` (Liu & Wang's ``svgd.py``: ``alpha = 0.9``,
    ``fudge_factor = 1e-6``). With ``alpha < 0`` it is plain gradient ascent
    ``x <- x + step phi`` (``hist`` untouched).
    """
    d = x.shape[1]
    if alpha < 0.0:
        for k in range(d):
            x[i, k] += step * phi[i, k]
        return
    for k in range(d):
        p = phi[i, k]
        if first:
            hist[i, k] = p * p
        else:
            hist[i, k] = alpha * hist[i, k] + (1.0 - alpha) * p * p
        x[i, k] += step * p / (fudge + math.sqrt(hist[i, k]))
