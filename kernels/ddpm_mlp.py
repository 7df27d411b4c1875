r"""The learned DDPM prior's per-stage regressors ``eps_t``: bodies for sampling and training.

Kveton et al. (2024), appendix B: one regressor ``eps_t(.; psi_t)`` per stage
``t = 1..T`` of the diffusion, "a 2-layer neural network with ReLU activations", trained
on the forward process ``s_t = sqrt(abar_t) s_0 + sqrt(1 - abar_t) eps``,
``eps ~ N(0, I_d)``, with the squared loss ``E ||eps - eps_t(s_t)||^2`` (eq. 14). Each stage
has its own parameters, so the T problems are independent (the CPU driver trains them in
``prange`` over stages). We read "2-layer" as two hidden ReLU layers (Ho et al.'s and
our reading; one hidden layer is ``hidden=(h,)``-shaped and not offered)::

    a_1 = relu(s W1 + b1)      (h1,)
    a_2 = relu(a_1 W2 + b2)    (h2,)
    eps_t(s) = a_2 W3 + b3     (d,)              relu'(0) := 0

(row vectors times input-major weights). **Layout** (the ``eps_params`` tuple of
:class:`vits_ref.diffusion.DiffusionPrior`), every array with a leading stage axis of
length T indexed by ``t - 1``::

    params = (W1 (T, d, h1), b1 (T, h1), W2 (T, h1, h2), b2 (T, h2), W3 (T, h2, d), b3 (T, d))

Input-major (``W[i, j]``: input ``i`` to output ``j``) so that the one-point forward pass
the chains call per stage runs as axpy loops along contiguous rows, which vectorise
without fast-math (``out += x_i W[i, :]``); output-major weights make it dot products,
whose serial sums do not (measured: 3x slower per stage than NumPy batched over 1000
draws, instead of faster).

**Bodies for the reverse chain** (the contract of ``DiffusionPriorBase.eps_bodies``):

``eps(params, t, s, out, scratch)``
    ``out = eps_t(s)`` for the 1-based stage ``t`` and one point ``s`` (d,);
``vjp(params, t, s, v, out, scratch)``
    ``out = J^T v`` with ``J = d eps_t / d s`` at ``s``:
    ``J^T v = W1 D1 W2 D2 W3 v`` (input-major ``W``), ``D_l = diag(1[a_l > 0])`` (DPS
    needs it).

``scratch = (a1 (h1,), a2 (h2,), g1 (h1,), g2 (h2,))`` (:func:`eps_scratch_shapes`).

**Training** (one stage; the T stages are independent). A mini-batch of ``B`` inputs
``X`` (B, d) and targets ``E`` (B, d) has the loss

.. math::

    \ell = \frac1B \sum_{b=1}^B \|\epsilon_t(x_b) - e_b\|^2

(the sum over coordinates, the mean over the batch: eq. 14's empirical average), and, with
the rows of the activations ``A_1``, ``A_2`` and outputs ``Y``, the hand-written gradients
(back-propagation)::

    A1 = relu(X W1 + b1),  A2 = relu(A1 W2 + b2),  Y = A2 W3 + b3
    D3 = 2/B (Y - E)                          (B, d)
    dW3 = A2^T D3,  db3 = 1^T D3
    D2 = (D3 W3^T) * 1[A2 > 0],   dW2 = A1^T D2,  db2 = 1^T D2
    D1 = (D2 W2^T) * 1[A1 > 0],   dW1 = X^T D1,   db1 = 1^T D1

then one Adam step (Kingma & Ba 2015, Algorithm 1) on every array of the stage:
``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``,
``p <- p - lr (m / (1 - b1^k)) / (sqrt(v / (1 - b2^k)) + eps_adam)`` at the stage's k-th step.

The training inputs are **standardised per stage**: the network of stage t sees
``x = (s_t - shift_t) * inv_scale_t`` with ``shift_t = sqrt(abar_t) mean(s_0)`` and
``inv_scale_t = 1/sqrt(abar_t var(s_0) + 1 - abar_t)`` (per coordinate: the mean and the
standard deviation of ``s_t`` under the forward process). This is an affine map before
``W1``, folded into ``W1`` and ``b1`` after training (:func:`fold_input_scaling`), so the
chain's bodies above see the raw ``s`` and nothing else changes.

An epoch of stage t (:func:`train_stage_epoch`) runs over a permutation ``idx`` (N,) of the
training samples in mini-batches of ``batch`` rows (the last one shorter when ``batch``
does not divide N), pairing row ``j`` of the permutation with the pre-drawn noise
``noise[j]`` (N, d). The random numbers are drawn by the caller, per stage and epoch, so
the result does not depend on the number of threads (and a NumPy reference can consume
the same numbers: :mod:`vits_ref.reference.ddpm`).

The training's batch products go through :mod:`.linalg`'s ``gemm_*`` (BLAS on the CPU,
loops on CUDA); everything else, the one-point passes included, is loops. Nothing
allocates: the training scratch is
``(X (B, d), E (B, d), A1 (B, h1), A2 (B, h2), Y (B, d), D1 (B, h1), D2 (B, h2))`` and
the gradient, Adam ``m`` and ``v`` tuples have the shapes of one stage's parameters.
"""

import math

from vits_ref.config import kernel

from .diffusion_chain import EpsBodies
from .linalg import gemm_nn, gemm_nt, gemm_tn, gemv_loops

# --------------------------------------------------------------------------- layers


@kernel
def _dense(W, b, x, out):
    """``out = x W + b`` with input-major ``W`` (n_in, n_out): axpy loops along its rows."""
    n_in, n_out = W.shape
    for j in range(n_out):
        out[j] = b[j]
    for i in range(n_in):
        xi = x[i]
        for j in range(n_out):
            out[j] += xi * W[i, j]


@kernel
def _relu(x):
    for j in range(x.shape[0]):
        if not x[j] > 0.0:
            x[j] = 0.0


@kernel
def _mask(x, a):
    """``x *= 1[a > 0]`` (the ReLU's derivative, ``relu'(0) := 0``)."""
    for i in range(x.shape[0]):
        if not a[i] > 0.0:
            x[i] = 0.0


# --------------------------------------------------------------------------- the chain's bodies


@kernel
def eps(params, t, s, out, scratch):
    """``out = eps_t(s)``: the stage-``t`` network (1-based ``t``) at one point ``s`` (d,)."""
    W1, b1, W2, b2, W3, b3 = params
    a1, a2 = scratch[0], scratch[1]
    k = t - 1
    _dense(W1[k], b1[k], s, a1)
    _relu(a1)
    _dense(W2[k], b2[k], a1, a2)
    _relu(a2)
    _dense(W3[k], b3[k], a2, out)


@kernel
def vjp(params, t, s, v, out, scratch):
    """``out = J^T v``, ``J = d eps_t/d s`` at ``s`` (the forward pass is recomputed)."""
    W1, b1, W2, b2, W3, b3 = params
    a1, a2, g1, g2 = scratch
    k = t - 1
    _dense(W1[k], b1[k], s, a1)
    _relu(a1)
    _dense(W2[k], b2[k], a1, a2)
    _relu(a2)
    # back through the layers: input-major W makes each transposed layer W v
    gemv_loops(W3[k], v, g2)
    _mask(g2, a2)
    gemv_loops(W2[k], g2, g1)
    _mask(g1, a1)
    gemv_loops(W1[k], g1, out)


#: The learned prior's noise regressor for the compiled chains
#: (:class:`vits_ref.diffusion.DiffusionPrior`'s ``eps_bodies``).
MLP = EpsBodies("ddpm_mlp", eps, vjp)


def eps_scratch_shapes(dim, hidden):
    """Shapes of the ``eps``/``vjp`` scratch tuple: ``((h1,), (h2,), (h1,), (h2,))``."""
    h1, h2 = hidden
    return ((h1,), (h2,), (h1,), (h2,))


# --------------------------------------------------------------------------- training


@kernel
def _bias_relu_rows(A, b):
    """``A[r] = relu(A[r] + b)`` for every row."""
    for r in range(A.shape[0]):
        for j in range(A.shape[1]):
            z = A[r, j] + b[j]
            A[r, j] = z if z > 0.0 else 0.0


@kernel
def _mask_rows(D, A):
    """``D *= 1[A > 0]``."""
    for r in range(D.shape[0]):
        for j in range(D.shape[1]):
            if not A[r, j] > 0.0:
                D[r, j] = 0.0


@kernel
def _col_sums(D, out):
    for j in range(out.shape[0]):
        out[j] = 0.0
    for r in range(D.shape[0]):
        for j in range(out.shape[0]):
            out[j] += D[r, j]


@kernel
def batch_loss_grads(P, X, E, scr, G):
    """Loss and gradients of one stage on one mini-batch.

    ``P = (W1, b1, W2, b2, W3, b3)`` one stage's parameters (no stage axis), ``X`` and
    ``E`` (B, d) the inputs and targets, ``scr = (A1 (B, h1), A2 (B, h2), Y (B, d),
    D1 (B, h1), D2 (B, h2))`` (exactly B rows), ``G`` the gradient tuple (``P``'s shapes).
    Returns ``l = 1/B sum_b |eps(x_b) - e_b|^2``; the formulas are in the module docstring.
    """
    W1, b1, W2, b2, W3, b3 = P
    A1, A2, Y, D1, D2 = scr
    gW1, gb1, gW2, gb2, gW3, gb3 = G
    B, d = X.shape
    gemm_nn(X, W1, A1)
    _bias_relu_rows(A1, b1)
    gemm_nn(A1, W2, A2)
    _bias_relu_rows(A2, b2)
    gemm_nn(A2, W3, Y)
    loss = 0.0
    c = 2.0 / B
    for r in range(B):
        for i in range(d):
            e = Y[r, i] + b3[i] - E[r, i]
            loss += e * e
            Y[r, i] = c * e  # Y becomes D3
    gemm_tn(A2, Y, gW3)
    _col_sums(Y, gb3)
    gemm_nt(Y, W3, D2)
    _mask_rows(D2, A2)
    gemm_tn(A1, D2, gW2)
    _col_sums(D2, gb2)
    gemm_nt(D2, W2, D1)
    _mask_rows(D1, A1)
    gemm_tn(X, D1, gW1)
    _col_sums(D1, gb1)
    return loss / B


@kernel
def _adam_2d(p, g, m, v, lr, beta1, beta2, c1, c2, adam_eps):
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            gij = g[i, j]
            m[i, j] = beta1 * m[i, j] + (1.0 - beta1) * gij
            v[i, j] = beta2 * v[i, j] + (1.0 - beta2) * gij * gij
            p[i, j] -= lr * (m[i, j] / c1) / (math.sqrt(v[i, j] / c2) + adam_eps)


@kernel
def _adam_1d(p, g, m, v, lr, beta1, beta2, c1, c2, adam_eps):
    for i in range(p.shape[0]):
        gi = g[i]
        m[i] = beta1 * m[i] + (1.0 - beta1) * gi
        v[i] = beta2 * v[i] + (1.0 - beta2) * gi * gi
        p[i] -= lr * (m[i] / c1) / (math.sqrt(v[i] / c2) + adam_eps)


@kernel
def adam_update(P, G, M, V, k, lr, beta1, beta2, adam_eps):
    """One Adam step (the ``k``-th, 1-based, for the bias corrections) on every array of
    one stage: ``P``, ``G``, ``M``, ``V`` are tuples of the stage's six arrays."""
    c1 = 1.0 - beta1 ** k
    c2 = 1.0 - beta2 ** k
    _adam_2d(P[0], G[0], M[0], V[0], lr, beta1, beta2, c1, c2, adam_eps)
    _adam_1d(P[1], G[1], M[1], V[1], lr, beta1, beta2, c1, c2, adam_eps)
    _adam_2d(P[2], G[2], M[2], V[2], lr, beta1, beta2, c1, c2, adam_eps)
    _adam_1d(P[3], G[3], M[3], V[3], lr, beta1, beta2, c1, c2, adam_eps)
    _adam_2d(P[4], G[4], M[4], V[4], lr, beta1, beta2, c1, c2, adam_eps)
    _adam_1d(P[5], G[5], M[5], V[5], lr, beta1, beta2, c1, c2, adam_eps)


@kernel
def train_stage_epoch(P, G, M, V, step0, ca, cb, shift, inv_scale, s0, idx, noise, batch,
                      lr, beta1, beta2, adam_eps, scr):
    """One epoch of one stage: mini-batches of the permutation ``idx``, Adam steps.

    ``P``, ``G``, ``M``, ``V``: the stage's parameters, gradient buffer and Adam moments
    (tuples of six arrays); ``step0``: Adam steps done before this epoch; ``ca =
    sqrt(abar_t)``, ``cb = sqrt(1 - abar_t)``; ``shift``, ``inv_scale`` (d,): the stage's
    input standardisation; ``s0`` (N, d) the training samples; ``idx`` (N,) int64 a
    permutation of ``0..N-1``; ``noise`` (N, d) the forward-process noise, row ``j`` paired
    with ``s0[idx[j]]``; ``scr = (X, E, A1, A2, Y, D1, D2)`` with ``batch`` rows. Returns
    the mean loss over the epoch (each batch's loss weighted by its size).
    """
    X, E, A1, A2, Y, D1, D2 = scr
    N = idx.shape[0]
    d = s0.shape[1]
    nb = (N + batch - 1) // batch
    total = 0.0
    for j in range(nb):
        lo = j * batch
        hi = min(lo + batch, N)
        B = hi - lo
        for r in range(B):
            n = idx[lo + r]
            for i in range(d):
                e = noise[lo + r, i]
                X[r, i] = (ca * s0[n, i] + cb * e - shift[i]) * inv_scale[i]
                E[r, i] = e
        bscr = (A1[:B], A2[:B], Y[:B], D1[:B], D2[:B])
        loss = batch_loss_grads(P, X[:B], E[:B], bscr, G)
        adam_update(P, G, M, V, step0 + j + 1, lr, beta1, beta2, adam_eps)
        total += loss * B
    return total / N


def n_batches(n, batch):
    """Mini-batches (Adam steps) per stage and epoch: ``ceil(n / batch)``."""
    return -(-n // batch)


@kernel
def fold_input_scaling(params, shift, inv_scale):
    """Fold the per-stage input standardisation into the first layer, in place.

    ``((s - shift) * inv_scale) W1 + b1 = s W1' + b1'`` with
    ``W1'[i, j] = inv_scale[i] W1[i, j]`` and ``b1' = b1 - shift W1'``; ``shift`` and
    ``inv_scale`` are (T, d).
    """
    W1, b1 = params[0], params[1]
    T, d, h1 = W1.shape
    for k in range(T):
        for j in range(h1):
            acc = 0.0
            for i in range(d):
                w = inv_scale[k, i] * W1[k, i, j]
                W1[k, i, j] = w
                acc += shift[k, i] * w
            b1[k, j] -= acc
