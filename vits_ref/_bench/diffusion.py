"""The learned diffusion prior: compiled chain, training and DiffTS vs NumPy.

Measured in one process, calls interleaved (:func:`vits_ref._bench.timing.median_times`),
so the machine's drift hits both sides:

- **reverse chain**, per stage: the compiled plain chain of a learned
  :class:`~vits_ref.diffusion.DiffusionPrior` (``T = 100``, ``d = 2``, hidden (32, 32);
  :func:`vits_ref.diffusion.chain.reverse_chain`, ``prange`` over draws) against the same
  chain in NumPy, vectorised over the draws one stage at a time
  (:func:`vits_ref.reference.ddpm.reverse_chain`), on the same normals, for 1 draw (a
  Thompson draw) and for 1000 draws;
- **one training epoch** of every stage (``T = 100``, N samples, batch 128): the
  compiled ``prange``-over-stages driver (:func:`vits_ref.drivers.cpu.ddpm_train_epoch`)
  against :func:`vits_ref.reference.ddpm.train_epoch`, same permutations and noise;
- **one DiffTS round** (linear model, 20 observations in the statistics): one LaplaceDPS
  draw of :class:`vits_ref.DiffTS` (``sample(1)``, which draws its normals) against
  :func:`vits_ref.reference.diffusion.laplace_linear` with the network of
  :mod:`vits_ref.reference.ddpm` (per-stage solves and one-row forward passes in NumPy).

Numba's thread count is the caller's (``python -m vits_ref bench`` runs this section with
one thread); set ``OPENBLAS_NUM_THREADS=1`` for single-thread figures::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import diffusion; diffusion.main()"
"""

import numba
import numpy as np

from ..diffusion import DiffusionPrior, chain
from ..drivers import cpu
from ..reference import ddpm as rddpm
from .timing import blas_threads, median_times, ratio_text

DIM, N_STAGES, HIDDEN = 2, 100, (32, 32)


def prior(dim=DIM, n_stages=N_STAGES, hidden=HIDDEN, n_train=2000, epochs=2, seed=0):
    """A :class:`DiffusionPrior` fitted briefly on correlated Gaussian samples (the weights'
    values do not change the cost; a short fit makes them realistic)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    x = rng.standard_normal((n_train, dim)) @ A.T + 0.5
    return DiffusionPrior(dim, n_stages=n_stages, hidden=hidden, seed=seed).fit(
        x, epochs=epochs, progress=False)


def numpy_eps(p):
    """The prior's ``eps_t`` at the rows of ``S``, in NumPy (:mod:`vits_ref.reference.ddpm`)."""
    params = p.eps_params
    return lambda t, S: rddpm.eps(params, t, S)


class ChainCompiled:
    """``n`` draws of the compiled reverse chain on fixed normals."""

    def __init__(self, p, z):
        self.prior, self.z = p, z

    def __call__(self):
        return chain.reverse_chain(self.prior, self.z)


class ChainNumpy:
    """The same ``n`` draws in NumPy, vectorised over the draws."""

    def __init__(self, p, z):
        sch = p.schedule
        self.args = (numpy_eps(p), sch.alpha, sch.abar, sch.btilde, z[:, -1],
                     np.ascontiguousarray(np.moveaxis(z[:, :-1], 1, 0)))

    def __call__(self):
        return rddpm.reverse_chain(*self.args)


def epoch_inputs(p, n_train, batch=128, seed=1):
    """One epoch's arguments of the training driver (fresh Adam state, step 0)."""
    rng = np.random.default_rng(seed)
    T, d = p.n_stages, p.dim
    s0 = rng.standard_normal((n_train, d))
    ab = p.schedule.abar[1:]
    ca, cb = np.sqrt(ab), np.sqrt(1.0 - ab)
    shift = ca[:, None] * s0.mean(0)
    inv_scale = 1.0 / np.sqrt(ab[:, None] * s0.var(0) + 1.0 - ab[:, None])
    idx = rng.permuted(np.broadcast_to(np.arange(n_train, dtype=np.int64), (T, n_train)),
                       axis=1)
    noise = rng.standard_normal((T, n_train, d))
    zeros = tuple(np.zeros_like(a) for a in p.eps_params)
    return (p.eps_params, zeros, zeros, ca, cb, shift, inv_scale, s0, idx, noise, batch)


class EpochCompiled:
    """One compiled epoch of every stage, from copies of the same state."""

    def __init__(self, inputs, lr=1e-2):
        self.inputs, self.lr = inputs, lr
        self.losses = np.empty(inputs[3].shape[0])
        self.run = cpu.ddpm_train_epoch()

    def __call__(self):
        params, m, v, ca, cb, shift, inv_scale, s0, idx, noise, batch = self.inputs
        P, M, V = (tuple(a.copy() for a in x) for x in (params, m, v))
        self.run(P, M, V, 0, ca, cb, shift, inv_scale, s0, idx, noise, batch, self.lr,
                 rddpm.BETA1, rddpm.BETA2, rddpm.ADAM_EPS, self.losses)
        return P


class EpochNumpy:
    """The same epoch in NumPy."""

    def __init__(self, inputs, lr=1e-2):
        self.inputs, self.lr = inputs, lr

    def __call__(self):
        params, m, v, ca, cb, shift, inv_scale, s0, idx, noise, batch = self.inputs
        return rddpm.train_epoch(params, m, v, 0, ca, cb, shift, inv_scale, s0, idx, noise,
                                 batch, self.lr)[0]


def diffts_engine(p, n_obs=20, sigma=2.0, seed=0):
    """A linear :class:`vits_ref.DiffTS` on ``p`` with ``n_obs`` observations."""
    from ..inference import DiffTS

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, p.dim)) / np.sqrt(p.dim)
    y = X @ np.full(p.dim, 0.5) + sigma * rng.standard_normal(n_obs)
    return DiffTS(p, model="linear", sigma=sigma, seed=seed).update(X, y)


class DiffTSRound:
    """One Thompson draw of the DiffTS engine (LaplaceDPS, linear): ``sample(1)``."""

    def __init__(self, eng):
        self.engine = eng

    def __call__(self):
        return self.engine.sample(1)


class DiffTSRoundNumpy:
    """The same draw in NumPy (:func:`vits_ref.reference.diffusion.laplace_linear`)."""

    def __init__(self, eng, seed=3):
        from ..reference import diffusion as rdiff

        self.rdiff = rdiff
        G, h, _ = eng.stats
        self.prior, self.G, self.h, self.w = eng.prior, G, h, eng.model.eta
        params = eng.prior.eps_params
        self.eps = lambda t, s: rddpm.eps(params, t, s[None])[0]
        self.rng = np.random.default_rng(seed)

    def __call__(self):
        z = self.rng.standard_normal((self.prior.n_stages + 1, self.prior.dim))
        return self.rdiff.laplace_linear(self.prior, self.G, self.h, self.w, z, eps=self.eps)


def chain_stats(p, n, repeats):
    """Microseconds per stage of the compiled and the NumPy chain for ``n`` draws, their
    ratio and the largest difference of the draws (same normals)."""
    z = chain.normals(p, n, seed=2)
    fns = [ChainCompiled(p, z), ChainNumpy(p, z)]
    diff = float(np.max(np.abs(fns[0]() - fns[1]())))
    t = median_times(fns, repeats)
    T = p.n_stages
    return {"compiled": 1e6 * t[0] / T, "numpy": 1e6 * t[1] / T, "ratio": t[1] / t[0],
            "max_abs_diff": diff}


def epoch_stats(p, n_train, repeats):
    """Seconds per training epoch (every stage), compiled and NumPy, and the ratio."""
    inputs = epoch_inputs(p, n_train)
    fns = [EpochCompiled(inputs), EpochNumpy(inputs)]
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(fns[0](), fns[1](), strict=True))
    t = median_times(fns, repeats)
    return {"compiled": t[0], "numpy": t[1], "ratio": t[1] / t[0], "max_abs_diff": diff}


def diffts_stats(p, repeats):
    """Milliseconds per DiffTS draw (linear LaplaceDPS), compiled and NumPy, and the ratio."""
    eng = diffts_engine(p)
    fns = [DiffTSRound(eng), DiffTSRoundNumpy(eng)]
    for fn in fns:
        fn()
    t = median_times(fns, repeats)
    return {"compiled": 1e3 * t[0], "numpy": 1e3 * t[1], "ratio": t[1] / t[0]}


def main(quick=False):
    """Print the chain's cost per stage, one training epoch and one DiffTS round, each
    compiled and NumPy, with their ratios."""
    repeats = 3 if quick else 11
    n_train = 1000 if quick else 4000
    p = prior()
    print(f"Learned diffusion prior (T = {N_STAGES}, d = {DIM}, hidden {HIDDEN}), medians of "
          f"{repeats} interleaved calls; Numba threads {numba.get_num_threads()}, BLAS "
          f"threads {blas_threads() or 'unknown'}")
    for n in (1, 1000):
        s = chain_stats(p, n, repeats if n > 1 else 5 * repeats)
        print(f"  reverse chain, {n:4d} draw(s): compiled {s['compiled']:8.2f} us/stage   "
              f"NumPy {s['numpy']:8.2f} us/stage   NumPy / compiled = "
              f"{ratio_text(s['ratio'], '.1f')}   "
              f"(max |diff| {s['max_abs_diff']:.1e})")
    s = epoch_stats(p, n_train, max(3, repeats // 3))
    print(f"  training epoch (N = {n_train}, batch 128, all {N_STAGES} stages): compiled "
          f"{s['compiled']:.3f} s   NumPy {s['numpy']:.3f} s   NumPy / compiled = "
          f"{ratio_text(s['ratio'], '.1f')}   (max |diff| {s['max_abs_diff']:.1e})")
    s = diffts_stats(p, repeats)
    print(f"  DiffTS round (one linear LaplaceDPS draw, 20 observations): compiled "
          f"{s['compiled']:.3f} ms   NumPy {s['numpy']:.1f} ms   NumPy / compiled = "
          f"{ratio_text(s['ratio'], '.0f')}")
