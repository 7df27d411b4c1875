"""Accuracy: KL from the VITS Gaussians to the exact posterior (closed form), in nats.

A fixed ill-conditioned linear model: d = 10, n = 100 observations whose features have
squared singular values log-spaced over [1, 1000] (``V = I + X^T X`` has condition
number about 500), eta = lam = 1. One ``update`` of the ``vits_ref.VITS`` engine with the
``constant`` schedule runs ``n_steps`` steps of size ``h = 0.05 / lmax(eta V)`` from the
prior; the figure is ``KL(q || p)`` with ``p`` from ``vits_ref.gaussian.linear_posterior``.
Seeded, so deterministic for a given build; a change means the numerics changed.

The step is small because the Hessian-free variant (20 draws) diverges on this model
within 100 steps at ``h = 0.1 / lmax``; VITS-I/II are stable far beyond. With one draw per
step the mean keeps a noise floor that grows with ``h``, so the KL of VITS-I/II stops
falling once the bias is below it.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import vits_ref  # noqa: E402
from vits_ref.gaussian import kl, linear_posterior  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

DIM = 10
N_OBS = 100


def ill_conditioned_model(seed=0):
    """``(X (n, d), r (n,))`` with squared singular values of ``X`` log-spaced 1..1000."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((N_OBS, DIM)))
    W, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    s = np.sqrt(np.logspace(0.0, 3.0, DIM))
    X = (U * s) @ W.T
    theta = rng.standard_normal(DIM)
    r = X @ theta + rng.standard_normal(N_OBS)
    return X, r


class TrackVitsKL:
    """``KL(q || p)`` after one update of ``n_steps`` constant-size VITS steps (nats)."""

    params = (("I", "II", "hessian_free"), (100, 1000, 10000, 30000))
    param_names = ["variant", "n_steps"]
    unit = "nats"
    timeout = TIMEOUT

    def setup(self, variant, n_steps):
        single_thread()
        self.X, self.r = ill_conditioned_model()
        self.mean_p, self.cov_p = linear_posterior(self.X, self.r, eta=1.0, lam=1.0)
        V = np.eye(DIM) + self.X.T @ self.X
        self.h = 0.05 / np.linalg.eigvalsh(V)[-1]

    def track_kl_to_posterior(self, variant, n_steps):
        eng = vits_ref.VITS(DIM, variant=variant, eta=1.0, lam=1.0, step_size=self.h,
                            n_steps=n_steps, n_mc=20 if variant == "hessian_free" else 1,
                            schedule="constant", seed=0)
        eng.update(self.X, self.r)
        return kl(eng.mean, eng.cov, self.mean_p, self.cov_p)
