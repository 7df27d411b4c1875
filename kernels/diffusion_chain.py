r"""Reverse chains of a diffusion prior: plain sampling, LaplaceDPS (linear, logistic), DPS.

Kveton et al. (NeurIPS 2024), sections 3-4 and appendix D; docs/algorithms.md
section 3. A diffusion prior hands the chains an
:class:`EpsBodies` (its noise regressor ``eps_t(s)`` and that regressor's vector-Jacobian
product, as kernel bodies), the tuple of arrays those bodies read (``params``) and the
per-stage arrays below; every factory here closes over an :class:`EpsBodies`, as the steps
of :mod:`.newton` close over a potential, and the drivers cache one compiled chain per
(chain, bodies).

Shared inputs (``T`` stages, dimension ``d``):

``coef`` (T + 1, 6)
    per stage ``t``: ``abar_t``, ``sqrt(abar_t)``, ``sqrt(1 - abar_t)``, ``c0_t``, ``c1_t``,
    ``sqrt(btilde_t)`` (:meth:`vits_ref.diffusion.Schedule.coefficients`), so that the
    DDPM reverse mean is ``mu_t(s) = c0_t s0_hat + c1_t s`` with
    ``s0_hat = (s - sqrt(1 - abar_t) eps_t(s)) / sqrt(abar_t)``.
``prec`` (T + 1, d, d), ``prec_chol`` (T + 1, d, d)
    ``P_t = inv(Sigma_t)``, the reverse step's precision, and its lower Cholesky factor
    (entry 0 unused).
``start_mean`` (d,), ``start_chol`` (d, d), ``start_prec`` (d, d), ``start_b`` (d,)
    the start ``s_T ~ N(m0, L0 L0^T)``, its precision ``P0`` and ``P0 m0``.
``z`` (T + 1, d)
    the chain's standard normals, drawn beforehand (so the CPU and CUDA drivers and the
    NumPy reference :mod:`vits_ref.reference.diffusion` consume the same numbers): ``z[T]``
    draws ``s_T``, ``z[t - 1]`` the step from ``s_t`` to ``s_{t-1}``.

A draw from ``N(m, inv(P))`` given ``P = L L^T`` is ``m + L^-T z`` (a triangular solve, no
inverse). Bodies allocate nothing; their scratch comes in as arguments.
"""

import math

from vits_ref.config import kernel

from .bandit import argmax, instant_regret
from .linalg import cholesky, gemv_loops, solve_lower, solve_lower_t
from .newton import FAILED, MAX_ITER, make_newton
from .potential import fingerprint


class EpsBodies:
    """A diffusion prior's noise regressor as kernel bodies.

    ``eps(params, t, s, out, scratch)``
        ``out`` (d,) = ``eps_t(s)`` for the 1-based stage ``t`` and ``s`` (d,).
    ``vjp(params, t, s, v, out, scratch)``
        ``out`` (d,) = ``J^T v`` with ``J = d eps_t / d s`` at ``s`` (DPS needs it).

    ``params`` is the prior's tuple of arrays (stage-indexed arrays have a leading axis of
    length T, indexed by ``t - 1``), ``scratch`` the tuple the prior's ``eps_scratch()``
    returns. Instances are module-level constants of a kernel module (hashed by identity:
    one compiled chain per (chain, bodies)); ``fingerprint`` (a string) goes into the
    drivers' closures so Numba's on-disk cache follows the bodies (as
    :attr:`vits_ref.kernels.potential.Potential.fingerprint` does).
    """

    def __init__(self, name, eps, vjp):
        self.name = name
        self.eps = eps
        self.vjp = vjp
        self.fingerprint = f"{name}:{fingerprint(eps, vjp):x}"

    def __repr__(self):
        return f"EpsBodies({self.name!r})"


# --------------------------------------------------------------------------- affine eps


@kernel
def affine_eps(params, t, s, out, scratch):
    """``out = A[t-1] s + c[t-1]`` with ``params = (A (T, d, d), c (T, d))``."""
    A, c = params
    d = s.shape[0]
    for i in range(d):
        acc = c[t - 1, i]
        for k in range(d):
            acc += A[t - 1, i, k] * s[k]
        out[i] = acc


@kernel
def affine_vjp(params, t, s, v, out, scratch):
    """``out = A[t-1]^T v`` (the Jacobian of the affine ``eps_t`` is ``A[t-1]``)."""
    A = params[0]
    d = s.shape[0]
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += A[t - 1, k, i] * v[k]
        out[i] = acc


#: The exact noise regressor of a Gaussian prior ``N(m, S)`` (affine in ``s``):
#: ``E[eps | s_t] = sqrt(1 - abar_t) C_t^-1 (s_t - sqrt(abar_t) m)``,
#: ``C_t = abar_t S + (1 - abar_t) I`` (:class:`vits_ref.diffusion.GaussianDiffusionPrior`).
AFFINE = EpsBodies("affine", affine_eps, affine_vjp)


# --------------------------------------------------------------------------- pieces


@kernel(inline=True)
def _draw(L, rhs, z, out):
    """``out = L^-T (L^-1 rhs + z)``: a draw of ``N(inv(L L^T) rhs, inv(L L^T))``."""
    d = out.shape[0]
    solve_lower(L, rhs, out)
    for i in range(d):
        out[i] += z[i]
    solve_lower_t(L, out, out)


@kernel(inline=True)
def _start(start_mean, start_chol, zT, s):
    """``s = start_mean + start_chol zT``: the chain's first state ``s_T`` (lower-triangular
    ``start_chol``)."""
    for i in range(s.shape[0]):
        acc = start_mean[i]
        for k in range(i + 1):
            acc += start_chol[i, k] * zT[k]
        s[i] = acc


@kernel(inline=True)
def _finite(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 0.0
    return s == 0.0


def make_reverse_mean(bodies):
    """``reverse_mean(coef, params, t, s, out, e, scratch)``: ``out = mu_t(s)``, ``e`` (d,)
    receives ``eps_t(s)``.

    ``mu_t(s) = c0_t s0_hat + c1_t s``, ``s0_hat = (s - sqrt(1 - abar_t) eps_t(s)) /
    sqrt(abar_t)`` (Kveton et al., section 3; Ho et al. 2020 eqs. 7 and 15). ``out`` must not
    alias ``s``.
    """
    eps = bodies.eps

    @kernel
    def reverse_mean(coef, params, t, s, out, e, scratch):
        eps(params, t, s, e, scratch)
        sa, s1a, c0, c1 = coef[t, 1], coef[t, 2], coef[t, 3], coef[t, 4]
        for i in range(s.shape[0]):
            s0 = (s[i] - s1a * e[i]) / sa
            out[i] = c0 * s0 + c1 * s[i]

    return reverse_mean


def make_chain(bodies):
    """The plain reverse chain (sampling the prior, no evidence).

    ``chain(coef, params, prec_chol, start_mean, start_chol, z, out, work, scratch)``:
    ``s_T = m0 + L0 z[T]``, then for ``t = T..1``
    ``s_{t-1} = mu_t(s_t) + L_t^-T z[t-1]`` with ``P_t = L_t L_t^T``; ``out`` (d,) = ``s_0``.
    ``work`` (3, d) scratch. Returns False if the state became non-finite.
    """
    reverse_mean = make_reverse_mean(bodies)

    @kernel
    def chain(coef, params, prec_chol, start_mean, start_chol, z, out, work, scratch):
        T = coef.shape[0] - 1
        d = out.shape[0]
        s, mu, e = work[0], work[1], work[2]
        _start(start_mean, start_chol, z[T], s)
        for t in range(T, 0, -1):
            reverse_mean(coef, params, t, s, mu, e, scratch)
            solve_lower_t(prec_chol[t], z[t - 1], e)
            for i in range(d):
                s[i] = mu[i] + e[i]
        for i in range(d):
            out[i] = s[i]
        return _finite(out)

    return chain


def make_laplace_linear(bodies):
    """LaplaceDPS for the linear-Gaussian model (Algorithm 2 and Theorem 2 of Kveton et al.).

    ``laplace(coef, params, prec, start_prec, start_b, G, h, w, z, out, M, L, work,
    scratch) -> ok``. The evidence enters through sufficient statistics only,
    ``Sbar^-1 = w G`` and ``Sbar^-1 thetabar = w h`` with ``G = sum phi phi^T``,
    ``h = sum phi y`` and ``w = sigma^-2``: never the history. First stage, the product of
    the start ``N(m0, inv(P0))`` and the evidence diffused to stage T::

        s_T ~ N(m, S),  S = inv(P0 + w G / abar_T),  m = S (P0 m0 + w h / sqrt(abar_T))

    (the paper's ``P0 = I``, ``m0 = 0``), then for ``t = T..1``::

        S_t = inv(P_t + w G / abar_{t-1}),  m_t = S_t (P_t mu_t(s_t) + w h / sqrt(abar_{t-1}))

    each by one Cholesky factorisation ``L`` of the precision and triangular solves;
    ``s_{t-1} = L^-T (L^-1 rhs + z[t-1])``. ``M``, ``L`` (d, d) and ``work`` (4, d) are
    scratch. Returns False on a precision that is not positive definite or a non-finite
    state.
    """
    reverse_mean = make_reverse_mean(bodies)

    @kernel
    def laplace(coef, params, prec, start_prec, start_b, G, h, w, z, out, M, L, work,
                scratch):
        T = coef.shape[0] - 1
        d = out.shape[0]
        s, mu, e, rhs = work[0], work[1], work[2], work[3]
        wg = w / coef[T, 0]
        wh = w / coef[T, 1]
        for i in range(d):
            rhs[i] = start_b[i] + wh * h[i]
            for k in range(d):
                M[i, k] = start_prec[i, k] + wg * G[i, k]
        if not cholesky(M, L):
            return False
        _draw(L, rhs, z[T], s)
        for t in range(T, 0, -1):
            reverse_mean(coef, params, t, s, mu, e, scratch)
            wg = w / coef[t - 1, 0]
            wh = w / coef[t - 1, 1]
            P = prec[t]
            for i in range(d):
                acc = wh * h[i]
                for k in range(d):
                    acc += P[i, k] * mu[k]
                    M[i, k] = P[i, k] + wg * G[i, k]
                rhs[i] = acc
            if not cholesky(M, L):
                return False
            _draw(L, rhs, z[t - 1], s)
        for i in range(d):
            out[i] = s[i]
        return _finite(out)

    return laplace


def make_laplace_glm(bodies, potential):
    """LaplaceDPS for a GLM (Theorem 4 of Kveton et al.): one Newton/IRLS solve per stage.

    ``laplace(coef, params, prec, start_mean, start_prec, start_b, data, tol, max_iter, z,
    out, nscr, work, scratch, pscratch) -> (failed_stage, not_converged, iterations)``.

    ``data`` is the likelihood's part of ``potential`` (for the logistic model
    ``Logistic.kernel_data(prior=False)``); the solves are the library's single Newton body
    (:func:`.newton.make_newton`) with the stage's Gaussian prior as its explicit
    ``(P0, b0)`` term. First stage: the start scaled to ``theta`` units,
    ``N(m0 / sqrt(abar_T), inv(P0_start) / abar_T)``, i.e. ``P0 = abar_T P0_start``,
    ``b0 = sqrt(abar_T) P0_start m0``; then for ``t = T..1`` the prior
    ``N(mu_t(s_t) / sqrt(abar_{t-1}), Sigma_t / abar_{t-1})``, i.e.
    ``P0 = abar_{t-1} P_t``, ``b0 = sqrt(abar_{t-1}) P_t mu_t(s_t)``. The Newton solve gives
    ``theta_t`` and ``H = L L^T`` (the Hessian of the stage's objective at ``theta_t``);
    ``s_{t-1} = sqrt(abar_{t-1}) (theta_t + L^-T z[t-1])`` (the Laplace Gaussian rescaled,
    mean ``sqrt(abar_{t-1}) theta_t``, covariance ``abar_{t-1} H^-1``). Each solve is
    warm-started from the previous stage's ``theta`` (the first from the prior mean).

    ``nscr = (P0 (d, d), b0 (d,), theta2 (1, d), H (d, d), L (d, d), g2 (1, d), step (d,),
    trial2 (1, d))``; ``work`` (3, d); ``pscratch`` the potential's scratch. Returns
    ``failed_stage``: 0, or the stage whose solve failed (a non-finite value or a
    Hessian that is not positive definite) or whose draw is not finite: ``t`` for the step
    ``s_t -> s_{t-1}``, ``T + 1`` for the first draw of ``s_T``; ``not_converged``: the
    number of stages that stopped at ``max_iter``;
    ``iterations``: the Newton steps of all stages.
    """
    newton = make_newton(potential)
    reverse_mean = make_reverse_mean(bodies)

    @kernel
    def laplace(coef, params, prec, start_mean, start_prec, start_b, data, tol, max_iter, z,
                out, nscr, work, scratch, pscratch):
        P0, b0, theta2, H, L, g2, step, trial2 = nscr
        T = coef.shape[0] - 1
        d = out.shape[0]
        s, mu, e = work[0], work[1], work[2]
        iters = 0
        slow = 0
        a = coef[T, 0]
        ra = coef[T, 1]
        for i in range(d):
            b0[i] = ra * start_b[i]
            theta2[0, i] = start_mean[i] / ra
            for k in range(d):
                P0[i, k] = a * start_prec[i, k]
        for t in range(T, -1, -1):
            if t < T:  # the stage t + 1 -> t: prior from the reverse step at s_{t+1}
                reverse_mean(coef, params, t + 1, s, mu, e, scratch)
                a = coef[t, 0]
                ra = coef[t, 1]
                P = prec[t + 1]
                for i in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += P[i, k] * mu[k]
                        P0[i, k] = a * P[i, k]
                    b0[i] = ra * acc
            status, it = newton(data, P0, b0, theta2, tol, max_iter, H, L, g2, step, trial2,
                                pscratch)
            iters += it
            if status == FAILED:
                return t + 1, slow, iters
            if status == MAX_ITER:
                slow += 1
            for i in range(d):
                e[i] = z[t, i]
            solve_lower_t(L, e, e)
            for i in range(d):
                s[i] = ra * (theta2[0, i] + e[i])
            if not _finite(s):
                return t + 1, slow, iters
        for i in range(d):
            out[i] = s[i]
        return 0, slow, iters

    return laplace


def make_dps(bodies):
    """DPS (Chung et al. 2023; Algorithm 4 and appendix D of Kveton et al.) for the linear model.

    ``dps(coef, params, start_mean, start_chol, G, h, syy, z, out, work, scratch) -> ok``.
    ``s_T = m0 + L0 z[T]``; for ``t = T..1``::

        s0_hat  = (s_t - sqrt(1 - abar_t) eps_t(s_t)) / sqrt(abar_t)
        rss     = sum_l (y_l - phi_l^T s0_hat)^2 = syy - 2 h^T s0_hat + s0_hat^T G s0_hat
        g0      = grad_{s0_hat} rss = 2 (G s0_hat - h)
        grad    = grad_{s_t} rss = (g0 - sqrt(1 - abar_t) J^T g0) / sqrt(abar_t)
        s_{t-1} = c0_t s0_hat + c1_t s_t + sqrt(btilde_t) z[t-1] - zeta_t grad,
        zeta_t  = 1 / sqrt(rss)

    (Algorithm 4's line 5 with its sign typo fixed, ``J = d eps_t / d s`` through the eps
    body's ``vjp``, ``btilde_1`` clipped as in the schedule). The evidence enters through
    the sufficient statistics ``G = sum phi phi^T``, ``h = sum phi y``, ``syy = sum y^2``
    only. With no residual (``rss <= 0``: no observations, or rounding) the guidance term
    is 0. ``work`` (5, d). Returns False if the state became non-finite.
    """
    eps = bodies.eps
    vjp = bodies.vjp

    @kernel
    def dps(coef, params, start_mean, start_chol, G, h, syy, z, out, work, scratch):
        T = coef.shape[0] - 1
        d = out.shape[0]
        s, e, s0, g0, v = work[0], work[1], work[2], work[3], work[4]
        _start(start_mean, start_chol, z[T], s)
        for t in range(T, 0, -1):
            eps(params, t, s, e, scratch)
            sa, s1a, c0, c1, sb = coef[t, 1], coef[t, 2], coef[t, 3], coef[t, 4], coef[t, 5]
            for i in range(d):
                s0[i] = (s[i] - s1a * e[i]) / sa
            rss = syy
            for i in range(d):
                acc = 0.0
                for k in range(d):
                    acc += G[i, k] * s0[k]
                rss += s0[i] * acc - 2.0 * h[i] * s0[i]
                g0[i] = 2.0 * (acc - h[i])
            zeta = 1.0 / math.sqrt(rss) if rss > 0.0 else 0.0
            vjp(params, t, s, g0, v, scratch)
            for i in range(d):
                grad = (g0[i] - s1a * v[i]) / sa
                s[i] = c0 * s0[i] + c1 * s[i] + sb * z[t - 1, i] - zeta * grad
            if not _finite(s):
                return False
        for i in range(d):
            out[i] = s[i]
        return True

    return dps


def make_diffts_linear_run(bodies):
    """One whole run of the linear DiffTS bandit (LaplaceDPS Thompson sampling).

    ``run(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
    arms, stats, theta, scores, M, L, work, scratch) -> status``. Each round ``k``: one
    LaplaceDPS draw ``theta`` (:func:`make_laplace_linear`, normals ``z[k]`` (T + 1, d)),
    the arm ``argmax_a x_a theta`` (first maximum, like ``np.argmax``), the exact regret
    ``max_a means[k, a] - means[k, arm]``, then the statistics ``G += x x^T``,
    ``h += r x`` (``stats = (G (d, d), h (d,))``, zero at the start). ``contexts``
    (n, K, d), ``means`` and ``rewards`` (n, K) are the run's realisation. Returns 0, or the
    1-based round whose draw failed. The same numbers as the Python loop of
    ``ThompsonSampling(DiffTS(prior, "linear", sigma))`` fed the same normals.
    """
    laplace = make_laplace_linear(bodies)

    @kernel
    def run(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
            arms, stats, theta, scores, M, L, work, scratch):
        n, _, d = contexts.shape
        G, h = stats
        for i in range(d):
            h[i] = 0.0
            for k in range(d):
                G[i, k] = 0.0
        for r in range(n):
            if not laplace(coef, params, prec, start_prec, start_b, G, h, w, z[r], theta, M,
                           L, work, scratch):
                return r + 1
            X = contexts[r]
            gemv_loops(X, theta, scores)
            arm = argmax(scores)
            regret[r] = instant_regret(means[r], arm)
            arms[r] = arm
            y = rewards[r, arm]
            for i in range(d):
                xi = X[arm, i]
                h[i] += y * xi
                for k in range(d):
                    G[i, k] += xi * X[arm, k]
        return 0

    return run
