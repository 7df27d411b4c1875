"""Cooperative versions of :mod:`.philox`'s fills: a CUDA block's threads split the blocks.

Every function here has the signature and the result of its namesake in :mod:`.philox`
and is called by *every* thread of a 1-D block with the same arguments (as
:mod:`.coop_linalg`'s primitives are): it opens with a barrier (whatever the caller wrote
before is visible), gives Philox block ``j`` (output elements ``4j .. 4j + 3``) to
thread ``j mod blockDim.x`` and closes with a barrier (the filled array is visible to
every thread). Each element's value depends only on the key, the counter and its index,
so the cooperative fill equals the serial one bit for bit whatever the number of threads
(``tests/test_philox.py``, on the simulator).

Used through :data:`REPLACEMENTS` (``{serial body: cooperative body}``), which the
block-per-run driver (:mod:`vits_ref.drivers.cuda_coop`) applies when it rebuilds a body;
this module imports ``numba.cuda`` (through :mod:`.coop_linalg`) and is never imported
by the CPU path.
"""

from vits_ref.config import kernel

from . import philox
from .coop_linalg import _nthreads, _sync, _tid
from .philox import bounded_block, normal_block, uniform_block


@kernel
def fill_uniforms(k0, k1, c0, c1, out):
    """:func:`.philox.fill_uniforms`, the Philox blocks split over the CUDA block."""
    _sync()
    for j in range(_tid(), (out.shape[0] + 3) // 4, _nthreads()):
        uniform_block(k0, k1, c0, c1, j, out)
    _sync()


@kernel
def fill_normals(k0, k1, c0, c1, out):
    """:func:`.philox.fill_normals`, the Philox blocks split over the CUDA block."""
    _sync()
    for j in range(_tid(), (out.shape[0] + 3) // 4, _nthreads()):
        normal_block(k0, k1, c0, c1, j, out)
    _sync()


@kernel
def fill_bounded(k0, k1, c0, c1, m, out):
    """:func:`.philox.fill_bounded`, the Philox blocks split over the CUDA block."""
    _sync()
    for j in range(_tid(), (out.shape[0] + 3) // 4, _nthreads()):
        bounded_block(k0, k1, c0, c1, j, m, out)
    _sync()


REPLACEMENTS = {
    philox.fill_uniforms: fill_uniforms,
    philox.fill_normals: fill_normals,
    philox.fill_bounded: fill_bounded,
}
