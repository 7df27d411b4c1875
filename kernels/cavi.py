"""Mean-field CAVI for a mixture of linear-Gaussian experts, and VTS's Thompson draws.

Variational Thompson sampling (Urteaga & Wiggins, section 3; docs/algorithms.md
section 4) models each arm's reward as ``y ~ sum_k pi_k N(x w_k, s2_k)`` with priors
``pi ~ Dir(gamma0)`` and ``(w_k, s2_k) ~ NIG(u0_k, V0_k, alpha0_k, beta0_k)``, i.e.
``w | s2 ~ N(u0, s2 V0)``, ``s2 ~ InvGamma(alpha0, beta0)``, and fits the mean-field
family ``q(Z) q(pi) prod_k q(w_k, s2_k)`` by coordinate ascent (CAVI):

E-step (eq. 12), for every observation ``t`` of the arm and component ``k``::

    log rho_tk = digamma(gamma_k) - digamma(sum_j gamma_j) - 1/2 log(2 pi)
                 - 1/2 (log beta_k - digamma(alpha_k))
                 - 1/2 (x_t^T V_k x_t + (y_t - x_t u_k)^2 alpha_k / beta_k)
    r_tk = rho_tk / sum_j rho_tj                       (a log-sum-exp, never overflows)

M-step (eq. 13), from the responsibility-weighted statistics ``N_k = sum_t r_tk``,
``Sxx_k = sum_t r_tk x_t x_t^T``, ``Sxy_k = sum_t r_tk y_t x_t``, ``Syy_k = sum_t r_tk y_t^2``::

    gamma_k = gamma0_k + N_k,     P_k = inv(V_k) = P0_k + Sxx_k,
    u_k = inv(P_k) (P0_k u0_k + Sxy_k),
    alpha_k = alpha0_k + N_k / 2,  beta_k = beta0_k + 1/2 (Syy_k + u0_k^T P0_k u0_k - u_k^T P_k u_k)

The evidence lower bound comes with the E-step at no extra sweep of the history (an
iteration reads the history to form ``log rho``, normalises, and accumulates the
M-step's statistics)::

    ELBO = sum_t logsumexp_k(log rho_tk) - KL(q(pi) || p(pi))
           - sum_k KL(q(w_k, s2_k) || p(w_k, s2_k))

``logsumexp_k log rho_tk = max_r sum_k r_k log rho_tk + H(r)`` is the ELBO's data term at
the optimal responsibilities, so iteration ``i`` records ``ELBO(r_i, theta_{i-1})`` (E-step
``i`` with the factors of M-step ``i - 1``): a non-decreasing sequence, since each half
step is an exact coordinate maximisation. The KL terms (no sampling) are::

    KL(Dir(g) || Dir(g0)) = lgamma(G) - sum lgamma(g_k) - lgamma(G0) + sum lgamma(g0_k)
                            + sum (g_k - g0_k)(digamma(g_k) - digamma(G))
    KL(NIG || NIG0) = (a - a0) digamma(a) - lgamma(a) + lgamma(a0) + a0 (log b - log b0)
                      + a (b0 - b) / b
                      + 1/2 [tr(P0 V) + (a/b) (u - u0)^T P0 (u - u0) - d - log det P0 + log det P]

(the inverse-gamma part is the KL of the Gamma laws of ``1/s2``; the Gaussian part is
averaged over ``s2`` with ``E[1/s2] = a/b``).

State. ``P_k`` is kept as its lower Cholesky factor ``L_k``: the E-step's ``x^T V_k x`` is
``|L_k^-1 x|^2`` (forward substitution) below :data:`BLAS_MIN_DIM`, and from there the
rows of ``X V_k`` (one product, ``V_k`` from ``L_k`` by 2d triangular solves); a Thompson
draw is ``w = u_k + sqrt(s2) L_k^-T z``. With ``K = 1`` every responsibility is 1, the update is
the exact NIG posterior and :func:`nig_add` keeps it by one rank-one update of ``L``, O(d^2)
per observation, without the history. With ``K > 1`` the responsibilities of *all* past
observations change whenever the factors do, so every iteration recomputes them and the
weighted statistics from the arm's history (O(n K d^2)); only the factors are carried
from round to round (the warm start).

Randomness. Thompson draws need Gamma variates of changing shape (``s2``, the Dirichlet
weights), which cannot be pre-drawn as plain normals. The bodies carry an explicit
xoroshiro128+ state (two uint64 words, Blackman & Vigna 2018) and draw from it:
uniforms (53 bits), normals (Box-Muller), Gamma (Marsaglia & Tsang 2000, with the
``U^(1/a)`` boost below shape 1). Integer arithmetic, so the CPU drivers, the CUDA
drivers and plain Python (the CUDA simulator) draw the same numbers from the same state.

Everything here is a body (:func:`vits_ref.config.kernel`): loops on arrays, scratch
passed in, no allocation. Tuples (one arm's slices):

``prior = (gamma0 (K,), u0 (K, d), P0 (K, d, d), C0 (K, d, d), alpha0 (K,), beta0 (K,),
b0 (K, d), c0 (K,), ldP0 (K,))`` with ``P0 = inv(V0)``, ``C0`` its lower Cholesky factor,
``b0 = P0 u0``, ``c0 = u0^T P0 u0``, ``ldP0 = log det P0``;
``fac = (gamma (K,), u (K, d), L (K, d, d), alpha (K,), beta (K,))``;
``st = (N (K,), Sxy (K, d), Sxx (K, d, d), Syy (K,))``;
``scr = (dv (4, d), kv (4, K), M (d, d), kd (K, d), kdd (K, d, d))``; the E-step also
takes ``W``, scratch as large as the history ``X``.
"""

import math

import numpy as np

from vits_ref.config import kernel

from .bandit import instant_regret
from .linalg import chol_rank1_update, cholesky, gemm_nn, gemm_tn, solve_lower, solve_lower_t

LOG_2PI = math.log(2.0 * math.pi)

#: Scoring rules of the arms (Urteaga & Wiggins, eqs. 15, 16, 17).
SAMPLE_Z, SAMPLE_PI, EXPECTED_PI = 0, 1, 2

# --------------------------------------------------------------------------- special functions


# a function of its own, not inlined: six call sites (E-step constants, KL), each an IR
# copy that Numba's inliner builds and deep-copies anew
@kernel
def digamma(x):
    """``psi(x) = d/dx log Gamma(x)`` for ``x > 0`` (NaN otherwise).

    The recurrence ``psi(x) = psi(x + 1) - 1/x`` lifts ``x`` to at least 10, where the
    asymptotic series ``log x - 1/(2x) - sum_n B_2n / (2n x^2n)`` (seven terms, to
    ``x^-14``; the first omitted term is below 1e-18 there) is exact to rounding. Numba
    cannot call ``scipy.special.digamma``; tests compare with it (1e-13).
    """
    if not x > 0.0:
        return math.nan
    if math.isinf(x):
        return math.inf
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    z = inv * inv
    series = z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z * (
        1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z / 12.0))))))
    return acc + math.log(x) - 0.5 * inv - series


# --------------------------------------------------------------------------- random numbers
# xoroshiro128+ (Blackman & Vigna): 64-bit words, shifts as uint64 constants so that Numba
# keeps every operation unsigned (mixing uint64 with int64 would promote to float64).
_S11 = np.uint64(11)
_S16 = np.uint64(16)
_S24 = np.uint64(24)
_S27 = np.uint64(27)
_S37 = np.uint64(37)
_S40 = np.uint64(40)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53


@kernel(inline=True)
def next_u64(s):
    """The next 64-bit output of the xoroshiro128+ state ``s`` (uint64 (2,)), advanced in place."""
    s0 = s[0]
    s1 = s[1]
    result = s0 + s1
    s1 ^= s0
    s[0] = ((s0 << _S24) | (s0 >> _S40)) ^ s1 ^ (s1 << _S16)
    s[1] = (s1 << _S37) | (s1 >> _S27)
    return result


@kernel(inline=True)
def uniform(s):
    """A uniform in the open interval (0, 1): the top 53 bits, offset by half a step."""
    return (float(next_u64(s) >> _S11) + 0.5) * _TWO_M53


@kernel(inline=True)
def normal(s):
    """A standard normal by Box-Muller (two uniforms, the sine half is not kept)."""
    u1 = uniform(s)
    u2 = uniform(s)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


# a function of its own, not inlined: three call sites in the Thompson score, each with
# its normal and uniform draws inlined again
@kernel
def gamma_variate(s, a):
    """A Gamma(a, 1) variate (Marsaglia & Tsang 2000; ``a < 1``: ``G(a + 1) U^(1/a)``).

    Acceptance is above 95% per trial for ``a >= 1``, so about 2.1 normals' worth of
    uniforms and one more uniform per draw.
    """
    boost = 1.0
    if a < 1.0:
        boost = uniform(s) ** (1.0 / a)
        a += 1.0
    dd = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * dd)
    while True:
        x = normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(s)
        if math.log(u) < 0.5 * x * x + dd - dd * v + dd * math.log(v):
            return dd * v * boost


# --------------------------------------------------------------------------- the factors


@kernel(inline=True)
def init_factors(prior, fac, st):
    """Factors at the prior (Algorithm 1's initialisation) and zero statistics."""
    gamma0, u0, C0, alpha0, beta0 = prior[0], prior[1], prior[3], prior[4], prior[5]
    gamma, u, L, alpha, beta = fac[0], fac[1], fac[2], fac[3], fac[4]
    N, Sxy, Sxx, Syy = st[0], st[1], st[2], st[3]
    K, d = u.shape
    for k in range(K):
        gamma[k] = gamma0[k]
        alpha[k] = alpha0[k]
        beta[k] = beta0[k]
        N[k] = 0.0
        Syy[k] = 0.0
        for i in range(d):
            u[k, i] = u0[k, i]
            Sxy[k, i] = 0.0
            for j in range(d):
                L[k, i, j] = C0[k, i, j]
                Sxx[k, i, j] = 0.0


@kernel(inline=True)
def _solve_mean(k, prior, fac, st, dv):
    """``u_k = inv(P_k) b_k``, ``b_k = P0 u0 + Sxy`` (two triangular solves with ``L_k``);
    then ``alpha_k``, ``beta_k``, ``gamma_k`` from the statistics. ``dv``: (4, d) scratch."""
    gamma0, alpha0, beta0, b0, c0 = prior[0], prior[4], prior[5], prior[6], prior[7]
    gamma, u, L, alpha, beta = fac[0], fac[1], fac[2], fac[3], fac[4]
    N, Sxy, Syy = st[0], st[1], st[3]
    d = u.shape[1]
    b = dv[0]
    v = dv[1]
    for i in range(d):
        b[i] = b0[k, i] + Sxy[k, i]
    solve_lower(L[k], b, v)
    solve_lower_t(L[k], v, u[k])
    uPu = 0.0  # u^T P u = u^T b, since P u = b
    for i in range(d):
        uPu += u[k, i] * b[i]
    gamma[k] = gamma0[k] + N[k]
    alpha[k] = alpha0[k] + 0.5 * N[k]
    # Syy + c0 - uPu = sum r (y - x u)^2 + (u - u0)^T P0 (u - u0) >= 0; clamp the rounding
    extra = Syy[k] + c0[k] - uPu
    if extra < 0.0:
        extra = 0.0
    beta[k] = beta0[k] + 0.5 * extra


@kernel
def mstep(prior, fac, st, scr):
    """Eq. (13) for every component from the statistics ``st``; False if a precision is not
    positive definite (only with non-finite statistics)."""
    P0 = prior[2]
    L = fac[2]
    Sxx = st[2]
    dv, M = scr[0], scr[2]
    K, d = L.shape[0], L.shape[1]
    for k in range(K):
        for i in range(d):
            for j in range(d):
                M[i, j] = P0[k, i, j] + Sxx[k, i, j]
        if not cholesky(M, L[k]):
            return False
        _solve_mean(k, prior, fac, st, dv)
    return True


@kernel(inline=True)
def nig_add(x, y, prior, fac, st, scr):
    """One observation into the exact NIG posterior (``K = 1``, responsibility 1).

    ``L L^T <- L L^T + x x^T`` by a rank-one update, the statistics by ``x``, ``y``, then
    the mean and ``alpha``, ``beta``, ``gamma``: O(d^2), no history. Returns False if the
    state became non-finite.
    """
    N, Sxy, Sxx, Syy = st[0], st[1], st[2], st[3]
    L = fac[2]
    dv = scr[0]
    d = x.shape[0]
    N[0] += 1.0
    Syy[0] += y * y
    for i in range(d):
        Sxy[0, i] += y * x[i]
        for j in range(d):
            Sxx[0, i, j] += x[i] * x[j]
    chol_rank1_update(L[0], x, dv[2])
    _solve_mean(0, prior, fac, st, dv)
    return math.isfinite(fac[4][0]) and math.isfinite(fac[1][0, 0])


#: From this dimension on, the E-step's O(n d^2) products go through
#: :func:`~vits_ref.kernels.linalg.gemm_nn`/``gemm_tn`` (BLAS on the CPU, loops on CUDA).
#: Measured per iteration (K = 2, one thread): 1.6x faster than the loops at d = 6 to 10,
#: about even at d = 4, slower at d <= 3, where the calls' overhead dominates.
BLAS_MIN_DIM = 4


@kernel(inline=True)
def _estep_constants(fac, st, scr):
    """Per component: ``const_k`` (eq. 12 without the observation's terms), ``alpha/beta``
    and ``1/L_k,ii`` into the scratch; the statistics zeroed."""
    gamma, L, alpha, beta = fac[0], fac[2], fac[3], fac[4]
    N, Sxy, Sxx, Syy = st[0], st[1], st[2], st[3]
    kv, inv_diag = scr[1], scr[3]
    K, d = L.shape[0], L.shape[1]
    const = kv[0]
    prec = kv[1]
    gsum = 0.0
    for k in range(K):
        gsum += gamma[k]
    psi_sum = digamma(gsum)
    for k in range(K):
        const[k] = (digamma(gamma[k]) - psi_sum - 0.5 * LOG_2PI
                    - 0.5 * (math.log(beta[k]) - digamma(alpha[k])))
        prec[k] = alpha[k] / beta[k]
        for i in range(d):  # multiplications in the pass, not divisions
            inv_diag[k, i] = 1.0 / L[k, i, i]
        N[k] = 0.0
        Syy[k] = 0.0
        for i in range(d):
            Sxy[k, i] = 0.0
            for j in range(d):
                Sxx[k, i, j] = 0.0


@kernel(inline=True)
def _normalise(n, K, resp, lr):
    """Rows of ``resp[:n]`` hold ``log rho_tk``: turn them into responsibilities and return
    ``sum_t logsumexp_k log rho_tk``. The log-sum-exp is taken around the largest term,
    whose exponential is 1: ``K - 1`` exponentials and a ``log1p`` per observation (exp
    and log are most of the small-d pass's time)."""
    total = 0.0
    for t in range(n):
        kmax = 0
        for k in range(1, K):
            if resp[t, k] > resp[t, kmax]:
                kmax = k
        mx = resp[t, kmax]
        s = 0.0
        for k in range(K):
            if k != kmax:
                e = math.exp(resp[t, k] - mx)
                lr[k] = e
                s += e
        lr[kmax] = 1.0
        total += mx + math.log1p(s)
        inv_s = 1.0 / (1.0 + s)
        for k in range(K):
            resp[t, k] = lr[k] * inv_s
    return total


@kernel
def estep(X, y, n, prior, fac, st, resp, W, scr):
    """Eq. (12) on the first ``n`` rows of the history, and the M-step's statistics.

    Writes the responsibilities into ``resp[:n]`` and the weighted statistics
    ``N, Sxy, Sxx, Syy`` into ``st``; returns ``sum_t logsumexp_k log rho_tk`` (the ELBO's
    data term). ``W`` (at least (n, d)) is scratch for the products of the BLAS path
    (``d >= BLAS_MIN_DIM``): ``X V_k`` for the quadratic forms ``x^T V_k x``, and
    ``r_k * X`` for ``Sxx_k = (r_k X)^T X``. Below it, every ``x^T V_k x`` is a forward
    substitution ``|L_k^-1 x|^2`` and the statistics are accumulated in loops.
    """
    u, L = fac[1], fac[2]
    N, Sxy, Sxx, Syy = st[0], st[1], st[2], st[3]
    dv, kv, inv_diag, Vs = scr[0], scr[1], scr[3], scr[4]
    K, d = u.shape
    const = kv[0]
    prec = kv[1]
    v = dv[0]
    _estep_constants(fac, st, scr)
    blas = d >= BLAS_MIN_DIM
    if blas:
        for k in range(K):
            _covariance(L[k], Vs[k], dv)
    # log rho_tk into resp, component by component
    for k in range(K):
        if blas:
            gemm_nn(X[:n], Vs[k], W[:n])
        for t in range(n):
            q = 0.0
            m = 0.0
            if blas:
                for i in range(d):
                    q += W[t, i] * X[t, i]
                    m += X[t, i] * u[k, i]
            else:
                for i in range(d):  # forward substitution, q = |L_k^-1 x|^2
                    s = X[t, i]
                    for j in range(i):
                        s -= L[k, i, j] * v[j]
                    v[i] = s * inv_diag[k, i]
                    q += v[i] * v[i]
                    m += X[t, i] * u[k, i]
            res = y[t] - m
            resp[t, k] = const[k] - 0.5 * (q + res * res * prec[k])
    total = _normalise(n, K, resp, kv[2])
    # the statistics, component by component (scalar sums stay in registers)
    for k in range(K):
        nk = 0.0
        syy = 0.0
        for t in range(n):
            r = resp[t, k]
            nk += r
            ry = r * y[t]
            syy += ry * y[t]
            for i in range(d):
                Sxy[k, i] += ry * X[t, i]
            if blas:
                for i in range(d):
                    W[t, i] = r * X[t, i]
            else:
                for i in range(d):
                    rxi = r * X[t, i]
                    for j in range(i + 1):  # lower triangle; mirrored below
                        Sxx[k, i, j] += rxi * X[t, j]
        N[k] = nk
        Syy[k] = syy
        if blas and n > 0:
            gemm_tn(W[:n], X[:n], Sxx[k])
        for i in range(d):
            for j in range(i + 1, d):
                Sxx[k, i, j] = Sxx[k, j, i]
    return total


@kernel(inline=True)
def _covariance(L, V, dv):
    """``V = inv(L L^T)``, column by column (two triangular solves each); ``dv`` (>= 2, d)."""
    d = L.shape[0]
    e = dv[1]
    c = dv[2]
    for j in range(d):
        for i in range(d):
            e[i] = 1.0 if i == j else 0.0
        solve_lower(L, e, c)
        solve_lower_t(L, c, c)
        for i in range(d):
            V[i, j] = c[i]


@kernel(inline=True)
def kl_divergence(prior, fac, scr):
    """``KL(q(pi) || p(pi)) + sum_k KL(q(w_k, s2_k) || p(w_k, s2_k))`` (module docstring)."""
    gamma0, u0, P0, C0 = prior[0], prior[1], prior[2], prior[3]
    alpha0, beta0, ldP0 = prior[4], prior[5], prior[8]
    gamma, u, L, alpha, beta = fac[0], fac[1], fac[2], fac[3], fac[4]
    dv = scr[0]
    K, d = u.shape
    gs = 0.0
    g0s = 0.0
    for k in range(K):
        gs += gamma[k]
        g0s += gamma0[k]
    psi_gs = digamma(gs)
    kl = math.lgamma(gs) - math.lgamma(g0s)
    for k in range(K):
        kl += (math.lgamma(gamma0[k]) - math.lgamma(gamma[k])
               + (gamma[k] - gamma0[k]) * (digamma(gamma[k]) - psi_gs))
    col = dv[0]
    v = dv[1]
    diff = dv[2]
    for k in range(K):
        a, b, a0, b0 = alpha[k], beta[k], alpha0[k], beta0[k]
        kl += ((a - a0) * digamma(a) - math.lgamma(a) + math.lgamma(a0)
               + a0 * (math.log(b) - math.log(b0)) + a * (b0 - b) / b)
        # tr(P0 V) = |L^-1 C0|_F^2 with P0 = C0 C0^T, V = inv(L L^T)
        tr = 0.0
        for j in range(d):
            for i in range(d):
                col[i] = C0[k, i, j]
            solve_lower(L[k], col, v)
            for i in range(d):
                tr += v[i] * v[i]
        logdet = 0.0
        for i in range(d):
            logdet += math.log(L[k, i, i])
            diff[i] = u[k, i] - u0[k, i]
        quad = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += P0[k, i, j] * diff[j]
            quad += diff[i] * acc
        kl += 0.5 * (tr + (a / b) * quad - d - ldP0[k] + 2.0 * logdet)
    return kl


@kernel
def cavi_iterate(X, y, n, prior, fac, st, resp, W, tol, max_iter, trace, scr):
    """CAVI from the current factors (a warm start) until the ELBO's relative improvement
    is at most ``tol`` or ``max_iter`` iterations ran.

    Iteration ``i`` (1-based) is an E-step, which gives ``ELBO(r_i, theta_{i-1})`` (written
    to ``trace[i - 1]`` while ``trace`` has room), then an M-step. It stops after the M-step
    of the first iteration ``i >= 2`` with ``|ELBO_i - ELBO_{i-1}| <= tol |ELBO_{i-1}|``, so
    the factors returned are the optimum for the last responsibilities. Returns
    ``(iterations, last ELBO, ok)``; ``ok`` is False if the state became non-finite.
    """
    prev = 0.0
    elbo = 0.0
    it = 0
    while it < max_iter:
        elbo = estep(X, y, n, prior, fac, st, resp, W, scr) - kl_divergence(prior, fac, scr)
        if it < trace.shape[0]:
            trace[it] = elbo
        it += 1
        if not mstep(prior, fac, st, scr) or not math.isfinite(elbo):
            return it, elbo, False
        if it > 1 and abs(elbo - prev) <= tol * abs(prev):
            break
        prev = elbo
    return it, elbo, True


@kernel(inline=True)
def arm_update(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace, scr):
    """Append ``(x, r)`` at row ``n`` of the arm's history and refit the arm (``W``: the
    E-step's scratch, as large as ``X``).

    ``K = 1``: :func:`nig_add` (exact, O(d^2)); returns ``(0, nan, ok)``. ``K > 1``:
    :func:`cavi_iterate` warm-started from the current factors over the ``n + 1`` rows.
    The caller guarantees the history has room for row ``n``.
    """
    d = x.shape[0]
    for i in range(d):
        X[n, i] = x[i]
    y[n] = r
    K = fac[0].shape[0]
    if K == 1:
        resp[n, 0] = 1.0
        return 0, math.nan, nig_add(x, r, prior, fac, st, scr)
    return cavi_iterate(X, y, n + 1, prior, fac, st, resp, W, tol, max_iter, trace, scr)


# --------------------------------------------------------------------------- Thompson draws


# Not inlined (nor select below): inlined at arm_score's two sites and through select
# into vts_run, the draws' IR was copied a dozen times; VTS's run took 28 s of CPU to
# compile, 19 s with these four (digamma, gamma_variate, expert_score, select) compiled
# once each. A call per arm and expert is small beside the draw.
@kernel
def expert_score(x, k, fac, sample_params, rng, w):
    """``x w_k`` for one draw ``s2 ~ InvGamma(alpha_k, beta_k)``, ``w_k ~ N(u_k, s2 V_k)``
    (``w = u_k + sqrt(s2) L_k^-T z``), or ``x u_k`` without ``sample_params``."""
    u, L, alpha, beta = fac[1], fac[2], fac[3], fac[4]
    d = x.shape[0]
    score = 0.0
    if not sample_params:
        for i in range(d):
            score += x[i] * u[k, i]
        return score
    s2 = beta[k] / gamma_variate(rng, alpha[k])
    for i in range(d):
        w[i] = normal(rng)
    solve_lower_t(L[k], w, w)
    sd = math.sqrt(s2)
    for i in range(d):
        score += x[i] * (u[k, i] + sd * w[i])
    return score


@kernel(inline=True)
def arm_score(x, fac, scoring, sample_params, rng, scr):
    """The arm's Thompson score (Urteaga & Wiggins, eqs. 15-17, ``x`` the arm's context).

    ``SAMPLE_Z`` (eq. 15): ``z ~ Cat(gamma / sum gamma)``, score ``x w_z``;
    ``SAMPLE_PI`` (eq. 16): ``pi ~ Dir(gamma)``, score ``sum_k pi_k x w_k``;
    ``EXPECTED_PI`` (eq. 17): ``pi = gamma / sum gamma``, score ``sum_k pi_k x w_k``;
    ``w_k`` drawn from ``q(w_k, s2_k)`` (:func:`expert_score`). The weights are drawn
    first, then the experts in order.
    """
    gamma = fac[0]
    K = gamma.shape[0]
    dv, kv = scr[0], scr[1]
    w = dv[3]
    pi = kv[3]
    gs = 0.0
    for k in range(K):
        gs += gamma[k]
    if scoring == SAMPLE_Z:
        target = uniform(rng) * gs
        z = K - 1
        acc = 0.0
        for k in range(K):
            acc += gamma[k]
            if target < acc:
                z = k
                break
        return expert_score(x, z, fac, sample_params, rng, w)
    if scoring == SAMPLE_PI:
        ps = 0.0
        for k in range(K):
            pi[k] = gamma_variate(rng, gamma[k])
            ps += pi[k]
        for k in range(K):
            pi[k] /= ps
    else:
        for k in range(K):
            pi[k] = gamma[k] / gs
    score = 0.0
    for k in range(K):
        score += pi[k] * expert_score(x, k, fac, sample_params, rng, w)
    return score


@kernel(inline=True)
def expected_reward(x, fac):
    """The variational posterior mean of the arm's expected reward,
    ``E_q[sum_k pi_k x w_k] = sum_k (gamma_k / sum gamma) x u_k``."""
    gamma, u = fac[0], fac[1]
    K, d = u.shape
    gs = 0.0
    for k in range(K):
        gs += gamma[k]
    out = 0.0
    for k in range(K):
        m = 0.0
        for i in range(d):
            m += x[i] * u[k, i]
        out += gamma[k] / gs * m
    return out


@kernel(inline=True)
def _arm(fac, a):
    """Arm ``a``'s factors from factors with a leading arm axis."""
    return (fac[0][a], fac[1][a], fac[2][a], fac[3][a], fac[4][a])


@kernel(inline=True)
def _arm_st(st, a):
    """Arm ``a``'s statistics from statistics with a leading arm axis."""
    return (st[0][a], st[1][a], st[2][a], st[3][a])


# a function of its own (see expert_score)
@kernel
def select(contexts, facs, scoring, sample_params, rng, scores, scr):
    """Every arm's score (arm ``a`` scored at ``contexts[a]``) and the argmax (first on ties).

    ``facs`` holds every arm's factors with a leading arm axis.
    """
    A = contexts.shape[0]
    best = 0
    for a in range(A):
        scores[a] = arm_score(contexts[a], _arm(facs, a), scoring, sample_params, rng, scr)
        if scores[a] > scores[best]:
            best = a
    return best


# --------------------------------------------------------------------------- the bandit run
# params: (scoring, sample_params, tol, max_iter)


@kernel
def vts_run(params, prior, contexts, means, rewards, rng, hist, counts, facs, sts, work,
            scr, regret, arms, sqerr, iters):
    """One VTS run: ``T`` rounds of select, exact regret, update of the played arm.

    ``contexts`` (T, A, d), ``means``, ``rewards`` (T, A): the run's realisation; ``rng``
    the policy's xoroshiro128+ state; ``hist = (X (A, T, d), y (A, T), resp (A, T, K),
    W (A, T, d))``
    and ``counts`` (A,) the per-arm histories; ``facs``, ``sts`` every arm's factors and
    statistics (leading arm axis; initialised here from ``prior``); ``work = (trace
    (max_iter,), scores (A,))`` scratch. Outputs: ``regret``, ``arms``, ``iters`` (T,)
    (CAVI iterations of the round's update, 0 for the closed form of ``K = 1``),
    ``sqerr`` (T, A): the squared
    error of every arm's estimated expected reward (:func:`expected_reward`, before the
    round's draw) against the true one. Returns 0, or the 1-based round at which the
    state became non-finite.
    """
    scoring, sample_params, tol, max_iter = params[0], params[1], params[2], params[3]
    T, A = means.shape
    X, y, resp, W = hist[0], hist[1], hist[2], hist[3]
    trace, scores = work[0], work[1]
    for a in range(A):
        counts[a] = 0
        init_factors(prior, _arm(facs, a), _arm_st(sts, a))
    for t in range(T):
        ctx = contexts[t]
        for a in range(A):
            e = expected_reward(ctx[a], _arm(facs, a)) - means[t, a]
            sqerr[t, a] = e * e
        arm = select(ctx, facs, scoring, sample_params, rng, scores, scr)
        regret[t] = instant_regret(means[t], arm)
        arms[t] = arm
        n = counts[arm]
        it, _, ok = arm_update(X[arm], y[arm], resp[arm], W[arm], n, ctx[arm], rewards[t, arm],
                               prior, _arm(facs, arm), _arm_st(sts, arm), tol, max_iter, trace,
                               scr)
        counts[arm] = n + 1
        iters[t] = it
        if not ok:
            return t + 1
    return 0
