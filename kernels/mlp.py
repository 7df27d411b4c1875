"""The ReLU-network potential (docs/algorithms.md section 2) as kernel bodies, any depth.

The network ``g_theta: R^p -> R`` has ``L >= 1`` ReLU hidden layers of widths
``h_1, ..., h_L`` (the VITS paper's quadratic bandit: ``p = 20``, ``(20, 20)``; the
particle-VI paper's BNN: ``(50,)``)::

    a_0 = x,   z_l = W_l a_{l-1} + b_l,   a_l = relu(z_l)     (h_l,),  l = 1..L
    g   = w_out . a_L + b_out                                  scalar

with ``relu'(0) := 0``. Its parameters are one flat vector ``theta``, laid out as::

    W_1 (h_1, p) row-major | b_1 | W_2 (h_2, h_1) | b_2 | ... | w_out (h_L) | b_out (1)

The layout is defined once, by :func:`layer_block` (a body, so the kernels use it too);
:func:`layout` and :func:`n_params` are its plain-Python views for the model and the
NumPy reference (``n_params(20, (20, 20)) = 861``).

Potential, gradient and Gauss-Newton matrix over observations ``(x_s, r_s)``, with
residuals ``e_s = g(x_s) - r_s`` and ``J`` the (n, d) Jacobian of the outputs::

    U = eta/2 (sum_s e_s^2 + lam |theta|^2)
    grad U = eta (J^T e + lam theta)          by back-propagation, J never formed
    G = eta (J^T J + lam I)                   Gauss-Newton (positive definite)

or, with a general Gaussian prior ``N(theta0, inv(P0))`` (not tempered by ``eta``; ``lam``
unused), ``eta/2 sum_s e_s^2 + 1/2 (theta - theta0)^T P0 (theta - theta0)``, gradient
``eta J^T e + P0 (theta - theta0)`` and Gauss-Newton ``eta J^T J + P0``.

Back-propagation uses the output's sensitivities to the pre-activations,
``D_L = dg/dz_L = w_out * 1[z_L > 0]`` and ``D_{l-1} = (D_l W_l) * 1[z_{l-1} > 0]`` (rows
per observation); a row of ``J`` is
``[D_1 (x) x, D_1, D_2 (x) a_1, D_2, ..., D_L (x) a_{L-1}, D_L, a_L, 1]`` (``(x)`` the
outer product, flattened row-major like the weights).

The history is processed in chunks of rows as tall as the scratch buffers (the model uses
256): the scratch never grows with the history, ``J`` exists one chunk at a time, and
``J^T J`` is accumulated chunk by chunk into the lower triangle by :func:`syrk_lower`
(BLAS ``dsyrk`` on the CPU: half the flops of a general product; loops elsewhere), then
mirrored once.

Cost per parameter vector with n observations, d = n_params: forward and backward passes
about ``2 n (2 p h_1 + 3 sum_l h_{l-1} h_l)`` flops (4 MFLOP at n = 1000, p = h = 20); the
Gauss-Newton matrix ``n d^2`` flops (0.74 GFLOP at n = 1000, d = 861) plus ``n d`` writes
to build ``J``. Nothing of ``J^T J`` can be cached across parameter vectors: every row of
``J`` depends on ``theta`` through the activations and the ReLU masks (only the ``b_out``
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

**The potential's interface** (the same for every model, so that generic steps close over
it)::

    mlp_grads_hessian(data, thetas, want_hessian, G, H, scratch)
    mlp_value(data, theta, scratch) -> float
    mlp_predict(data, theta, X, out, scratch)

``data = (X, r, eta, lam, widths, general, P0, theta0)``: the history ``X`` (n, p) and
``r`` (n,) (C-contiguous views), ``eta`` and ``lam`` (floats), ``widths`` (L,) int64 the
hidden widths, ``general`` (bool) whether the prior is the general ``N(theta0, inv(P0))``
with ``P0`` (d, d) and ``theta0`` (d,) (any float64 arrays, e.g. (1, 1) and (1,), when
False). ``scratch = (A, D, out, gtmp, J, pbuf)``: ``A`` and ``D`` flat
(c sum_l h_l,) float64, the activations and sensitivities of a chunk of ``c`` rows (layer
``l`` at ``[c sum_{k<l} h_k, +m h_l)``, reshaped to (m, h_l): C-contiguous for BLAS),
``out`` (c,), ``gtmp`` (d,), ``J`` (c, d), ``pbuf`` (d,). ``c = out.shape[0]`` is the chunk
height.

:data:`POTENTIAL` bundles the three bodies for the generic steps (:mod:`.potential`).
Bodies here are plain loops plus the primitives of :mod:`.linalg`; scratch comes in as
arguments, and nothing allocates. The drivers are in :mod:`vits_ref.drivers.cpu`.
"""

from vits_ref.config import kernel

from .linalg import gemm_nn, gemm_nt, gemm_tn, gemv, syrk_lower
from .potential import Potential

# --------------------------------------------------------------------------- layout


@kernel
def layer_block(p, widths, layer):
    """``(start_W, start_b, fan_out, fan_in)`` of layer ``layer`` in the flat layout.

    Layers ``0 .. L-1`` are the hidden layers (``W`` (fan_out, fan_in) row-major at
    ``[start_W, start_b)``, then ``b`` (fan_out,)); layer ``L = len(widths)`` is the output
    layer: ``w_out`` (h_L,) at ``[start_W, start_b)`` and ``b_out`` at ``start_b``. This is
    the one definition of the layout: :func:`layout`, :func:`n_params`, the kernels, the
    model and the NumPy reference all derive from it.
    """
    start = 0
    fan_in = p
    for k in range(layer):
        h = widths[k]
        start += h * fan_in + h
        fan_in = h
    fan_out = widths[layer] if layer < len(widths) else 1
    return start, start + fan_out * fan_in, fan_out, fan_in


def layout(p, hidden):
    """``{block: (start, stop, shape)}`` of the flat vector of the ``p -> hidden -> 1`` net.

    Blocks in order: ``W1``, ``b1``, ..., ``WL``, ``bL`` for the hidden layers, then
    ``w{L+1}`` (h_L,) and ``b{L+1}`` (shape ``()``, one entry) for the output. For
    ``hidden = (h1, h2)``: ``W1, b1, W2, b2, w3, b3``.
    """
    hidden = tuple(int(h) for h in hidden)
    L = len(hidden)
    out = {}
    for layer in range(L + 1):
        sw, sb, fan_out, fan_in = (int(v) for v in layer_block(int(p), hidden, layer))
        if layer < L:
            out[f"W{layer + 1}"] = (sw, sb, (fan_out, fan_in))
            out[f"b{layer + 1}"] = (sb, sb + fan_out, (fan_out,))
        else:
            out[f"w{layer + 1}"] = (sw, sb, (fan_in,))
            out[f"b{layer + 1}"] = (sb, sb + 1, ())
    return out


def n_params(p, hidden):
    """Length of the flat parameter vector of the ``p -> hidden[0] -> ... -> 1`` network."""
    hidden = tuple(int(h) for h in hidden)
    return int(layer_block(int(p), hidden, len(hidden))[1]) + 1


@kernel
def layer_params(theta, p, widths, layer):
    """Views ``(W (h, fan_in), b (h,))`` of hidden layer ``layer`` (0-based) of ``theta``.

    Works on gradients too (same layout).
    """
    sw, sb, h, fan_in = layer_block(p, widths, layer)
    return theta[sw:sb].reshape((h, fan_in)), theta[sb:sb + h]


@kernel
def layer_rows(buf, c, widths, layer, m):
    """Rows (m, h) of ``layer`` in a flat per-layer buffer of ``c sum(widths)`` entries.

    Layer ``l`` owns ``[c sum_{k<l} h_k, c sum_{k<=l} h_k)``; its first ``m h_l`` entries are
    the (m, h_l) C-contiguous view (``m <= c``): BLAS operands stay C-contiguous.
    """
    base = 0
    for k in range(layer):
        base += c * widths[k]
    h = widths[layer]
    return buf[base:base + m * h].reshape((m, h))


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
def mlp_forward(theta, X, widths, A, c, out):
    """Forward pass over the rows of ``X`` (m, p), ``m <= c``.

    Layer ``l``'s post-ReLU activations go to ``layer_rows(A, c, widths, l, m)`` (``a > 0``
    is the ReLU mask), the outputs ``g_theta(x_s)`` to ``out`` (m,).
    """
    m, p = X.shape
    L = widths.shape[0]
    prev = X
    for layer in range(L):
        W, b = layer_params(theta, p, widths, layer)
        a = layer_rows(A, c, widths, layer, m)
        gemm_nt(prev, W, a)
        relu_bias(a, b)
        prev = a
    sw, sb, _, _ = layer_block(p, widths, L)
    gemv(prev, theta[sw:sb], out)
    bo = theta[sb]
    for s in range(m):
        out[s] += bo


@kernel
def mlp_sensitivities(theta, p, widths, A, D, c, m):
    """``D_L = w_out * 1[a_L > 0]``, ``D_{l-1} = (D_l W_l) * 1[a_{l-1} > 0]``: ``dg/dz``."""
    L = widths.shape[0]
    sw, sb, _, _ = layer_block(p, widths, L)
    w_out = theta[sw:sb]
    a = layer_rows(A, c, widths, L - 1, m)
    dl = layer_rows(D, c, widths, L - 1, m)
    h = a.shape[1]
    for s in range(m):
        for j in range(h):
            dl[s, j] = w_out[j] if a[s, j] > 0.0 else 0.0
    for layer in range(L - 1, 0, -1):
        W, _ = layer_params(theta, p, widths, layer)
        dprev = layer_rows(D, c, widths, layer - 1, m)
        aprev = layer_rows(A, c, widths, layer - 1, m)
        gemm_nn(dl, W, dprev)
        hp = aprev.shape[1]
        for s in range(m):
            for i in range(hp):
                if not aprev[s, i] > 0.0:
                    dprev[s, i] = 0.0
        dl = dprev


@kernel
def mlp_jacobian_rows(X, widths, A, D, c, J):
    """Rows ``J_s = [D_1 (x) x, D_1, ..., D_L (x) a_{L-1}, D_L, a_L, 1]`` (flat layout).

    ``X`` (m, p); ``A``, ``D`` the flat activation and sensitivity buffers (chunk height
    ``c``); ``J`` (m, d). Written row by row (each row of ``J`` once, in order) through
    1-D slices indexed from 0, which the compiler vectorises (indexing ``J[s, k + q]``
    with a running offset ran 2.7x slower at d = 861).
    """
    m, p = X.shape
    L = widths.shape[0]
    for s in range(m):
        Js = J[s]
        k = 0
        base = 0        # start of this layer in the flat buffers
        base_prev = 0   # start of the layer before
        fan_in = p
        for layer in range(L):
            h = widths[layer]
            drow = D[base + s * h:base + s * h + h]
            if layer == 0:
                src = X[s]
            else:
                src = A[base_prev + s * fan_in:base_prev + s * fan_in + fan_in]
            for i in range(h):
                di = drow[i]
                blk = Js[k:k + fan_in]
                for q in range(fan_in):
                    blk[q] = di * src[q]
                k += fan_in
            blk = Js[k:k + h]
            for i in range(h):
                blk[i] = drow[i]
            k += h
            base_prev = base
            base += c * h
            fan_in = h
        arow = A[base_prev + s * fan_in:base_prev + s * fan_in + fan_in]
        blk = Js[k:k + fan_in]
        for j in range(fan_in):
            blk[j] = arow[j]
        Js[k + fan_in] = 1.0


@kernel
def mlp_backprop(X, e, widths, A, D, c, g):
    """``g = J^T e`` by back-propagation, without forming ``J``.

    The sensitivities in ``D`` are scaled in place by ``e`` row by row, which makes them
    the gradients of ``sum_s e_s g(x_s)`` with respect to the pre-activations.
    """
    m, p = X.shape
    L = widths.shape[0]
    for layer in range(L):
        dl = layer_rows(D, c, widths, layer, m)
        h = dl.shape[1]
        for s in range(m):
            es = e[s]
            for i in range(h):
                dl[s, i] *= es
    prev = X
    for layer in range(L):
        gW, gb = layer_params(g, p, widths, layer)
        dl = layer_rows(D, c, widths, layer, m)
        gemm_tn(dl, prev, gW)
        h = dl.shape[1]
        for i in range(h):
            gb[i] = 0.0
        for s in range(m):
            for i in range(h):
                gb[i] += dl[s, i]
        prev = layer_rows(A, c, widths, layer, m)
    sw, sb, _, hL = layer_block(p, widths, L)
    gw = g[sw:sb]
    for j in range(hL):
        gw[j] = 0.0
    sbo = 0.0
    for s in range(m):
        es = e[s]
        for j in range(hL):
            gw[j] += prev[s, j] * es
        sbo += es
    g[sb] = sbo


# --------------------------------------------------------------------------- potential


@kernel
def mlp_residuals(theta, Xc, yc, widths, A, c, o, ss):
    """Forward pass of the rows ``Xc`` (m, p) (activations into ``A``) and residuals
    ``o <- f(Xc) - yc`` (m,); returns ``ss + sum_s o_s^2`` (added in row order)."""
    mlp_forward(theta, Xc, widths, A, c, o)
    for s in range(o.shape[0]):
        o[s] -= yc[s]
        ss += o[s] * o[s]
    return ss


@kernel
def mlp_outputs(theta, X, widths, A, c, out):
    """Network outputs ``out`` (n,) at the rows of ``X`` (n, p), ``c`` rows at a time."""
    n = X.shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        mlp_forward(theta, X[c0:c0 + m], widths, A, c, out[c0:c0 + m])


@kernel
def mlp_data_term(data, theta, want_jtj, alpha, first, JtJ, grad, scratch):
    """The data term over all rows of the history, in chunks of ``c`` rows.

    Returns ``(sum_s e_s^2, first)``; ``grad`` (d,) receives ``J^T e``. With ``want_jtj``
    the lower triangle of ``JtJ`` accumulates ``alpha J^T J``, overwriting it at the first
    chunk when ``first`` is True; the returned ``first`` is False once a chunk was added
    (so a caller can accumulate over several parameter vectors).
    """
    X, r, eta, lam, widths, general, P0, theta0 = data
    A, D, out, gtmp, J, pbuf = scratch
    n, p = X.shape
    c = out.shape[0]
    d = grad.shape[0]
    for i in range(d):
        grad[i] = 0.0
    ss = 0.0
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        o = out[:m]
        ss = mlp_residuals(theta, Xc, r[c0:c0 + m], widths, A, c, o, ss)
        mlp_sensitivities(theta, p, widths, A, D, c, m)
        if want_jtj:
            Jc = J[:m]
            mlp_jacobian_rows(Xc, widths, A, D, c, Jc)
            syrk_lower(Jc, alpha, 0.0 if first else 1.0, JtJ)
            first = False
        mlp_backprop(Xc, o, widths, A, D, c, gtmp)
        for i in range(d):
            grad[i] += gtmp[i]
    return ss, first


@kernel
def mlp_prior_general(theta, P0, theta0, diff, Pdiff):
    """``diff <- theta - theta0``, ``Pdiff <- P0 diff``; returns ``1/2 diff^T P0 diff``."""
    d = theta.shape[0]
    for i in range(d):
        diff[i] = theta[i] - theta0[i]
    gemv(P0, diff, Pdiff)
    q = 0.0
    for i in range(d):
        q += diff[i] * Pdiff[i]
    return 0.5 * q


@kernel
def mlp_grad_at(data, theta, want_hessian, alpha, first, H, g, scratch):
    """``g <- grad U(theta)``; returns ``(U(theta), first)``.

    With ``want_hessian`` the lower triangle of ``H`` accumulates ``alpha J^T J`` as in
    :func:`mlp_data_term`.
    """
    X, r, eta, lam, widths, general, P0, theta0 = data
    gtmp, pbuf = scratch[3], scratch[5]
    ss, first = mlp_data_term(data, theta, want_hessian, alpha, first, H, g, scratch)
    d = theta.shape[0]
    if general:
        prior = mlp_prior_general(theta, P0, theta0, gtmp, pbuf)
        for i in range(d):
            g[i] = eta * g[i] + pbuf[i]
        return 0.5 * eta * ss + prior, first
    q = 0.0
    for i in range(d):
        q += theta[i] * theta[i]
        g[i] = eta * (g[i] + lam * theta[i])
    return 0.5 * eta * (ss + lam * q), first


@kernel
def mlp_hessian_finish(data, first, H):
    """Add the prior's precision to the accumulated lower triangle of ``H``, mirror it.

    ``first`` True (nothing accumulated: no observations) clears the triangle first.
    """
    X, r, eta, lam, widths, general, P0, theta0 = data
    d = H.shape[0]
    if first:
        for i in range(d):
            for j in range(i + 1):
                H[i, j] = 0.0
    if general:
        for i in range(d):
            for j in range(i + 1):
                H[i, j] += P0[i, j]
        gauss_newton_finish(H, 0.0)
    else:
        gauss_newton_finish(H, eta * lam)


@kernel
def mlp_grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """Gradients and the mean Gauss-Newton matrix at the rows of ``thetas`` (M, d).

    ``G[m] = grad U(theta_m)``; with ``want_hessian``,
    ``H = eta mean_m J_m^T J_m + prior precision`` (full, symmetric; the prior precision is
    ``eta lam I`` by default, ``P0`` for the general prior), else ``H`` is untouched.
    """
    eta = data[2]
    M = thetas.shape[0]
    first = True
    for m in range(M):
        _, first = mlp_grad_at(data, thetas[m], want_hessian, eta / M, first, H, G[m],
                               scratch)
    if want_hessian:
        mlp_hessian_finish(data, first, H)


@kernel
def mlp_value(data, theta, scratch):
    """``U(theta)`` (forward passes only), including the constant ``eta/2 sum r^2``."""
    X, r, eta, lam, widths, general, P0, theta0 = data
    A, D, out, gtmp, J, pbuf = scratch
    n = X.shape[0]
    c = out.shape[0]
    ss = 0.0
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        ss = mlp_residuals(theta, X[c0:c0 + m], r[c0:c0 + m], widths, A, c, out[:m], ss)
    if general:
        return 0.5 * eta * ss + mlp_prior_general(theta, P0, theta0, gtmp, pbuf)
    q = 0.0
    for i in range(theta.shape[0]):
        q += theta[i] * theta[i]
    return 0.5 * eta * (ss + lam * q)


@kernel
def mlp_predict(data, theta, X, out, scratch):
    """Network outputs ``out`` (K,) for the rows of ``X`` (K, p), in chunks of ``c`` rows."""
    mlp_outputs(theta, X, data[4], scratch[0], scratch[2].shape[0], out)


@kernel
def mlp_jacobian(data, theta, X, out, J, scratch):
    """The full Jacobian ``J`` (n, d) and outputs ``out`` (n,) at the rows of ``X``."""
    widths = data[4]
    A, D = scratch[0], scratch[1]
    n, p = X.shape
    c = scratch[2].shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        mlp_forward(theta, Xc, widths, A, c, out[c0:c0 + m])
        mlp_sensitivities(theta, p, widths, A, D, c, m)
        mlp_jacobian_rows(Xc, widths, A, D, c, J[c0:c0 + m])


#: The potential's bodies (the interface of :mod:`.potential`): what generic steps close over.
POTENTIAL = Potential("mlp", mlp_grads_hessian, mlp_value, mlp_predict)
