"""Views of a flat state buffer: ``take``, ``take2``, ``take3``.

A policy's state in the fused bandit loop is carved from one flat float64 buffer per run
(:mod:`.bandit`). Written here as slices and reshapes (what CUDA and plain Python run); on
the CPU the same views are built by ``numba.carray`` on the buffer's address, without a
reference count of their own. The buffer outlives them (the driver holds it for the whole
run), and they cost nothing to pass around: Numba increments and decrements the shared
reference count of an ordinary view, an atomic operation, each time the array is taken
out of the state tuple, which cost the fused LMC round a third of its time.
"""

import numpy as np
from numba import carray
from numba.core import cgutils, types
from numba.extending import intrinsic

from vits_ref.config import cpu_overload, cuda_twin


def take(buf, o, n):
    """``(buf[o:o + n], o + n)``: the next ``n`` entries of a flat state buffer."""
    return buf[o:o + n], o + n


def take2(buf, o, r, c):
    """The next ``r c`` entries as an (r, c) view, and the offset after them."""
    return buf[o:o + r * c].reshape((r, c)), o + r * c


def take3(buf, o, k, r, c):
    """The next ``k r c`` entries as a (k, r, c) view, and the offset after them."""
    return buf[o:o + k * r * c].reshape((k, r, c)), o + k * r * c


@intrinsic
def _address(typingctx, addr):
    """The integer ``addr`` as a ``void*`` (for ``numba.carray``)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(addr), codegen


@cpu_overload(take, inline="always")
def _take_cpu(buf, o, n):
    def impl(buf, o, n):
        return carray(_address(buf.ctypes.data + 8 * o), (n,), np.float64), o + n
    return impl


@cpu_overload(take2, inline="always")
def _take2_cpu(buf, o, r, c):
    def impl(buf, o, r, c):
        return carray(_address(buf.ctypes.data + 8 * o), (r, c), np.float64), o + r * c
    return impl


@cpu_overload(take3, inline="always")
def _take3_cpu(buf, o, k, r, c):
    def impl(buf, o, k, r, c):
        return (carray(_address(buf.ctypes.data + 8 * o), (k, r, c), np.float64),
                o + k * r * c)
    return impl


# CUDA compiles the slices above (a copy of each, registered with numba-cuda alone: the
# CPU overloads never reach a CUDA compilation; vits_ref.config.cuda_twin)
for _f in (take, take2, take3):
    cuda_twin(_f)(_f)
