r"""Rényi variational inference: the Monte Carlo Rényi bound, its gradient, Adam steps.

Li & Turner (2016), "Rényi divergence variational inference" (the bound); the Rényi
appendix (most likely Sajid et al. 2022, docs/algorithms.md), appendix C (the bandit's
inner loop: 10 Adam steps, learning rate 2e-2, 300 Monte Carlo draws); docs/algorithms.md
section 6.

The family is ``q = N(mu, L L^T)`` with ``L`` lower triangular and a positive diagonal,
parameterised by ``P`` (d + 1, d): ``P[0] = mu``, ``P[1 + i, k] = L[i, k]`` for ``k < i``
and ``P[1 + i, i] = log L[i, i]`` (the upper triangle of ``P[1:]`` is unused and stays 0).
With draws ``theta_j = mu + L eps_j``, ``eps_j ~ N(0, I)``, ``j = 1..M``, and the potential
``U = -log p(data, theta) + const`` (:mod:`.potential`), the log weights are

.. math::

    \log w_j = \log p(\mathrm{data}, \theta_j) - \log q(\theta_j)
             = -U(\theta_j) + \sum_i \log L_{ii} + \tfrac12 |\epsilon_j|^2
               + \tfrac d2 \log 2\pi

and the Monte Carlo Rényi bound (Li & Turner eq. 13; the appendix's eq. 68 with the
integral replaced by draws from ``q``) is

.. math::

    \hat L_\alpha = \frac{1}{1 - \alpha} \log \frac1M \sum_j w_j^{1 - \alpha},

computed as a log-sum-exp (the largest ``(1 - alpha) log w_j`` is factored out, so no
weight overflows). With ``eps`` fixed, its gradient is the self-normalised average of the
per-draw reparameterisation gradients (Li & Turner eq. 14)

.. math::

    \nabla \hat L_\alpha = \sum_j \hat w_j \nabla \log w_j,\qquad
    \hat w_j = \mathrm{softmax}_j\big((1 - \alpha) \log w_j\big),

and, with ``G_j = grad U(theta_j)`` and ``log q(theta_j) = -sum_i log L_ii -
|eps_j|^2/2 - d/2 log 2 pi`` (closed form: it depends on the parameters through
``log det L`` only once ``eps_j`` is fixed),

.. math::

    \partial_\mu \log w_j = -G_j,\quad
    \partial_{L_{ik}} \log w_j = -G_{ji}\,\epsilon_{jk}\ (k < i),\quad
    \partial_{\log L_{ii}} \log w_j = 1 - G_{ji} L_{ii} \epsilon_{ji}.

``alpha = 1`` is the ELBO ``mean_j log w_j`` with uniform weights ``1/M``, handled exactly
(not as a limit). The steps minimise ``-L_alpha`` by Adam (Kingma & Ba 2015, Algorithm 1):
``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``,
``P <- P - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps_adam)``.

Bodies allocate nothing: the scratch tuple ``scr = (L, T, G, logw, wts, D, grad, H)`` holds
``L`` (d, d), the draws ``T`` and their gradients ``G`` (M, d), ``logw`` and the weights
``wts`` (M,), ``D`` (d, d) = ``sum_j w_j G_j eps_j^T``, ``grad`` (d + 1, d) (the gradient
of ``-L_alpha`` in ``P``'s layout) and ``H`` (d, d), the Hessian buffer the potential's
``grads_hessian`` is handed and leaves untouched.

Also here: :data:`MIXTURE_PRIOR`, the potential of the Rényi bandit's arms (a
linear-Gaussian likelihood under a Gaussian-mixture prior, Tables 3-4 of the appendix),
which every engine can run on (:class:`vits_ref.models.mixture_prior.MixturePrior`).
"""

import math

from vits_ref.config import kernel

from .linalg import all_finite_mat, gemm_nt, gemm_tn, half_quadratic
from .linear import POTENTIAL as LINEAR
from .logistic import POTENTIAL as LOGISTIC
from .logistic import values_grads as logistic_values_grads
from .potential import Potential, linear_scores

LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------- the bound


@kernel(inline=True)
def factor_from_params(P, L):
    """``L`` from ``P[1:]`` (exp of the log-diagonal, zero upper triangle); returns
    ``log det L = sum_i P[1 + i, i]``."""
    d = L.shape[0]
    logdet = 0.0
    for i in range(d):
        for k in range(d):
            if k < i:
                L[i, k] = P[1 + i, k]
            elif k == i:
                L[i, i] = math.exp(P[1 + i, i])
                logdet += P[1 + i, i]
            else:
                L[i, k] = 0.0
    return logdet


@kernel
def renyi_weights(alpha, logw, wts):
    """``(bound, ess)`` of the log weights; ``wts`` receives the self-normalised weights.

    ``bound = 1/(1 - alpha) log mean_j exp((1 - alpha) logw_j)`` by log-sum-exp (the
    largest exponent factored out); ``wts = softmax((1 - alpha) logw)`` and
    ``ess = 1 / sum_j wts_j^2`` (the weights' effective sample size, ``M`` when uniform).
    ``alpha == 1``: the ELBO ``mean_j logw_j`` and uniform weights, exactly. A NaN or
    infinite log weight makes the bound non-finite, which the caller reports.
    """
    M = logw.shape[0]
    if alpha == 1.0:
        s = 0.0
        for j in range(M):
            wts[j] = 1.0 / M
            s += logw[j]
        return s / M, float(M)
    c = 1.0 - alpha
    mx = -math.inf
    for j in range(M):
        z = c * logw[j]
        if z > mx:
            mx = z
    tot = 0.0
    for j in range(M):
        e = math.exp(c * logw[j] - mx)
        wts[j] = e
        tot += e
    sq = 0.0
    for j in range(M):
        wts[j] /= tot
        sq += wts[j] * wts[j]
    return (mx + math.log(tot / M)) / c, 1.0 / sq


def generic_values_grads(potential):
    """``values_grads(data, thetas, logw, G, H, pscr)``: ``logw[j] -= U(thetas[j])`` by the
    potential's ``value``, then ``G`` = the gradients by its ``grads_hessian`` (``H``
    untouched). Values first: a potential that memoises a product of ``value`` (the
    logistic one keeps ``X theta``) sees the same order as in its Newton iteration."""
    grads_hessian = potential.grads_hessian
    value = potential.value

    @kernel(inline=True)
    def values_grads(data, thetas, logw, G, H, pscr):
        for j in range(thetas.shape[0]):
            logw[j] -= value(data, thetas[j], pscr)
        grads_hessian(data, thetas, False, G, H, pscr)

    return values_grads


_linear_grads_hessian = LINEAR.grads_hessian


@kernel(inline=True)
def linear_values_grads(data, thetas, logw, G, H, pscr):
    """The linear potential's values from its gradients: ``G_j = etaV theta_j - eta_b``
    gives ``U(theta_j) = 1/2 theta_j^T etaV theta_j - eta_b^T theta_j
    = 1/2 theta_j . (G_j - eta_b)``, O(d) a draw instead of ``value``'s O(d^2) (at d = 20,
    M = 300 it took half of a step)."""
    eta_b = data[1]
    _linear_grads_hessian(data, thetas, False, G, H, pscr)
    for j in range(thetas.shape[0]):
        s = 0.0
        for i in range(thetas.shape[1]):
            s += thetas[j, i] * (G[j, i] - eta_b[i])
        logw[j] -= 0.5 * s


#: Potentials with a cheaper exact ``values_grads`` than :func:`generic_values_grads`
#: (:data:`MIXTURE_PRIOR`'s is added below its definition; the logistic one lives with its
#: potential, :func:`vits_ref.kernels.logistic.values_grads`). The linear hook belongs with
#: its potential (kernels/linear.py) and can move there; it is kept here, with the only
#: step that uses it, until the Potential protocol has such a hook.
VALUES_GRADS = {LINEAR: linear_values_grads, LOGISTIC: logistic_values_grads}


def make_values_grads(potential):
    """The potential's ``values_grads`` hook: its own from :data:`VALUES_GRADS`, else
    :func:`generic_values_grads`."""
    hook = VALUES_GRADS.get(potential)
    return generic_values_grads(potential) if hook is None else hook


def make_renyi_grad(potential):
    """``renyi_grad(alpha, P, data, eps, scr, pscr) -> (bound, ess)``: one Monte Carlo
    Rényi bound at ``P`` with the draws ``eps`` (M, d), and its gradient.

    ``scr[6]`` (``grad``, (d + 1, d)) receives the gradient of ``-bound`` in ``P``'s layout
    (zero above the diagonal); see the module docstring for the formulas. The potential's
    values and gradients at the draws come from :func:`make_values_grads`.
    """
    values_grads = make_values_grads(potential)

    @kernel(inline=True)
    def renyi_grad(alpha, P, data, eps, scr, pscr):
        L, T, G, logw, wts, D, grad, H = scr
        M, d = eps.shape
        logdet = factor_from_params(P, L)
        gemm_nt(eps, L, T)  # rows L eps_j
        const = logdet + 0.5 * d * LOG_2PI
        for j in range(M):
            e2 = 0.0
            for i in range(d):
                T[j, i] += P[0, i]
                e2 += eps[j, i] * eps[j, i]
            logw[j] = const + 0.5 * e2  # -log q(theta_j)
        values_grads(data, T, logw, G, H, pscr)
        bound, ess = renyi_weights(alpha, logw, wts)
        for j in range(M):
            wj = wts[j]
            for i in range(d):
                G[j, i] *= wj
        gemm_tn(G, eps, D)  # D[i, k] = sum_j w_j G_j[i] eps_j[k]
        for i in range(d):
            s = 0.0
            for j in range(M):
                s += G[j, i]
            grad[0, i] = s
        for i in range(d):
            for k in range(d):
                if k < i:
                    grad[1 + i, k] = D[i, k]
                elif k == i:
                    grad[1 + i, i] = L[i, i] * D[i, i] - 1.0
                else:
                    grad[1 + i, k] = 0.0
        return bound, ess

    return renyi_grad


@kernel(inline=True)
def adam_update(P, grad, m, v, t, lr, beta1, beta2, adam_eps):
    """One Adam step on ``P`` with the gradient ``grad`` (Kingma & Ba 2015, Algorithm 1).

    ``m``, ``v`` (same shape as ``P``) are the moment estimates and ``t`` (1,) the step
    count, all updated in place: the state persists across calls (warm start). Entries
    whose gradient has always been 0 (the unused upper triangle) do not move.
    """
    t[0] += 1.0
    c1 = 1.0 - math.pow(beta1, t[0])
    c2 = 1.0 - math.pow(beta2, t[0])
    for r in range(P.shape[0]):
        for i in range(P.shape[1]):
            g = grad[r, i]
            m[r, i] = beta1 * m[r, i] + (1.0 - beta1) * g
            v[r, i] = beta2 * v[r, i] + (1.0 - beta2) * g * g
            P[r, i] -= lr * (m[r, i] / c1) / (math.sqrt(v[r, i] / c2) + adam_eps)


def make_renyi_steps(potential):
    """``renyi_steps(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr,
    trace) -> ok``: ``eps.shape[0]`` Adam steps on ``-L_alpha``, in place.

    ``eps`` (S, M, d): the draws of each step; ``adam = (m, v, t)``; ``trace`` (S, 2)
    receives each step's ``(bound, ess)`` at the step's starting point. On return
    ``scr[0]`` holds the final ``L``. Returns False (state partly updated: the caller
    restores it) as soon as a bound, a gradient, Adam's second moment (a finite gradient
    beyond 1e154 squares to inf, which would freeze ``P``) or the final state is not
    finite.
    """
    grad_body = make_renyi_grad(potential)

    @kernel(inline=True)
    def renyi_steps(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr,
                    trace):
        m, v, t = adam
        grad = scr[6]
        for s in range(eps.shape[0]):
            bound, ess = grad_body(alpha, P, data, eps[s], scr, pscr)
            trace[s, 0] = bound
            trace[s, 1] = ess
            if not math.isfinite(bound) or not all_finite_mat(grad):
                return False
            adam_update(P, grad, m, v, t, lr, beta1, beta2, adam_eps)
            # a finite gradient beyond 1e154 squares to inf: v = inf freezes P (m / inf = 0)
            # and the update would silently return its start
            if not all_finite_mat(v):
                return False
        factor_from_params(P, scr[0])
        return all_finite_mat(P) and all_finite_mat(scr[0])

    return renyi_steps


# --------------------------------------------------------------------------- mixture prior
# data = (etaV, eta_b, means (K, d), inv_var (K, d), logc (K,)); scratch = (lk (K,), ubar (d,))


@kernel(inline=True)
def mixture_responsibilities(means, inv_var, logc, theta, lk):
    """``log sum_k c_k exp(-1/2 sum_i (theta_i - m_ki)^2 / v_ki)``; ``lk`` receives the
    responsibilities (the posterior weights of the components at ``theta``).

    ``logc_k = log w_k - 1/2 sum_i log(2 pi v_ki)`` (the component's normalised log weight).
    The largest term is factored out (log-sum-exp). Returns 0 for no components.
    """
    K, d = means.shape
    if K == 0:
        return 0.0
    mx = -math.inf
    for k in range(K):
        q = 0.0
        for i in range(d):
            r = theta[i] - means[k, i]
            q += r * r * inv_var[k, i]
        lk[k] = logc[k] - 0.5 * q
        if lk[k] > mx:
            mx = lk[k]
    tot = 0.0
    for k in range(K):
        lk[k] = math.exp(lk[k] - mx)
        tot += lk[k]
    for k in range(K):
        lk[k] /= tot
    return mx + math.log(tot)


@kernel
def mixture_value(data, theta, scratch):
    """``U = 1/2 theta^T etaV theta - eta_b^T theta - log prior(theta)``."""
    etaV, eta_b, means, inv_var, logc = data
    return (half_quadratic(etaV, eta_b, theta)
            - mixture_responsibilities(means, inv_var, logc, theta, scratch[0]))


@kernel
def mixture_grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """Gradients ``etaV theta - eta_b + sum_k r_k (theta - m_k) / v_k`` at the rows of
    ``thetas``; with ``want_hessian`` the exact mean Hessian

    ``etaV + mean_j [sum_k r_jk diag(1/v_k) - sum_k r_jk u_jk u_jk^T + ubar_j ubar_j^T]``,
    ``u_jk = (theta_j - m_k)/v_k``, ``ubar_j = sum_k r_jk u_jk`` (indefinite between the
    modes of a mixture).
    """
    etaV, eta_b, means, inv_var, logc = data
    lk, ubar = scratch
    M, d = thetas.shape
    K = means.shape[0]
    gemm_nt(thetas, etaV, G)  # (etaV theta_m)^T, etaV symmetric
    if want_hessian:
        for i in range(d):
            for k in range(d):
                H[i, k] = 0.0
    for m in range(M):
        th = thetas[m]
        mixture_responsibilities(means, inv_var, logc, th, lk)
        for i in range(d):
            acc = 0.0
            for k in range(K):
                acc += lk[k] * (th[i] - means[k, i]) * inv_var[k, i]
            ubar[i] = acc
            G[m, i] += acc - eta_b[i]
        if want_hessian:
            for k in range(K):
                r = lk[k]
                for i in range(d):
                    ui = (th[i] - means[k, i]) * inv_var[k, i]
                    H[i, i] += r * inv_var[k, i]
                    for c in range(d):
                        H[i, c] -= r * ui * (th[c] - means[k, c]) * inv_var[k, c]
            for i in range(d):
                for c in range(d):
                    H[i, c] += ubar[i] * ubar[c]
    if want_hessian:
        inv_m = 1.0 / M
        for i in range(d):
            for k in range(d):
                H[i, k] = etaV[i, k] + H[i, k] * inv_m


@kernel(inline=True)
def mixture_values_grads(data, thetas, logw, G, H, pscr):
    """The Rényi steps' hook on this potential: ``logw[j] -= U(theta_j)`` and the gradients
    from one evaluation of the responsibilities per draw (the generic hook evaluates them
    twice: in ``value`` and in ``grads_hessian``)."""
    etaV, eta_b, means, inv_var, logc = data
    lk, ubar = pscr
    M, d = thetas.shape
    K = means.shape[0]
    gemm_nt(thetas, etaV, G)  # (etaV theta_m)^T, etaV symmetric
    for m in range(M):
        th = thetas[m]
        logp = mixture_responsibilities(means, inv_var, logc, th, lk)
        twice_u = 0.0
        for i in range(d):
            u = 0.0
            for k in range(K):
                u += lk[k] * (th[i] - means[k, i]) * inv_var[k, i]
            g = G[m, i] - eta_b[i]  # the likelihood's gradient
            twice_u += th[i] * (g - eta_b[i])  # theta^T etaV theta - 2 eta_b^T theta
            G[m, i] = g + u
        logw[m] -= 0.5 * twice_u - logp


#: Linear-Gaussian likelihood (statistics scaled by ``eta``) under a Gaussian-mixture prior
#: with diagonal components: the Rényi bandit's arm model (appendix C, Tables 3-4).
MIXTURE_PRIOR = Potential("mixture-prior", mixture_grads_hessian, mixture_value,
                          linear_scores)
VALUES_GRADS[MIXTURE_PRIOR] = mixture_values_grads
