"""THE PEER (not the library): VITS-II and LinTS bandit runs in JAX, for the GPU benchmark.

Written for :mod:`vits_ref._bench.cuda` as the JAX peer of the fused loop
(:mod:`vits_ref.kernels.bandit` with :mod:`vits_ref.kernels.vits` /
:mod:`vits_ref.kernels.lints`): the same algorithm on the same pre-drawn inputs (contexts,
means, rewards, the policy's noise), ``jax.vmap`` over runs and ``lax.scan`` over rounds
and inner steps, float64. It runs on JAX's default backend (the GPU when jaxlib has CUDA).

VITS-II on the linear potential (docs/algorithms.md section 2; the fused loop's order):
per round the Thompson draw ``theta = mu + B z``, the arm ``argmax X theta``, the
statistics ``eta V += eta x x^T``, ``eta b += eta r x``, then ``S`` steps with
``h_t = h0 / (eta t)`` (the ``decayed`` schedule)::

    g   = (eta V) B mean_m(eps_m) + (eta V) mu - eta b
    mu <- mu - h_mu g
    B  <- B - h (eta V) B + h C^T
    C  <- C - h C (C^T C - eta V)          (B, C from the old state)

LinTS: the lower factor ``L`` of ``V = lam I + sum x x^T`` by rank-one updates and the
draw ``theta = L^-T (L^-1 b + z / sqrt(eta))``.

Only the regret and the arms are returned (no KL, no divergence status: a diverged run
shows as NaN scores, argmax 0). Arms agree with the library's up to rounding-induced
argmax flips; :func:`vits_ref._bench.cuda.main` prints the fraction of equal arms.
"""


def available():
    """Whether JAX can be imported (the peer is skipped with a line otherwise)."""
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def _jax():
    import os

    # on a GPU, take device memory as needed (JAX's default preallocates 75% of it, which
    # would starve the numba-cuda measurements of the same benchmark)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    return jax, jnp, lax


def backend():
    """JAX's default backend name (``"gpu"``, ``"cpu"``, ...)."""
    jax, _, _ = _jax()
    return jax.default_backend()


def vits_ii_runs(eta, lam, h0_mu, h0):
    """A jitted ``f(contexts, means, rewards, init_noise, sel_noise, step_noise) ->
    (regret (R, T), arms (R, T))`` for VITS-II with the decayed schedule.

    Shapes as the fused loop's: ``contexts`` (R, T, K, d), ``means``/``rewards``
    (R, T, K), ``init_noise`` (R, d), ``sel_noise`` (R, T, d), ``step_noise``
    (R, T, S, M, d).
    """
    jax, jnp, lax = _jax()
    s0 = (lam * eta) ** 0.5

    def run(contexts, means, rewards, init_noise, sel_noise, step_noise):
        d = contexts.shape[-1]
        eye = jnp.eye(d)
        state = (eta * lam * eye, jnp.zeros(d), init_noise / s0, eye / s0, s0 * eye)

        def round_(state, inp):
            etaV, eta_b, mu, B, C = state
            X, m, r, z, eps, t = inp
            theta = mu + B @ z
            arm = jnp.argmax(X @ theta)
            reg = m.max() - m[arm]
            x = X[arm]
            etaV = etaV + eta * jnp.outer(x, x)
            eta_b = eta_b + eta * r[arm] * x
            h_mu = h0_mu / (eta * t)
            h = h0 / (eta * t)

            def step(s, e):
                mu, B, C = s
                W1 = etaV @ B
                g = W1 @ e.mean(axis=0) + etaV @ mu - eta_b
                CtC = C.T @ C - etaV
                return (mu - h_mu * g, B + h * (C.T - W1), C - h * (C @ CtC)), None

            (mu, B, C), _ = lax.scan(step, (mu, B, C), eps)
            return (etaV, eta_b, mu, B, C), (reg, arm)

        T = contexts.shape[0]
        ts = jnp.arange(1, T + 1, dtype=jnp.float64)
        _, (reg, arms) = lax.scan(round_, state, (contexts, means, rewards, sel_noise,
                                                  step_noise, ts))
        return reg, arms

    return jax.jit(jax.vmap(run))


def lints_runs(eta, lam):
    """A jitted ``f(contexts, means, rewards, sel_noise) -> (regret, arms)`` for LinTS
    (shapes as in :func:`vits_ii_runs`)."""
    jax, jnp, lax = _jax()
    from jax.scipy.linalg import solve_triangular

    def chol_update(L, x):
        d = x.shape[0]
        idx = jnp.arange(d)

        def body(k, carry):
            L, w = carry
            lkk, xk = L[k, k], w[k]
            r = jnp.sqrt(lkk * lkk + xk * xk)
            c, s, ic = r / lkk, xk / lkk, lkk / r
            below = idx > k
            col = jnp.where(below, (L[:, k] + s * w) * ic, L[:, k])
            col = col.at[k].set(r)
            w = jnp.where(below, c * w - s * col, w)
            return L.at[:, k].set(col), w

        L, _ = lax.fori_loop(0, d, body, (L, x))
        return L

    def run(contexts, means, rewards, sel_noise):
        d = contexts.shape[-1]
        state = (jnp.sqrt(lam) * jnp.eye(d), jnp.zeros(d))

        def round_(state, inp):
            L, b = state
            X, m, r, z = inp
            u = solve_triangular(L, b, lower=True) + z / jnp.sqrt(eta)
            theta = solve_triangular(L, u, lower=True, trans=1)
            arm = jnp.argmax(X @ theta)
            x = X[arm]
            return (chol_update(L, x), b + r[arm] * x), (m.max() - m[arm], arm)

        _, (reg, arms) = lax.scan(round_, state, (contexts, means, rewards, sel_noise))
        return reg, arms

    return jax.jit(jax.vmap(run))
