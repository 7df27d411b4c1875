"""Philox4x64-10 (kernels/philox.py), its fills, their cooperative twins and the NumPy
reference (vits_ref/reference/streams.py).

* Raw words: the kernel (compiled, and as plain Python, which the CUDA simulator runs)
  and the vectorised reference equal ``numpy.random.Philox`` bit for bit, over many keys
  and counters (NumPy's ``random_raw`` gives the words of counter ``c + 1``).
* Uniforms: in (0, 1) at the extreme words, exactly the documented grid.
* Normals, integers: moments, a Kolmogorov-Smirnov test and a chi-square test at fixed
  keys, bounds from the sample size at a false-alarm probability of 1e-6 each.
* Fills: each element depends only on (key, counter, index): equal whatever the split
  over threads (the simulator's cooperative blocks of 1, 3 and 5 threads; the streamed
  loop's ``prange`` in ``test_streams.py``), element by element (``normal_at``), and
  equal to the reference (bit for bit with the C library's transcendentals).
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from vits_ref.kernels import philox as P

from vits_ref.drivers import cpu
from vits_ref.reference import streams as ref

MASK64 = 2 ** 64 - 1


def _words(keys, ctrs, out):
    cpu.philox_words(keys, ctrs, out)


def _fills(kind, keys, c0, c1, m, out):
    cpu.philox_fills(kind, keys, c0, c1, m, out)


def _numpy_words(ctr, key):
    c = sum(int(ctr[i]) << (64 * i) for i in range(4))
    bg = np.random.Philox(counter=(c - 1) % 2 ** 256, key=int(key[0]) | int(key[1]) << 64)
    return bg.random_raw(4)


def _cases(n, seed=0):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2 ** 64, size=(n, 2), dtype=np.uint64, endpoint=False)
    ctrs = rng.integers(0, 2 ** 64, size=(n, 4), dtype=np.uint64, endpoint=False)
    # edge words: zeros, all ones, a carry into every word of NumPy's counter
    keys[:4] = [[0, 0], [MASK64, MASK64], [0, MASK64], [1, 0]]
    ctrs[:4] = [[0, 0, 0, 0], [MASK64] * 4, [1, 0, 0, 0], [0, 0, 0, 1]]
    return keys, ctrs


def test_raw_words_equal_numpy_philox():
    keys, ctrs = _cases(2000)
    got = np.empty((2000, 4), dtype=np.uint64)
    _words(keys, ctrs, got)
    want = np.array([_numpy_words(c, k) for c, k in zip(ctrs, keys, strict=True)])
    np.testing.assert_array_equal(got, want)
    # the vectorised reference, each row its own key
    for k in range(0, 2000, 250):
        np.testing.assert_array_equal(ref.philox4x64(ctrs[k:k + 250], keys[k]),
                                      [_numpy_words(c, keys[k]) for c in ctrs[k:k + 250]])
    # the plain-Python body (what the CUDA simulator runs) on a few
    for c, k, w in zip(ctrs[:20], keys[:20], want[:20], strict=True):
        words = P.philox4x64(*(np.uint64(x) for x in c), np.uint64(k[0]), np.uint64(k[1]))
        assert [int(x) for x in words] == [int(x) for x in w]


def test_mulhilo_and_add64_exact():
    rng = np.random.default_rng(1)
    vals = [0, 1, MASK64, 2 ** 32, 2 ** 32 - 1, *rng.integers(0, 2 ** 64, 50, dtype=np.uint64,
                                                                endpoint=False).tolist()]
    for a in vals:
        for b in vals[:12]:
            lo, hi = P.mulhilo(np.uint64(a), np.uint64(b))
            assert int(hi) << 64 | int(lo) == int(a) * int(b)
            assert int(P.add64(np.uint64(a), np.uint64(b))) == (int(a) + int(b)) % 2 ** 64


def test_uniform_open_interval_and_grid():
    lo, hi = P.uniform(np.uint64(0)), P.uniform(np.uint64(MASK64))
    assert lo == 2.0 ** -53 and hi == 1.0 - 2.0 ** -53
    assert 0.0 < lo and hi < 1.0
    w = np.array([0, 1, 2 ** 12 - 1, 2 ** 12, MASK64], dtype=np.uint64)
    u = ref.to_uniform(w)
    assert np.all((u > 0) & (u < 1))
    # the grid: (k + 1/2) 2^-52 for k = w >> 12, exactly
    assert [float(x) for x in u] == [(int(x >> np.uint64(12)) + 0.5) * 2.0 ** -52 for x in w]
    assert u[0] == u[1] == u[2] and u[3] == 1.5 * 2.0 ** -52
    # a large sample from the fills: never 0 or 1
    keys, _ = _cases(8)
    out = np.empty((8, 100_000))
    _fills(0, keys, 0, 7, 1, out)
    assert out.min() > 0.0 and out.max() < 1.0


N_STAT = 400_000


def test_normals_moments_and_ks():
    keys = np.array([[12345, 678910]] * 4, dtype=np.uint64)
    out = np.empty((4, N_STAT // 4))
    _fills(1, keys, 3, 11, 1, out)
    z = out.ravel()
    n = z.size
    # 1e-6 two-sided bounds: 4.9 standard errors (normal approximation, n = 4e5): the
    # mean's is 1/sqrt(n), the variance's sqrt(2/n), the 4th moment's sqrt(96/n)
    # (Var z^4 = 105 - 9)
    c = 4.9
    assert abs(z.mean()) < c / math.sqrt(n)
    assert abs(z.var() - 1.0) < c * math.sqrt(2.0 / n)
    assert abs(np.mean(z ** 4) - 3.0) < c * math.sqrt(96.0 / n)
    assert abs(np.mean(z ** 3)) < c * math.sqrt(15.0 / n)
    # Kolmogorov-Smirnov: P(sqrt(n) D > x) <= 2 exp(-2 x^2) (Dvoretzky-Kiefer-Wolfowitz,
    # Massart's constant); x = sqrt(ln(2e6) / 2) = 2.69 gives a false alarm below 1e-6
    d_stat = stats.kstest(z, "norm").statistic
    assert d_stat < math.sqrt(math.log(2e6) / 2.0) / math.sqrt(n)
    # pairs of a block (the Box-Muller pair and across pairs) are uncorrelated
    q = out.reshape(-1, 4)
    for a, b in ((0, 1), (1, 2), (0, 3)):
        r = np.corrcoef(q[:, a], q[:, b])[0, 1]
        assert abs(r) < c / math.sqrt(q.shape[0])


def test_bounded_range_and_frequencies():
    m = 50
    keys = np.array([[7, 9]] * 4, dtype=np.uint64)
    out = np.empty((4, N_STAT // 4))
    _fills(2, keys, 0, 0, m, out)
    k = out.ravel().astype(np.int64)
    assert k.min() >= 0 and k.max() < m and np.array_equal(out.ravel(), k)
    counts = np.bincount(k, minlength=m)
    expected = k.size / m
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < stats.chi2.ppf(1.0 - 1e-6, m - 1)  # false alarm 1e-6
    # m = 1: always 0
    one = np.empty((1, 33))
    _fills(2, keys[:1], 0, 0, 1, one)
    assert np.all(one == 0)


def test_fills_equal_reference_and_any_split():
    keys, _ = _cases(6, seed=4)
    for kind, n in ((0, 13), (1, 13), (1, 3), (2, 9)):
        out = np.empty((6, n))
        _fills(kind, keys, 5, 2, 37, out)
        for r in range(6):
            if kind == 0:
                want = ref.uniforms(keys[r], [5 + r], 2, n)[0]
            elif kind == 1:
                want = ref.normals(keys[r], [5 + r], 2, n)[0]
            else:
                want = ref.bounded(keys[r], [5 + r], 2, n, 37)[0]
            np.testing.assert_array_equal(out[r], want)
            # a prefix of the fill is the fill of the shorter array (element i depends only
            # on the key, the counter and i)
            short = np.empty((1, n - 2))
            _fills(kind, keys[r:r + 1], 5 + r, 2, 37, short)
            np.testing.assert_array_equal(short[0], out[r, :n - 2])
    # element by element: the same values as the fill
    out = np.empty((1, 11))
    _fills(1, keys[:1], 5, 2, 1, out)
    pieces = np.empty((1, 11))
    _fills(cpu.NORMALS_BY_ELEMENT, keys[:1], 5, 2, 1, pieces)
    np.testing.assert_array_equal(pieces, out)


def test_numpy_transcendentals_within_ulps():
    """The reference with NumPy's own SIMD log (``libm=False``) against the C library's
    (the kernel's): measured within 2 ulps (4 allowed) of the normals' magnitude."""
    key = np.array([99, 1], dtype=np.uint64)
    a = ref.normals(key, np.arange(50), 4, 400, libm=True)
    b = ref.normals(key, np.arange(50), 4, 400, libm=False)
    ulps = np.abs(a - b) / np.spacing(np.maximum(np.abs(a), 1e-300))
    assert ulps.max() <= 4.0


COOP_SCRIPT = r'''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from numba import cuda
from vits_ref.kernels import coop_philox as cp, philox as P

threads, n = json.loads(sys.argv[1])


@cuda.jit
def k(kind, keys, out):
    r = cuda.blockIdx.x
    if kind == 0:
        cp.fill_uniforms(keys[r, 0], keys[r, 1], r, 3, out[r])
    elif kind == 1:
        cp.fill_normals(keys[r, 0], keys[r, 1], r, 3, out[r])
    else:
        cp.fill_bounded(keys[r, 0], keys[r, 1], r, 3, 17, out[r])


keys = np.array([[1, 2], [3, 4]], dtype=np.uint64)
worst = 0.0
for kind in range(3):
    want = np.empty((2, n))
    for r in range(2):
        fill = (P.fill_uniforms, P.fill_normals)[kind] if kind < 2 else None
        if kind < 2:
            fill(np.uint64(keys[r, 0]), np.uint64(keys[r, 1]), r, 3, want[r])
        else:
            P.fill_bounded(np.uint64(keys[r, 0]), np.uint64(keys[r, 1]), r, 3, 17, want[r])
    for t in threads:
        out = np.full((2, n), np.nan)
        k[2, t](kind, keys, out)
        worst = max(worst, float(np.max(np.abs(out - want))))
print("MAXDIFF", worst)
'''


def test_cooperative_fills_under_simulator():
    """Blocks of 1, 3 and 5 threads (several Philox blocks per thread, a partial last
    block) fill exactly what the serial body fills: tolerance 0."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", COOP_SCRIPT, json.dumps([[1, 3, 5], 23])],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert float(res.stdout.split("MAXDIFF")[1]) == 0.0
