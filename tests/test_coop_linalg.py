"""The block-cooperative primitives (kernels/coop_linalg.py) equal the serial loops.

Under Numba's CUDA simulator (a subprocess: the simulator must be on before Numba is
imported) each primitive runs in blocks of 3 and 5 threads (1 to 16 in the slow test),
two blocks at once, each on its own problem (d <= 4, rectangular products
too), and is compared with :mod:`vits_ref.kernels.linalg`'s loops called from Python.

Tolerance: 0 against the loops. Each output entry is summed by one thread in the loops'
order (products, gemv, syrk), and the solves and the rank-one update keep the serial
column order, so any difference is a synchronisation or indexing bug, not rounding. NumPy
(an independent reference) must agree to 1e-12 relative (d <= 4, condition numbers below
100: the rounding is ~1e-15).
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import requires_gpu

SCRIPT = r'''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from numba import cuda
# the library's decorator: on a GPU it registers the inlined kernel bodies for numba-cuda
# (vits_ref.config.cuda_jit); a bare cuda.jit types them with numba's own IR and fails
from vits_ref.config import cuda_jit
from vits_ref.kernels import coop_linalg as cl, linalg as la

THREADS, SHAPES, DIMS = json.loads(sys.argv[1])
rng = np.random.default_rng(3)
worst_loop, worst_np, failures = 0.0, 0.0, []


def spd(d):
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * np.linspace(1.0, 10.0, d)) @ q.T


def lower(d):
    L = np.tril(rng.standard_normal((d, d)))
    L[np.diag_indices(d)] = 1.0 + rng.random(d)
    return L


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0


@cuda_jit
def k_gemm(which, a, b, out):
    r = cuda.blockIdx.x
    if which == 0:
        cl.gemm_nn(a[r], b[r], out[r])
    elif which == 1:
        cl.gemm_tn(a[r], b[r], out[r])
    elif which == 2:
        cl.gemm_nt(a[r], b[r], out[r])
    else:
        cl.gram(a[r], out[r])


@cuda_jit
def k_gemv(a, x, out):
    r = cuda.blockIdx.x
    cl.gemv(a[r], x[r], out[r])


@cuda_jit
def k_syrk(a, alpha, beta, c):
    r = cuda.blockIdx.x
    cl.syrk_lower(a[r], alpha, beta, c[r])


@cuda_jit
def k_solve(trans, alias, L, b, out):
    r = cuda.blockIdx.x
    if alias:
        if trans:
            cl.solve_lower_t(L[r], b[r], b[r])
        else:
            cl.solve_lower(L[r], b[r], b[r])
    elif trans:
        cl.solve_lower_t(L[r], b[r], out[r])
    else:
        cl.solve_lower(L[r], b[r], out[r])


@cuda_jit
def k_chol(L, x, work):
    r = cuda.blockIdx.x
    cl.chol_rank1_update(L[r], x[r], work[r])


@cuda_jit
def k_inv(b, out, work, ok):
    r = cuda.blockIdx.x
    res = cl.inv_transpose(b[r], out[r], work[r])
    ok[r, cuda.threadIdx.x] = 1 if res else 0


def check(name, got, loop, ref):
    global worst_loop, worst_np
    dl, dn = rel(got, loop), rel(got, ref)
    worst_loop, worst_np = max(worst_loop, dl), max(worst_np, dn)
    if dl != 0.0:
        failures.append(f"{name}: {dl:.3g} from the loops")


for nt in THREADS:
    for (n, k, m) in SHAPES:
        a, b = rng.standard_normal((2, n, k)), rng.standard_normal((2, k, m))
        out = np.zeros((2, n, m))
        k_gemm[2, nt](0, a, b, out)
        loop = np.zeros_like(out)
        for r in range(2):
            la.gemm_nn(a[r], b[r], loop[r])
        check(f"gemm_nn {n}x{k}x{m} nt={nt}", out, loop, a @ b)
        at, bt = rng.standard_normal((2, k, n)), rng.standard_normal((2, k, m))
        out = np.zeros((2, n, m))
        k_gemm[2, nt](1, at, bt, out)
        for r in range(2):
            la.gemm_tn(at[r], bt[r], loop[r])
        check(f"gemm_tn nt={nt}", out, loop, np.swapaxes(at, 1, 2) @ bt)
        bn = rng.standard_normal((2, m, k))
        out = np.zeros((2, n, m))
        k_gemm[2, nt](2, a, bn, out)
        for r in range(2):
            la.gemm_nt(a[r], bn[r], loop[r])
        check(f"gemm_nt nt={nt}", out, loop, a @ np.swapaxes(bn, 1, 2))
        out = np.zeros((2, k, k))
        k_gemm[2, nt](3, a, a, out)
        loop = np.zeros_like(out)
        for r in range(2):
            la.gram(a[r], loop[r])
        check(f"gram nt={nt}", out, loop, np.swapaxes(a, 1, 2) @ a)
        x, out = rng.standard_normal((2, k)), np.zeros((2, n))
        k_gemv[2, nt](a, x, out)
        loop = np.zeros_like(out)
        for r in range(2):
            la.gemv(a[r], x[r], loop[r])
        check(f"gemv nt={nt}", out, loop, np.einsum("rij,rj->ri", a, x))
        for alpha, beta in ((1.0, 0.0), (0.5, 2.0)):
            c0 = rng.standard_normal((2, k, k))
            c, loop = c0.copy(), c0.copy()
            k_syrk[2, nt](a, alpha, beta, c)
            for r in range(2):
                la.syrk_lower(a[r], alpha, beta, loop[r])
            ref = c0.copy()
            full = beta * c0 + alpha * np.swapaxes(a, 1, 2) @ a
            il = np.tril_indices(k)
            ref[:, il[0], il[1]] = full[:, il[0], il[1]]
            check(f"syrk alpha={alpha} beta={beta} nt={nt}", c, loop, ref)
    for d in DIMS:
        L = np.stack([lower(d), lower(d)])
        for trans in (0, 1):
            for alias in (0, 1):
                b = rng.standard_normal((2, d))
                got, out = b.copy(), np.zeros((2, d))
                k_solve[2, nt](trans, alias, L, got, out)
                got = got if alias else out
                loop = np.zeros((2, d))
                for r in range(2):
                    (la.solve_lower_t if trans else la.solve_lower)(L[r], b[r], loop[r])
                Ls = np.swapaxes(L, 1, 2) if trans else L
                check(f"solve trans={trans} alias={alias} d={d} nt={nt}", got, loop,
                      np.linalg.solve(Ls, b[..., None])[..., 0])
        x = rng.standard_normal((2, d))
        got, loop = L.copy(), L.copy()
        k_chol[2, nt](got, x.copy(), np.zeros((2, d)))
        for r in range(2):
            la.chol_rank1_update(loop[r], x[r], np.zeros(d))
        ref = np.linalg.cholesky(L @ np.swapaxes(L, 1, 2) + x[:, :, None] * x[:, None, :])
        check(f"chol_rank1_update d={d} nt={nt}", got, loop, ref)
        m = np.stack([spd(d) + rng.standard_normal((d, d)) * 0.1, rng.standard_normal((d, d))])
        m[1, 0, 0] += 3.0  # a pivot swap
        out, ok = np.zeros((2, d, d)), np.zeros((2, nt), dtype=np.int64)
        k_inv[2, nt](m, out, np.zeros((2, d, 2 * d)), ok)
        loop = np.zeros((2, d, d))
        for r in range(2):
            assert la.inv_transpose(m[r], loop[r], np.zeros((d, 2 * d)))
        if not ok.all():
            failures.append(f"inv_transpose d={d} nt={nt}: not every thread returned True")
        check(f"inv_transpose d={d} nt={nt}", out, loop, np.swapaxes(np.linalg.inv(m), 1, 2))
        if d > 1:  # singular: every thread returns False
            s = np.stack([m[0], m[0]])
            s[1, :, 0] = 0.0
            ok = np.ones((2, nt), dtype=np.int64)
            k_inv[2, nt](s, np.zeros((2, d, d)), np.zeros((2, d, 2 * d)), ok)
            if ok[0].min() != 1 or ok[1].max() != 0:
                failures.append(f"inv_transpose singular d={d} nt={nt}: {ok.tolist()}")
print("RESULT" + json.dumps({"loop": worst_loop, "numpy": worst_np, "failures": failures}))
'''


UPDATES_SCRIPT = r'''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from numba import cuda
from vits_ref.config import cuda_jit  # registers the inlined bodies for numba-cuda on a GPU
from vits_ref.drivers.cuda_coop import rebind
from vits_ref.kernels import coop_linalg as cl, linalg as la
from vits_ref.kernels.linalg import div_mat, div_vec

THREADS, DIMS = json.loads(sys.argv[1])
rng = np.random.default_rng(5)
worst_loop, worst_np, failures, checked = 0.0, 0.0, [], set()


def div_vec_inplace(x, s):  # the name imported, not la.div_vec: rebind swaps globals
    div_vec(x, s, x)


def div_mat_inplace(a, s):
    div_mat(a, s, a)


# the in-place forms run through rebind (which swaps in the cooperative div_*)
COOP = {name: getattr(cl, name) for name in (
    "fill_vec", "scaled_identity", "copy_mat", "div_vec", "div_mat", "add_vec", "add_diff_vec",
    "sub_vec", "sub_mat", "axpy_vec", "axpy_mat", "add_axpby_vec", "add_scaled_diff_mat",
    "add_scaled_diff_t_mat", "add_rows", "sub_rows", "sub_rows_pair_mean", "mean_rows",
    "add_outer_pair", "sub_outer_div", "symmetrize", "add_sqrt_rowdots")}
COOP["div_vec_inplace"] = rebind(div_vec_inplace, modules=("__main__",))
COOP["div_mat_inplace"] = rebind(div_mat_inplace, modules=("__main__",))
SERIAL = {name: getattr(la, name) for name in COOP if hasattr(la, name)}
SERIAL.update(div_vec_inplace=div_vec_inplace, div_mat_inplace=div_mat_inplace)
assert COOP["div_vec_inplace"] is not div_vec_inplace
assert all(cl.REPLACEMENTS[getattr(la, n)] is COOP[n] for n in COOP if hasattr(la, n))


def kernel_for(fn, pattern):
    # one block per problem: arrays ("a") indexed by the block, scalars ("s") shared
    if pattern == "a":
        @cuda_jit
        def k(x):
            fn(x[cuda.blockIdx.x])
    elif pattern == "aa":
        @cuda_jit
        def k(x, y):
            r = cuda.blockIdx.x
            fn(x[r], y[r])
    elif pattern == "as":
        @cuda_jit
        def k(x, s):
            fn(x[cuda.blockIdx.x], s)
    elif pattern == "asa":
        @cuda_jit
        def k(x, s, y):
            r = cuda.blockIdx.x
            fn(x[r], s, y[r])
    elif pattern == "saa":
        @cuda_jit
        def k(s, x, y):
            r = cuda.blockIdx.x
            fn(s, x[r], y[r])
    elif pattern == "saaa":
        @cuda_jit
        def k(s, x, y, z):
            r = cuda.blockIdx.x
            fn(s, x[r], y[r], z[r])
    elif pattern == "aasa":
        @cuda_jit
        def k(x, y, s, z):
            r = cuda.blockIdx.x
            fn(x[r], y[r], s, z[r])
    elif pattern == "aaa":
        @cuda_jit
        def k(x, y, z):
            r = cuda.blockIdx.x
            fn(x[r], y[r], z[r])
    elif pattern == "asaa":
        @cuda_jit
        def k(x, s, y, z):
            r = cuda.blockIdx.x
            fn(x[r], s, y[r], z[r])
    elif pattern == "aaaaa":
        @cuda_jit
        def k(x, y, z, u, w):
            r = cuda.blockIdx.x
            fn(x[r], y[r], z[r], u[r], w[r])
    elif pattern == "sasaa":
        @cuda_jit
        def k(s, x, t, y, z):
            r = cuda.blockIdx.x
            fn(s, x[r], t, y[r], z[r])
    return k


@cuda_jit
def k_chol(a, out, ok):
    r = cuda.blockIdx.x
    res = cl.cholesky(a[r], out[r])
    ok[r, cuda.threadIdx.x] = 1 if res else 0


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0


def check(name, nt, args, pattern, out_index, ref):
    # run the cooperative primitive on two blocks, each on its own problem, and the serial
    # loop on copies; compare the output argument (bit for bit) and NumPy's reference
    global worst_loop, worst_np
    checked.add(name)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel_for(COOP[name], pattern)[2, nt](*got)
    loop = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    for r in range(2):
        SERIAL[name](*[a[r] if p == "a" else a for a, p in zip(loop, pattern)])
    dl, dn = rel(got[out_index], loop[out_index]), rel(got[out_index], ref)
    worst_loop, worst_np = max(worst_loop, dl), max(worst_np, dn)
    if dl != 0.0:
        failures.append(f"{name} nt={nt}: {dl:.3g} from the loops")
    if dn > 1e-12:
        failures.append(f"{name} nt={nt}: {dn:.3g} from NumPy")


def spd(d):
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * np.linspace(1.0, 10.0, d)) @ q.T


N = rng.standard_normal
for nt in THREADS:
    for d in DIMS:
        for M in (max(2, d - 1),):  # rows of the row-wise updates (M x d): M != d at d = 4
            x, y, z = N((2, d)), N((2, d)), N((2, d))
            A, B, C = N((2, d, d)), N((2, d, d)), N((2, d, d))
            R, v = N((2, M, d)), N((2, d))
            check("fill_vec", nt, [x, 0.25], "as", 0, np.full_like(x, 0.25))
            check("scaled_identity", nt, [A, 1.5], "as", 0,
                  np.broadcast_to(1.5 * np.eye(d), A.shape))
            check("copy_mat", nt, [R, N((2, M, d))], "aa", 1, R)
            check("div_vec", nt, [x, 3.0, y], "asa", 2, x / 3.0)
            check("div_vec_inplace", nt, [x, 3.0], "as", 0, x / 3.0)
            check("div_mat", nt, [R, 7, N((2, M, d))], "asa", 2, R / 7)
            check("div_mat_inplace", nt, [A, 0.3], "as", 0, A / 0.3)
            check("add_vec", nt, [x, y], "aa", 1, y + x)
            check("add_diff_vec", nt, [x, y, z], "aaa", 2, z + (x - y))
            check("sub_vec", nt, [x, y], "aa", 1, y - x)
            check("sub_mat", nt, [R, R[::-1].copy()], "aa", 1, R[::-1] - R)
            check("axpy_vec", nt, [-0.7, x, y], "saa", 2, y - 0.7 * x)
            check("axpy_mat", nt, [0.3, R, R[::-1].copy()], "saa", 2, R[::-1] + 0.3 * R)
            check("add_axpby_vec", nt, [-0.2, x, 1.3, y, z], "sasaa", 4, z - 0.2 * x + 1.3 * y)
            check("add_scaled_diff_mat", nt, [0.1, A, B, C], "saaa", 3, C + 0.1 * (A - B))
            check("add_scaled_diff_t_mat", nt, [0.1, A, B, C], "saaa", 3,
                  C + 0.1 * (np.swapaxes(A, 1, 2) - B))
            check("add_rows", nt, [v, R], "aa", 1, R + v[:, None, :])
            check("sub_rows", nt, [v, R], "aa", 1, R - v[:, None, :])
            check("mean_rows", nt, [R, x], "aa", 1, R.mean(axis=1))
            R2 = N((2, M, d))
            args = [y, R2, v, R, x]
            check("sub_rows_pair_mean", nt, args, "aaaaa", 1, R2 - y[:, None, :])
            check("sub_rows_pair_mean", nt, args, "aaaaa", 3, R - v[:, None, :])
            check("sub_rows_pair_mean", nt, args, "aaaaa", 4, (R - v[:, None, :]).mean(axis=1))
            xx = x[:, :, None] * x[:, None, :]
            check("add_outer_pair", nt, [x, 0.6, A, B], "asaa", 2, A + xx)
            check("add_outer_pair", nt, [x, 0.6, A, B], "asaa", 3, B + 0.6 * xx)
            check("sub_outer_div", nt, [x, y, 1.7, A], "aasa", 3,
                  A - x[:, :, None] * y[:, None, :] / 1.7)
            check("symmetrize", nt, [A], "a", 0, 0.5 * (A + np.swapaxes(A, 1, 2)))
            Y = N((2, M + 2, d))
            X = Y * np.sign(N((2, M + 2, 1)))  # some rows with a negative dot: clipped at 0
            q = np.einsum("rai,rai->ra", X, Y)
            out = N((2, M + 2))
            check("add_sqrt_rowdots", nt, [0.9, X, Y, out], "saaa", 3,
                  out + 0.9 * np.sqrt(np.maximum(q, 0.0)))
        # Cholesky: an SPD matrix and a non-SPD one (False in every thread, the same
        # columns written as the loop's before it stopped)
        a = np.stack([spd(d), spd(d)])
        if d > 1:
            a[1, d - 1, d - 1] = -1.0
        got = np.full((2, d, d), np.nan)
        ok = np.zeros((2, nt), dtype=np.int64)
        k_chol[2, nt](a, got, ok)
        loop, lok = np.full((2, d, d), np.nan), []
        for r in range(2):
            lok.append(la.cholesky(a[r], loop[r]))
        checked.add("cholesky")
        if not (np.array_equal(got, loop, equal_nan=True)):
            failures.append(f"cholesky d={d} nt={nt}: differs from the loop")
        if [bool(ok[r].min()) for r in range(2)] != lok or (ok.min(1) != ok.max(1)).any():
            failures.append(f"cholesky d={d} nt={nt}: status {ok.tolist()} vs {lok}")
        if lok[0]:
            dn = rel(got[0], np.linalg.cholesky(a[0]))
            worst_np = max(worst_np, dn)
print("RESULT" + json.dumps({"loop": worst_loop, "numpy": worst_np, "failures": failures,
                             "checked": sorted(checked)}))
'''


def _simulate(script, *args):
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", script, *map(json.dumps, args)],
                         capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.split("RESULT")[1])


@pytest.mark.parametrize("threads, shapes, dims", [
    # default: 3 and 5 threads (a remainder; more threads than the entries of a d = 3
    # vector), square and rectangular products, d = 3 and 4
    ((3, 5), ((4, 4, 4), (2, 3, 4)), (3, 4)),
    pytest.param((1, 2, 3, 4, 16), ((1, 1, 1), (3, 3, 3), (4, 4, 4), (2, 3, 4), (4, 2, 3)),
                 (1, 2, 3, 4), marks=pytest.mark.slow),
])
def test_coop_primitives_equal_the_loops_under_simulator(threads, shapes, dims):
    out = _simulate(SCRIPT, [threads, shapes, dims])
    assert out["failures"] == []
    assert out["loop"] == 0.0
    assert out["numpy"] < 1e-12


@requires_gpu
def test_coop_primitives_on_gpu():
    """Compiled for a real GPU: the compiler contracts multiply-adds into FMAs, so the
    primitives agree with the Python loops to rounding (d <= 4: ~1e-15), not bit for bit;
    a missing barrier or a wrong index would differ at O(1)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    args = json.dumps([(1, 3, 32, 64), ((4, 4, 4), (2, 3, 4)), (3, 4)])
    res = subprocess.run([sys.executable, "-c", SCRIPT, args], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.split("RESULT")[1])
    assert out["loop"] < 1e-12 and out["numpy"] < 1e-12
    assert not [f for f in out["failures"] if "from the loops" not in f]


#: Every primitive :mod:`vits_ref.kernels.coop_linalg` replaces that the test above does
#: not check (the products, solves and updates of ``SCRIPT``).
PRODUCTS = {"gemm_nn", "gemm_tn", "gemm_nt", "gemv", "gram", "syrk_lower", "solve_lower",
            "solve_lower_t", "chol_rank1_update", "inv_transpose"}


@pytest.mark.parametrize("threads, dims", [
    ((1, 3, 5), (3, 4)),
    pytest.param((1, 2, 3, 4, 5, 16), (1, 2, 3, 4), marks=pytest.mark.slow),
])
def test_coop_updates_equal_the_loops_under_simulator(threads, dims):
    """The in-place updates of block-safe bodies (fills, axpy, row updates, symmetrize,
    the LinUCB width, ...) and the Cholesky factor: bit for bit, every thread count."""
    out = _simulate(UPDATES_SCRIPT, [threads, dims])
    assert out["failures"] == []
    assert out["loop"] == 0.0
    assert out["numpy"] < 1e-12
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import coop_linalg

    every = {fn.__name__ for fn in coop_linalg.REPLACEMENTS}
    assert every - PRODUCTS == set(out["checked"]) - {"div_vec_inplace", "div_mat_inplace"}
