"""Damped Newton (IRLS) on any potential plus an explicit Gaussian prior term.

Minimises ``F(theta) = U(theta) + 1/2 theta^T P0 theta - b0^T theta`` where ``U`` is a
potential (:mod:`.potential`) evaluated on ``data``. The Laplace engine passes the
likelihood part of the model's potential and its prior as ``(P0, b0 = P0 theta0)``, or
the whole potential with ``P0 = 0``; the diffusion prior's stages (docs/algorithms.md
section 3) will pass a per-stage Gaussian. For the logistic potential with the canonical
link this is exactly IRLS (Algorithm 1 of the diffusion paper): the IRLS update
``theta <- inv(P0 + X^T W X)(b0 + X^T W z~)`` with ``z~ = X theta + (y - g)/g'`` equals the
Newton step ``theta - H^-1 grad F``, and the Newton form never divides by ``g'`` (which
underflows for ``|z| > 745``).

Each iteration: the gradient and Hessian at the iterate, a Cholesky factorisation
(failure: not positive definite), the convergence test on the previous full step, the
Newton direction by two triangular solves, and step halving until ``F`` does not rise
beyond its rounding level, so every iteration descends and the iteration converges from
any warm start (plain IRLS can overshoot on nearly separable data).
"""

import math

from vits_ref.config import kernel

from .linalg import cholesky, half_quadratic, solve_lower, solve_lower_t

# status codes (first element of the tuple the Newton bodies return)
CONVERGED = 1
MAX_ITER = 0
FAILED = -1  # a non-finite value or a Hessian that is not positive definite

MAX_HALVINGS = 60  # 2^-60 ~ 1e-18: past this the step is below rounding of theta


def make_newton(potential):
    """The Newton body for ``potential``: ``newton(data, P0, b0, theta2, tol, max_iter, H, L,
    g2, step, trial2, scratch) -> (status, iterations)``.

    ``theta2`` (1, d): the warm start on entry, the last iterate (the minimiser when
    converged) on exit. Converged when the last full Newton step ``delta = -H^-1 grad``
    satisfies ``|delta| <= tol max(1, |theta|)`` (the undamped step, so a halved step never
    fakes convergence). ``H`` (d, d) and ``L`` (d, d) receive the Hessian of ``F`` at the
    returned iterate and its lower Cholesky factor. ``g2`` (1, d), ``step`` (d,),
    ``trial2`` (1, d) are scratch; ``scratch`` is the potential's.
    """
    value = potential.value
    grads_hessian = potential.grads_hessian

    @kernel
    def newton(data, P0, b0, theta2, tol, max_iter, H, L, g2, step, trial2, scratch):
        d = theta2.shape[1]
        f = value(data, theta2[0], scratch) + half_quadratic(P0, b0, theta2[0])
        it = 0
        last = math.inf
        while True:
            if not math.isfinite(f):
                return FAILED, it
            grads_hessian(data, theta2, True, g2, H, scratch)
            for i in range(d):
                acc = 0.0
                for k in range(d):
                    H[i, k] += P0[i, k]
                    acc += P0[i, k] * theta2[0, k]
                g2[0, i] = g2[0, i] + acc - b0[i]
            if not cholesky(H, L):
                return FAILED, it
            tnorm = 0.0
            for i in range(d):
                tnorm += theta2[0, i] * theta2[0, i]
            tnorm = math.sqrt(tnorm)
            if last <= tol * max(1.0, tnorm):
                return CONVERGED, it
            if it >= max_iter:
                return MAX_ITER, it
            for i in range(d):
                step[i] = -g2[0, i]
            solve_lower(L, step, step)
            solve_lower_t(L, step, step)
            snorm = 0.0
            for i in range(d):
                snorm += step[i] * step[i]
            snorm = math.sqrt(snorm)
            if not math.isfinite(snorm):
                return FAILED, it
            t = 1.0
            slack = 1e-12 * (1.0 + abs(f))
            f_new = f
            for _ in range(MAX_HALVINGS):
                for i in range(d):
                    trial2[0, i] = theta2[0, i] + t * step[i]
                f_new = value(data, trial2[0], scratch) + half_quadratic(P0, b0, trial2[0])
                if f_new <= f + slack:
                    break
                t *= 0.5
            for i in range(d):
                theta2[0, i] = trial2[0, i]
            f = f_new
            last = snorm
            it += 1

    return newton
