r"""The SVGD direction: ``vr.svgd.phi``, the median bandwidth, the choice of form.

Stein variational gradient descent (Liu & Wang 2016, eq. 8; the OPVI paper, Algorithm 1;
docs/algorithms.md section 5). The compiled bodies are :mod:`vits_ref.kernels.svgd`, the
CPU drivers :func:`vits_ref.drivers.cpu.svgd_phi` (and :func:`~vits_ref.drivers.cpu.svgd_steps`
for the engines :class:`vits_ref.SVGD` and :class:`vits_ref.OPVI`), the NumPy references
:mod:`vits_ref.reference.svgd`.

Performance: one step at ``n = 1000`` particles, ``d = 50`` (Gaussian target,
median bandwidth, repulsion 1), measured in one process with calls interleaved, medians of
15 calls, median of 3 rounds, on the project's shared 2-core machine under a load average
of about 5 (absolute times drift 2x; the ratios are the figures)::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import svgd; svgd.main()"

    one thread (Numba and OpenBLAS)    run 1 ms  ratio   run 2 ms  ratio
    compiled, BLAS form ("auto")         19.1    3.83      21.6    2.51
    compiled, loop form                  45.2    1.73      44.7    1.19
    NumPy GEMM form                      73.2    1.00      54.3    1.00
    NumPy broadcast form               2373      0.03    2457      0.02
    BlackJAX svgd step (jit, CPU)      1596      0.05    1620      0.03
    floor: X X^T + K [Y | 1] (BLAS)      17.3              16.5
    floor + exp of the n^2 entries       19.0              21.4

(ratio: NumPy GEMM / this, the median over the 3 rounds of each run; the two runs are
the same command minutes apart, the spread is the machine's.)

The BLAS form is at the floor in both runs: its two products (``n^2 (2 d + 1)``
multiply-adds) and NumPy's exponential of the kernel matrix are nearly all of it; the
median heuristic (by sampling selection, :func:`vits_ref.kernels.svgd.median_sqdist`) and
the row passes are within the runs' noise. The step's pieces, timed alone (one thread,
the same machine less loaded): ``X X^T`` 4.9 ms (``dsyrk``, the lower triangle only,
3.7 ms), ``K [Y | 1]`` 3 ms, the ``n^2`` exponentials 1.7 ms by ``np.exp`` against 6.6 ms
by the compiled branch-free :func:`~vits_ref.kernels.svgd.exp_nonpos` (the loop form and
the CUDA path), the median 1.3 ms against 5.4 ms by ``np.partition`` and 6.8 ms by the
former quickselect on a copy. Two threads (``_par`` in the benchmark, Numba and BLAS on
both cores) were 3-4x slower than one in both runs (BLAS form 64 and 85 ms): with a load
of 5 on 2 cores the extra threads wait for the other processes, so no honest two-thread
speed-up could be measured here.
"""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu

FORMS = ("auto", "loop", "gemm")
#: ``form="auto"`` takes the BLAS form from this many particles on (and ``d >= GEMM_MIN_D``)
GEMM_MIN_N = 32
GEMM_MIN_D = 1


def choose_form(n, d):
    """``"gemm"`` or ``"loop"``: the faster form of the direction for ``n`` particles in ``d``.

    The loop form costs two vectorised passes of ``n^2 d`` per step (distances, weighted
    sum) and ``n^2`` compiled exponentials, and no BLAS call; the BLAS form does the same
    ``O(n^2 d)`` work as two matrix products (``X X^T``, ``K [Y | 1]``) at BLAS speed and
    the exponentials by NumPy (an object-mode call of about 2 us), plus ``n^2`` memory
    traffic, which costs more than it saves for small ``n``. Measured on the project's
    2-core machine (one thread, median bandwidth; ``vits_ref.drivers.cpu.svgd_phi`` both
    ways, interleaved): the loop form / BLAS form time is 0.5-1.0 at ``n = 16``, 1.0-1.6
    at ``n = 32``, 1.4-2.2 at ``n = 64`` and 1.9-3.2 at ``n = 256``, for ``d`` from 2 to
    50: the BLAS form wins from ``n`` around 32 at every ``d``.
    """
    return "gemm" if n >= GEMM_MIN_N and d >= GEMM_MIN_D else "loop"


#: the ``prange`` over particles runs in parallel from this much pairwise work (``n^2 d``)
PARALLEL_MIN_WORK = 2_000_000


def use_parallel(n, d, parallel=None):
    """Whether the direction's ``prange`` loops run in parallel: ``parallel`` if given,
    else from ``n^2 d >= PARALLEL_MIN_WORK`` (n = 200 at d = 50). Below, the parallel
    regions' launches (several per step) cost more than the loops they split."""
    if parallel is None:
        return n * n * d >= PARALLEL_MIN_WORK
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be None or a bool, got {type(parallel).__name__}")
    return bool(parallel)


def _form(form, n, d):
    form = val.choice(form, "form", FORMS)
    return choose_form(n, d) if form == "auto" else form


def _bandwidth(bandwidth):
    if isinstance(bandwidth, str):
        val.choice(bandwidth, "bandwidth", ("median",))
        return 0.0
    return val.positive_float(bandwidth, "bandwidth")


#: the direction must keep at least half its 53 bits: a rounding error bound below 2^-26 of
#: its largest entry (:func:`check_result`)
RESOLUTION = 2.0 ** 26
#: largest spread ``max |x_i - mean|`` whose squared distances cannot overflow (the
#: library's bound on data, :data:`vits_ref._validate.MAX_ABS_DATA`)
MAX_SPREAD = val.MAX_ABS_DATA


def _spread(X):
    return float(np.max(np.abs(X - X.mean(axis=0))))


def check_scales(particles, bandwidth, repulsion):
    """Raise ValueError, before any work, where the SVGD direction would overflow: a spread
    ``max |x_i - mean|`` beyond 1e150 (squared distances) or ``2 repulsion / bandwidth``
    beyond the largest double (``repulsion = 1e308`` gave NaN)."""
    R = _spread(particles)
    if not R <= MAX_SPREAD:
        raise ValueError(f"particles spread over {R:.3g} (max |x_i - mean|): beyond "
                         f"{MAX_SPREAD:.0e} their squared distances overflow; rescale them")
    if not math.isfinite(2.0 * float(repulsion) / float(bandwidth)):
        raise ValueError(f"2 * repulsion / bandwidth overflows (repulsion={repulsion:.3g}, "
                         f"bandwidth={bandwidth:.3g}): repulsion / bandwidth must be below "
                         f"8e307")


def check_result(particles, grads, bandwidth, repulsion, phi, median=False):
    r"""Raise ValueError where rounding left the direction ``phi`` fewer than half its digits.

    Both forms compute ``n phi_i = sum_j k_ij (g_j - c x_j) + c S_i x_i`` (``c = 2 r / h``,
    ``S_i = sum_j k_ij <= n``) from particles shifted near the origin
    (:func:`vits_ref.kernels.svgd.centre_into`: within ``3 R``, ``R = max |x_i - mean|``):
    terms up to ``S_i (|g| + 3 c R)`` cancel, so the result carries an error of about
    ``eps (max |g| + 6 c R)``. It is refused when that exceeds ``2^-26 max |phi|``: a
    bandwidth far below the particles' spread (``h = 1e-300``: the gradients vanished
    under ``c R``), whether given or from the median heuristic (``median``: more than half
    the pairs nearly coincide). ``repulsion = 0`` cancels nothing and takes any ``h``.
    """
    r, h = float(repulsion), float(bandwidth)
    if r == 0.0:
        return
    R = _spread(particles)
    cancelled = float(np.max(np.abs(grads))) + 12.0 * r / h * R
    size = float(np.max(np.abs(phi)))
    if not cancelled <= RESOLUTION * size:
        what = ("the median bandwidth" if median else "bandwidth") + f"={h:.3g}"
        need = (f"bandwidth >= {12.0 * r * R / (RESOLUTION * size):.3g} or so" if size > 0.0
                else "a bandwidth near the particles' spread")
        raise ValueError(
            f"{what} is too small for particles spread over {R:.3g} (max |x_i - mean|): "
            f"the direction's terms of size max|grads| + 12 repulsion spread / bandwidth = "
            f"{cancelled:.3g} cancel to leave a direction of size {size:.3g}, fewer than "
            f"half its digits; the bandwidth must keep that ratio below 2^26 (here "
            f"{need}), or repulsion=0")


def median_bandwidth(particles):
    r"""The median heuristic ``h = med^2 / log n``.

    Parameters
    ----------
    particles : (n, d) array

    Returns
    -------
    float
        ``med^2 / log n`` with ``med`` the median of the ``n (n - 1) / 2`` distances
        ``|x_i - x_j|``, ``i > j`` (NumPy's median: the mean of the two middle values for
        an even count). ``1.0`` when ``n < 2`` or ``med = 0``.

    Notes
    -----
    BlackJAX's ``median_heuristic`` (strict lower triangle, ``log n``) and
    docs/algorithms.md section 5. Liu & Wang's ``svgd.py`` takes the median over all
    ``n^2`` entries (the zero diagonal included) and ``log(n + 1)``: a slightly smaller
    ``h``. The median is found by exact selection on the ``n (n - 1) / 2`` squared
    distances (:func:`vits_ref.kernels.svgd.median_sqdist`: a strided sample brackets the
    middle, one pass gathers the pairs inside the bracket, quickselect on those), ``O(n^2)``
    and no sort (docs/performance.md: the median over ``n^2`` distances dominated a prototype's
    step; at ``n = 1000`` this one costs 1.3 ms, ``np.partition`` 5.4 ms).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> round(vr.svgd.median_bandwidth(np.array([[0.0], [1.0], [3.0]])), 6)  # med = 2
    3.640957
    """
    X = val.float_array(particles, "particles", ndim=2)
    n, d = X.shape
    if n < 2:
        return 1.0
    out = np.empty((n, d))
    # the driver computes h before the direction; any G works (zeros)
    return float(cpu.svgd_phi(use_parallel(n, d))(X, np.zeros((n, d)), 0.0, 0.0, False,
                                                  out, cpu.svgd_scratch(n, d)))


def phi(particles, grads, bandwidth="median", repulsion=1.0, form="auto", parallel=None):
    r"""The SVGD direction at every particle.

    Parameters
    ----------
    particles : (n, d) array
        The particles ``x_i`` (rows), finite.
    grads : (n, d) array
        ``grad log p(x_i)`` (the target's score; ``-grad U`` for a potential ``U``), finite.
    bandwidth : float or "median", default "median"
        ``h > 0`` of the RBF kernel ``k(x, x') = exp(-|x - x'|^2 / h)``, or the median
        heuristic :func:`median_bandwidth` recomputed from ``particles``.
    repulsion : float, default 1.0
        Weight ``r >= 0`` of the kernel-gradient (repulsive) term (1 in SVGD, 0.1 in OPVI).
    form : {"auto", "loop", "gemm"}, default "auto"
        The compiled row loops (``prange`` over particles) or the BLAS form;
        ``"auto"``: :func:`choose_form`. Both give the same numbers to rounding.
    parallel : bool or None, default None
        Run the ``prange`` over particles on Numba's threads (None: :func:`use_parallel`).
        The result does not depend on it nor on the number of threads.

    Returns
    -------
    (n, d) ndarray
        ``phi(x_i) = 1/n sum_j [k(x_j, x_i) g_j + r grad_{x_j} k(x_j, x_i)]``.

    Raises
    ------
    ValueError, TypeError
        On shapes that differ, non-finite entries, ``bandwidth`` not positive (nor
        ``"median"``), ``repulsion < 0`` or an unknown ``form``; ValueError also where
        double precision cannot give the direction: ``2 repulsion / bandwidth`` or the
        squared distances overflowing (:func:`check_scales`, before the work), a bandwidth
        so far below the particles' spread that rounding leaves the direction fewer than
        half its digits (:func:`check_result`); never a NaN or a silently wrong direction.

    Notes
    -----
    Liu & Wang (2016), eq. (8); the OPVI paper (Algorithm 1, with the repulsive term weighted);
    ``grad_{x_j} k(x_j, x_i) = (2/h)(x_i - x_j) k(x_j, x_i)``, so
    ``n phi(x_i) = sum_j k_ij (g_j - c x_j) + c (sum_j k_ij) x_i`` with ``c = 2 r / h``:
    one weighted sum per particle (the loop form) or the product ``K (G - c X)`` (BLAS),
    both from the particles shifted near the origin
    (:func:`vits_ref.kernels.svgd.centre_into`; the same direction: a common shift cancels,
    but without it the Gram products lose the digits of an offset, 1e8 say).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> X = np.array([[0.0], [1.0]])
    >>> vr.svgd.phi(X, -X, bandwidth=1.0, repulsion=0.0)  # k = exp(-1) off the diagonal
    array([[-0.18393972],
           [-0.5       ]])
    """
    X = val.float_array(particles, "particles", ndim=2)
    n, d = X.shape
    if n == 0 or d == 0:
        raise ValueError(f"particles must have at least one row and column, got {X.shape}")
    G = val.float_array(grads, "grads", ndim=2, shape=(n, d))
    h = _bandwidth(bandwidth)
    r = val.positive_float(repulsion, "repulsion", allow_zero=True)
    gemm = _form(form, n, d) == "gemm"
    check_scales(X, h if h > 0.0 else 1.0, r)  # the median's h: checked with the result
    out = np.empty((n, d))
    h = cpu.svgd_phi(use_parallel(n, d, parallel))(X, G, h, r, gemm, out,
                                                   cpu.svgd_scratch(n, d))
    check_result(X, G, h, r, out, median=isinstance(bandwidth, str))
    return out
