"""Two-layer Bayesian neural network classifier (the OPVI paper, section 5.3) as potential bodies.

The OPVI paper's image-classification model: "a two-layer BNN model with 100 hidden variables,
with a sigmoid input layer and a softmax output layer" (MNIST there; the paper states no
prior). Here::

    a(x) = sigmoid(W_1 x + b_1)   (h,)       z(x) = W_2 a(x) + b_2   (K,)
    p(y = k | x, theta) = softmax(z(x))_k
    theta ~ N(0, I / alpha)                   (fixed prior precision alpha, default 1)

Flat parameter vector, ``d = h (p + 1) + K (h + 1)``::

    W_1 (h, p) row-major | b_1 (h) | W_2 (K, h) row-major | b_2 (K)

Potential with a likelihood weight ``w_l`` and a prior weight ``w_p`` (the mini-batch hook),
constants included (``w_l = w_p = 1``: ``-log p(y, theta | X)``)::

    U = w_l sum_s [logsumexp(z_s) - z_{s, y_s}] + w_p [alpha/2 |theta|^2 + d/2 log(2 pi/alpha)]

Gradient by back-propagation, with ``delta_s = softmax(z_s) - onehot(y_s)`` (K,) and
``g_s = (W_2^T delta_s) * a_s (1 - a_s)`` (h,)::

    dU/dW_2 = w_l sum_s delta_s a_s^T,   dU/db_2 = w_l sum_s delta_s
    dU/dW_1 = w_l sum_s g_s x_s^T,       dU/db_1 = w_l sum_s g_s       (+ w_p alpha theta)

Numerics: ``sigmoid`` through ``exp(-|z|)``, log-sum-exp around the row's maximum logit,
so every finite input gives finite values. No Hessian (``H`` never touched).

``data = (X, y, n_classes, hidden, alpha, w_l, w_p)``: rows ``X`` (n, p), labels ``y`` (n,)
float64 holding integers in ``[0, K)``, the sizes, the prior precision and the weights
(the model folds ``eta`` into both). ``scratch = (A, Z, Dh, gtmp)``: ``A``, ``Dh`` (R, c h),
``Z`` (R, c K), ``gtmp`` (R, d), one row per parameter vector (row ``m`` of ``thetas`` uses
``m % R``: with ``R >= M`` the rows are independent and can run in ``prange`` or one CUDA
thread each), ``c`` the chunk height. Products through :mod:`.linalg` (BLAS on the CPU).
"""

import math

from vits_ref.config import kernel

from .linalg import gemm_nn, gemm_nt, gemm_tn
from .potential import Potential

LOG_2PI = math.log(2.0 * math.pi)


@kernel
def classifier_views(theta, p, h, K):
    """``(W1 (h, p), b1 (h,), W2 (K, h), b2 (K,))``: views of ``theta`` (or a gradient)."""
    o1 = h * p
    o2 = o1 + h
    o3 = o2 + K * h
    return (theta[:o1].reshape((h, p)), theta[o1:o2], theta[o2:o3].reshape((K, h)),
            theta[o3:o3 + K])


@kernel
def sigmoid(z):
    """``1 / (1 + exp(-z))`` without overflow."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@kernel
def classifier_forward(theta, Xc, K, h, a, z):
    """Hidden activations ``a`` (m, h) and logits ``z`` (m, K) of the rows ``Xc`` (m, p)."""
    m, p = Xc.shape
    W1, b1, W2, b2 = classifier_views(theta, p, h, K)
    gemm_nt(Xc, W1, a)
    for s in range(m):
        for j in range(h):
            a[s, j] = sigmoid(a[s, j] + b1[j])
    gemm_nt(a, W2, z)
    for s in range(m):
        for k in range(K):
            z[s, k] += b2[k]


@kernel
def classifier_chunk(theta, Xc, K, h, A, Z):
    """Forward pass of the rows ``Xc`` (m, p) into scratch rows ``A`` (c h,), ``Z`` (c K,);
    returns the views ``a`` (m, h) and ``z`` (m, K) holding the activations and logits."""
    m = Xc.shape[0]
    a = A[:m * h].reshape((m, h))
    z = Z[:m * K].reshape((m, K))
    classifier_forward(theta, Xc, K, h, a, z)
    return a, z


@kernel
def classifier_softmax_chunk(theta, Xc, K, h, A, Z):
    """:func:`classifier_chunk`'s logits replaced by the class probabilities (m, K)."""
    z = classifier_chunk(theta, Xc, K, h, A, Z)[1]
    for s in range(z.shape[0]):
        softmax_row(z[s], K)
    return z


@kernel
def softmax_row(zr, K):
    """Replace the logits ``zr`` (K,) by their softmax; return their log-sum-exp."""
    top = zr[0]
    for k in range(1, K):
        if zr[k] > top:
            top = zr[k]
    tot = 0.0
    for k in range(K):
        e = math.exp(zr[k] - top)
        zr[k] = e
        tot += e
    for k in range(K):
        zr[k] /= tot
    return top + math.log(tot)


@kernel
def classifier_row(data, theta, want_grad, g, A, Z, Dh, gtmp):
    """``U(theta)`` for one parameter vector; ``g`` (d,) receives the gradient if asked.

    ``A``, ``Dh`` (c h,), ``Z`` (c K,), ``gtmp`` (d,): one row of the scratch.
    """
    X, y, K, h, alpha, wl, wp = data
    n, p = X.shape
    d = theta.shape[0]
    c = Z.shape[0] // K
    if want_grad:
        for i in range(d):
            g[i] = 0.0
    nll = 0.0
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        a, z = classifier_chunk(theta, Xc, K, h, A, Z)
        for s in range(m):
            zr = z[s]
            lab = int(y[c0 + s])
            zy = zr[lab]
            nll += softmax_row(zr, K) - zy
            zr[lab] -= 1.0  # delta = softmax - onehot
        if want_grad:
            W1, b1, W2, b2 = classifier_views(theta, p, h, K)
            gW1, gb1, gW2, gb2 = classifier_views(gtmp, p, h, K)
            dh = Dh[:m * h].reshape((m, h))
            gemm_tn(z, a, gW2)
            gemm_nn(z, W2, dh)
            for k in range(K):
                gb2[k] = 0.0
            for j in range(h):
                gb1[j] = 0.0
            for s in range(m):
                for k in range(K):
                    gb2[k] += z[s, k]
                for j in range(h):
                    aj = a[s, j]
                    v = dh[s, j] * aj * (1.0 - aj)
                    dh[s, j] = v
                    gb1[j] += v
            gemm_tn(dh, Xc, gW1)
            for i in range(d):
                g[i] += gtmp[i]
    sq = 0.0
    for i in range(d):
        sq += theta[i] * theta[i]
    if want_grad:
        pa = wp * alpha
        for i in range(d):
            g[i] = wl * g[i] + pa * theta[i]
    return wl * nll + wp * (0.5 * alpha * sq + 0.5 * d * (LOG_2PI - math.log(alpha)))


@kernel
def grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """The potential interface: ``G[m] = grad U(thetas[m])``; ``H`` is never touched."""
    A, Z, Dh, gtmp = scratch
    R = A.shape[0]
    for m in range(thetas.shape[0]):
        k = m % R
        classifier_row(data, thetas[m], True, G[m], A[k], Z[k], Dh[k], gtmp[k])


@kernel
def value(data, theta, scratch):
    """The potential interface: ``U(theta)`` (constants included)."""
    A, Z, Dh, gtmp = scratch
    return classifier_row(data, theta, False, gtmp[0], A[0], Z[0], Dh[0], gtmp[0])


@kernel
def classifier_probs(data, theta, X, P, scratch):
    """Class probabilities ``P`` (n, K) at the rows of ``X`` (n, p), ``c`` rows at a time."""
    K, h = data[2], data[3]
    A, Z = scratch[0][0], scratch[1][0]
    c = Z.shape[0] // K
    n = X.shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        z = classifier_softmax_chunk(theta, X[c0:c0 + m], K, h, A, Z)
        for s in range(m):
            for k in range(K):
                P[c0 + s, k] = z[s, k]


@kernel
def predict(data, theta, X, out, scratch):
    """``out[s] = p(y = K - 1 | X[s])``: the last class's probability (for ``K = 2`` the
    positive class), a score monotone in the logit margin of that class."""
    K, h = data[2], data[3]
    A, Z = scratch[0][0], scratch[1][0]
    c = Z.shape[0] // K
    n = X.shape[0]
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        z = classifier_softmax_chunk(theta, X[c0:c0 + m], K, h, A, Z)
        for s in range(m):
            out[c0 + s] = z[s, K - 1]


#: The classifier potential's bodies (the interface of :mod:`.potential`).
POTENTIAL = Potential("bnn_classifier", grads_hessian, value, predict)
