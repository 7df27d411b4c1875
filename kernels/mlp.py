"""The neural potential of the VITS paper's quadratic bandit (ALGORITHMS.md section 2).

The network ``g_theta: R^p -> R`` has two ReLU hidden layers of widths ``h1`` and ``h2``::

    z1 = W1 x + b1,   a1 = relu(z1)          (h1,)
    z2 = W2 a1 + b2,  a2 = relu(z2)          (h2,)
    g  = w3 . a2 + b3                        scalar

with ``relu'(0) := 0``. Its parameters are one flat vector ``theta`` of length
``n_params(p, h1, h2) = h1 p + h1 + h2 h1 + h2 + h2 + 1`` (861 for p = h1 = h2 = 20),
laid out as (offsets in order)::

    W1 (h1, p) row-major | b1 (h1) | W2 (h2, h1) row-major | b2 (h2) | w3 (h2) | b3 (1)

Potential, gradient and Gauss-Newton matrix over observations ``(x_s, r_s)``, with
residuals ``e_s = g(x_s) - r_s`` and ``J`` the (n, d) Jacobian of the outputs::

    U = eta/2 (sum_s e_s^2 + lam |theta|^2)
    grad U = eta (J^T e + lam theta)          by back-propagation, J never formed
    G = eta (J^T J + lam I)                   Gauss-Newton (positive definite)

Back-propagation uses the output's sensitivities to the pre-activations,
``D2 = dg/dz2 = w3 * 1[z2 > 0]`` and ``D1 = dg/dz1 = (D2 W2) * 1[z1 > 0]`` (rows per
observation); a row of ``J`` is ``[D1 (x) x, D1, D2 (x) a1, D2, a2, 1]`` (``(x)`` the
outer product, flattened row-major like the weights).

The history is processed in chunks of rows as tall as the scratch buffers (the model uses
256): the scratch never grows with the history, ``J`` exists one chunk at a time, and
``J^T J`` is accumulated chunk by chunk into the lower triangle by :func:`syrk_lower`
(BLAS ``dsyrk`` on the CPU: half the flops of a general product; loops elsewhere), then
mirrored once.

Cost per parameter vector with n observations, d = n_params: forward and backward passes
about ``2 n (2 p h1 + 3 h1 h2)`` flops (4 MFLOP at n = 1000, p = h = 20); the
Gauss-Newton matrix ``n d^2`` flops (0.74 GFLOP at n = 1000, d = 861) plus ``n d`` writes
to build ``J``. Nothing of ``J^T J`` can be cached across parameter vectors: every row of
``J`` depends on ``theta`` through the activations and the ReLU masks (only the ``b3``
column, constant 1, does not). What a caller can choose is *where* to evaluate it: at each
draw of every inner step (what VITS-II prescribes), or once per round at the mean (an
approximation the caller must own and document). For n < d/2 the matrix is a ridge plus
a rank-n term, so an engine may also multiply by it through ``J`` (``H B = eta (J^T (J B)
+ lam B)``, ``4 n d^2`` flops instead of ``2 d^3``) rather than form it.

Measured (2-core Cascade Lake, ``OPENBLAS_NUM_THREADS=1``, d = 861, medians): value and
gradient 0.017 ms at n = 100 and 0.15 ms at n = 1000 (vectorised NumPy: 0.049 and
0.28 ms); with the Gauss-Newton matrix 1.8 and 12.4 ms (NumPy 2.2 and 17 ms: its
``J.T @ J`` calls ``dsyrk`` too, so both sit near the BLAS peak). One 861 x 861 product
takes 19 ms, so the three products of a VITS-II step outweigh the potential.

Bodies here are plain loops plus the primitives of :mod:`.linalg`; scratch comes in as
arguments, and nothing allocates.
"""

from vits_ref.config import cpu_jit, kernel

from .linalg import gemm_nn, gemm_nt, gemm_tn, gemv, syrk_lower

# --------------------------------------------------------------------------- layout


def n_params(p, h1, h2):
    """Length of the flat parameter vector of the ``p -> h1 -> h2 -> 1`` network."""
    return h1 * p + h1 + h2 * h1 + h2 + h2 + 1


@kernel
def mlp_views(theta, p, h1, h2):
    """Views ``(W1, b1, W2, b2, w3, k3)`` into the flat vector ``theta``.

    ``W1`` (h1, p) and ``W2`` (h2, h1) are row-major reshapes of contiguous slices;
    ``k3`` is the index of ``b3`` (the last entry). Works on gradients too (same layout).
    """
    o1 = h1 * p
    o2 = o1 + h1
    o3 = o2 + h2 * h1
    o4 = o3 + h2
    o5 = o4 + h2
    return (theta[:o1].reshape((h1, p)), theta[o1:o2], theta[o2:o3].reshape((h2, h1)),
            theta[o3:o4], theta[o4:o5], o5)


# --------------------------------------------------------------------------- J^T J


@kernel
def gauss_newton_finish(H, ridge):
    """``H <- H + ridge I`` on the lower triangle, then mirrored to the upper."""
    d = H.shape[0]
    for i in range(d):
        H[i, i] += ridge
    # mirror in 32 x 32 tiles: a plain transpose loop strides through memory (3x slower)
    for i0 in range(0, d, 32):
        i1 = min(i0 + 32, d)
        for j0 in range(0, i1, 32):
            for j in range(j0, min(j0 + 32, d)):
                for i in range(max(i0, j + 1), i1):
                    H[j, i] = H[i, j]


# --------------------------------------------------------------------------- passes


@kernel
def relu_bias(Z, b):
    """``Z <- relu(Z + b)`` row by row (NaN propagates, as ``np.maximum`` does)."""
    n, h = Z.shape
    for s in range(n):
        for i in range(h):
            z = Z[s, i] + b[i]
            if z <= 0.0:
                z = 0.0
            Z[s, i] = z


@kernel
def mlp_forward(theta, X, h1, h2, A1, A2, out):
    """Forward pass over the rows of ``X`` (n, p).

    ``A1`` (n, h1) and ``A2`` (n, h2) receive the post-ReLU activations (``a > 0`` is the
    ReLU mask), ``out`` (n,) the outputs ``g_theta(x_s)``.
    """
    W1, b1, W2, b2, w3, k3 = mlp_views(theta, X.shape[1], h1, h2)
    gemm_nt(X, W1, A1)
    relu_bias(A1, b1)
    gemm_nt(A1, W2, A2)
    relu_bias(A2, b2)
    gemv(A2, w3, out)
    b3 = theta[k3]
    for s in range(X.shape[0]):
        out[s] += b3


@kernel
def mlp_sensitivities(theta, p, A1, A2, D1, D2):
    """``D2 = w3 * 1[a2 > 0]`` and ``D1 = (D2 W2) * 1[a1 > 0]``: ``dg/dz`` per row."""
    n, h1 = A1.shape
    h2 = A2.shape[1]
    W1, b1, W2, b2, w3, k3 = mlp_views(theta, p, h1, h2)
    for s in range(n):
        for j in range(h2):
            D2[s, j] = w3[j] if A2[s, j] > 0.0 else 0.0
    gemm_nn(D2, W2, D1)
    for s in range(n):
        for i in range(h1):
            if not A1[s, i] > 0.0:
                D1[s, i] = 0.0


@kernel
def mlp_jacobian_rows(X, A1, A2, D1, D2, J):
    """Rows ``J_s = dg(x_s)/dtheta = [D1 (x) x, D1, D2 (x) a1, D2, a2, 1]`` (flat layout)."""
    n, p = X.shape
    h1 = A1.shape[1]
    h2 = A2.shape[1]
    for s in range(n):
        k = 0
        for i in range(h1):
            di = D1[s, i]
            for q in range(p):
                J[s, k + q] = di * X[s, q]
            k += p
        for i in range(h1):
            J[s, k + i] = D1[s, i]
        k += h1
        for j in range(h2):
            dj = D2[s, j]
            for i in range(h1):
                J[s, k + i] = dj * A1[s, i]
            k += h1
        for j in range(h2):
            J[s, k + j] = D2[s, j]
        k += h2
        for j in range(h2):
            J[s, k + j] = A2[s, j]
        J[s, k + h2] = 1.0


@kernel
def mlp_backprop(X, e, A1, A2, D1, D2, g):
    """``g = J^T e`` by back-propagation, without forming ``J``.

    ``D1``, ``D2`` (the sensitivities) are scaled in place by ``e`` row by row, which makes
    them the gradients of ``sum_s e_s g(x_s)`` with respect to ``z1``, ``z2``.
    """
    n, p = X.shape
    h1 = A1.shape[1]
    h2 = A2.shape[1]
    for s in range(n):
        es = e[s]
        for i in range(h1):
            D1[s, i] *= es
        for j in range(h2):
            D2[s, j] *= es
    gW1, gb1, gW2, gb2, gw3, k3 = mlp_views(g, p, h1, h2)
    gemm_tn(D1, X, gW1)
    gemm_tn(D2, A1, gW2)
    for i in range(h1):
        gb1[i] = 0.0
    for j in range(h2):
        gb2[j] = 0.0
        gw3[j] = 0.0
    sb3 = 0.0
    for s in range(n):
        es = e[s]
        for i in range(h1):
            gb1[i] += D1[s, i]
        for j in range(h2):
            gb2[j] += D2[s, j]
            gw3[j] += A2[s, j] * es
        sb3 += es
    g[k3] = sb3


@kernel
def mlp_potential(theta, X, r, h1, h2, want_jtj, alpha, first, JtJ, grad, A1, A2, out,
                  D1, D2, gtmp, J):
    """The data term over all rows of ``X`` (n, p), in chunks of ``A1.shape[0]`` rows.

    Returns ``(sum_s e_s^2, first)``; ``grad`` (d,) receives ``J^T e``. With
    ``want_jtj`` the lower triangle of ``JtJ`` accumulates ``alpha J^T J``, overwriting it at the
    first chunk when ``first`` is True; the returned ``first`` is False once a chunk was
    added (so a caller can accumulate over several parameter vectors). Scratch: ``A1``
    (c, h1), ``A2`` (c, h2), ``out`` (c,), ``D1`` (c, h1), ``D2`` (c, h2), ``gtmp`` (d,),
    ``J`` (c, d).
    """
    n, p = X.shape
    c = A1.shape[0]
    d = grad.shape[0]
    for i in range(d):
        grad[i] = 0.0
    ss = 0.0
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        a1 = A1[:m]
        a2 = A2[:m]
        o = out[:m]
        d1 = D1[:m]
        d2 = D2[:m]
        mlp_forward(theta, Xc, h1, h2, a1, a2, o)
        for s in range(m):
            o[s] -= r[c0 + s]
            ss += o[s] * o[s]
        mlp_sensitivities(theta, p, a1, a2, d1, d2)
        if want_jtj:
            Jc = J[:m]
            mlp_jacobian_rows(Xc, a1, a2, d1, d2, Jc)
            syrk_lower(Jc, alpha, 0.0 if first else 1.0, JtJ)
            first = False
        mlp_backprop(Xc, o, a1, a2, d1, d2, gtmp)
        for i in range(d):
            grad[i] += gtmp[i]
    return ss, first


@kernel
def mlp_grads_hessian(thetas, X, r, eta, lam, h1, h2, want_hessian, G, H, values, A1, A2,
                      out, D1, D2, gtmp, J):
    """Potentials, gradients and the mean Gauss-Newton matrix at the rows of ``thetas``.

    ``values[m] = U(theta_m)``, ``G[m] = grad U(theta_m)``; with ``want_hessian``,
    ``H = eta (mean_m J_m^T J_m + lam I)`` (full, symmetric). Scratch as in
    :func:`mlp_potential`.
    """
    M, d = thetas.shape
    first = True
    for m in range(M):
        th = thetas[m]
        g = G[m]
        ss, first = mlp_potential(th, X, r, h1, h2, want_hessian, eta / M, first, H, g,
                                  A1, A2, out, D1, D2, gtmp, J)
        q = 0.0
        for i in range(d):
            q += th[i] * th[i]
            g[i] = eta * (g[i] + lam * th[i])
        values[m] = 0.5 * eta * (ss + lam * q)
    if want_hessian:
        if first:  # no observations: the prior term only
            for i in range(d):
                for j in range(i + 1):
                    H[i, j] = 0.0
        gauss_newton_finish(H, eta * lam)


@kernel
def mlp_outputs(theta, X, h1, h2, A1, A2, out):
    """Network outputs ``out`` (n,) for the rows of ``X``, in chunks of ``A1.shape[0]``."""
    n = X.shape[0]
    c = A1.shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        mlp_forward(theta, X[c0:c0 + m], h1, h2, A1[:m], A2[:m], out[c0:c0 + m])


@kernel
def mlp_jacobian(theta, X, h1, h2, A1, A2, out, D1, D2, J):
    """The full Jacobian ``J`` (n, d) and outputs ``out`` (n,), in chunks (tests, notebooks)."""
    n, p = X.shape
    c = A1.shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        mlp_forward(theta, Xc, h1, h2, A1[:m], A2[:m], out[c0:c0 + m])
        mlp_sensitivities(theta, p, A1[:m], A2[:m], D1[:m], D2[:m])
        mlp_jacobian_rows(Xc, A1[:m], A2[:m], D1[:m], D2[:m], J[c0:c0 + m])


# --------------------------------------------------------------------------- CPU drivers


@cpu_jit
def mlp_grads_hessian_cpu(thetas, X, r, eta, lam, h1, h2, want_hessian, G, H, values, A1,
                          A2, out, D1, D2, gtmp, J):
    """CPU driver of :func:`mlp_grads_hessian` (serial over the rows of ``thetas``)."""
    mlp_grads_hessian(thetas, X, r, eta, lam, h1, h2, want_hessian, G, H, values, A1, A2,
                      out, D1, D2, gtmp, J)


@cpu_jit
def mlp_outputs_cpu(theta, X, h1, h2, A1, A2, out):
    """CPU driver of :func:`mlp_outputs`."""
    mlp_outputs(theta, X, h1, h2, A1, A2, out)


@cpu_jit
def mlp_jacobian_cpu(theta, X, h1, h2, A1, A2, out, D1, D2, J):
    """CPU driver of :func:`mlp_jacobian`."""
    mlp_jacobian(theta, X, h1, h2, A1, A2, out, D1, D2, J)
