"""Cooperative versions of :mod:`.philox`'s fills (a CUDA block's threads split the
Philox blocks) and of the environments' round primitives of :mod:`.bandit_streams`.

Every function here has the signature and the result of its namesake in :mod:`.philox`
and is called by *every* thread of a 1-D block with the same arguments (as
:mod:`.coop_linalg`'s primitives are): it opens with a barrier (whatever the caller wrote
before is visible), gives Philox block ``j`` (output elements ``4j .. 4j + 3``) to
thread ``j mod blockDim.x`` and closes with a barrier (the filled array is visible to
every thread). Each element's value depends only on the key, the counter and its index,
so the cooperative fill equals the serial one bit for bit whatever the number of threads
(``tests/test_philox.py``, on the simulator).

The round primitives (:func:`pool_contexts`, :func:`linear_means`,
:func:`bernoulli_rewards`, :func:`noisy_means`) follow the same rules: a barrier at open
and close, the entries (or arms) split over ``threadIdx.x`` with stride ``blockDim.x``,
each entry computed by the serial loop's arithmetic in its order, so equal to the serial
body bit for bit (``tests/test_streams_block.py``). With them the environments' round
bodies store only through primitives, and the streamed loop is block-safe
(:func:`vits_ref.drivers.cuda_coop.block_safe_streams`).

Used through :data:`REPLACEMENTS` (``{serial body: cooperative body}``), which the
block-per-run driver (:mod:`vits_ref.drivers.cuda_coop`) applies when it rebuilds a body;
this module imports ``numba.cuda`` (through :mod:`.coop_linalg`) and is never imported
by the CPU path.
"""

from vits_ref.config import kernel

from . import bandit_streams, philox
from .bandit_streams import arm_mean
from .coop_linalg import _nthreads, _sync, _tid
from .philox import bounded_block, normal_block, uniform_block


def _split_blocks(block):
    """The cooperative twin of a :mod:`.philox` fill by ``block(k0, k1, c0, c1, j, out)``
    (elements ``4j .. 4j + 3``): Philox block ``j`` to thread ``j mod blockDim.x``."""

    @kernel
    def fill(k0, k1, c0, c1, out):
        _sync()
        for j in range(_tid(), (out.shape[0] + 3) // 4, _nthreads()):
            block(k0, k1, c0, c1, j, out)
        _sync()

    return fill


#: :func:`.philox.fill_uniforms`, the Philox blocks split over the CUDA block.
fill_uniforms = _split_blocks(uniform_block)
#: :func:`.philox.fill_normals`, the Philox blocks split over the CUDA block.
fill_normals = _split_blocks(normal_block)


@kernel
def fill_bounded(k0, k1, c0, c1, m, out):
    """:func:`.philox.fill_bounded`, the Philox blocks split over the CUDA block."""
    _sync()
    for j in range(_tid(), (out.shape[0] + 3) // 4, _nthreads()):
        bounded_block(k0, k1, c0, c1, j, m, out)
    _sync()


# ------------------------------------------------ the environments' round primitives


@kernel
def pool_contexts(pool, zeta, idx, X):
    """:func:`.bandit_streams.pool_contexts`, the entries ``(a, i)`` split over the block."""
    _sync()
    K, d = X.shape
    for e in range(_tid(), K * d, _nthreads()):
        a = e // d
        i = e - a * d
        X[a, i] = zeta * X[a, i] + pool[int(idx[a]), i]
    _sync()


@kernel
def linear_means(X, theta, code, means):
    """:func:`.bandit_streams.linear_means`, one arm per thread (stride ``blockDim.x``),
    each arm's sum in index order from 0.0 as the serial loop."""
    _sync()
    for a in range(_tid(), X.shape[0], _nthreads()):
        means[a] = arm_mean(X, theta, code, a)
    _sync()


@kernel
def bernoulli_rewards(means, rewards):
    """:func:`.bandit_streams.bernoulli_rewards`, the arms split over the block (each
    entry read and written by one thread)."""
    _sync()
    for a in range(_tid(), means.shape[0], _nthreads()):
        rewards[a] = 1.0 if rewards[a] < means[a] else 0.0
    _sync()


@kernel
def noisy_means(means, noise_scale, eps, rewards):
    """:func:`.bandit_streams.noisy_means`, the arms split over the block."""
    _sync()
    for a in range(_tid(), means.shape[0], _nthreads()):
        rewards[a] = means[a] + noise_scale * eps
    _sync()


REPLACEMENTS = {
    philox.fill_uniforms: fill_uniforms,
    philox.fill_normals: fill_normals,
    philox.fill_bounded: fill_bounded,
    bandit_streams.pool_contexts: pool_contexts,
    bandit_streams.linear_means: linear_means,
    bandit_streams.bernoulli_rewards: bernoulli_rewards,
    bandit_streams.noisy_means: noisy_means,
}
