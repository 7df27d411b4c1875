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

from vits_ref.config import cpu_overload, cuda_twin, inline_before_typing


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


def _take_carray(buf, o, n):
    """:func:`take` on the CPU: a ``numba.carray`` on the buffer's address."""
    return carray(_address(buf.ctypes.data + 8 * o), (n,), np.float64), o + n


def _take2_carray(buf, o, r, c):
    """:func:`take2` on the CPU."""
    return carray(_address(buf.ctypes.data + 8 * o), (r, c), np.float64), o + r * c


def _take3_carray(buf, o, k, r, c):
    """:func:`take3` on the CPU."""
    return (carray(_address(buf.ctypes.data + 8 * o), (k, r, c), np.float64),
            o + k * r * c)


# On the CPU, a call of take, take2 or take3 is replaced by the carray form's IR before
# typing, as the kernel bodies are (vits_ref.config.inline_before_typing). An overload
# inlined after typing compiled each of them in full first (with numba's carray
# implementation, twice) only to throw it away: about 1 s of CPU in every process. The
# overloads stay for a call the untyped pass cannot resolve; the Python functions keep
# their slices (plain Python, the CUDA simulator, the CUDA copies).
@cpu_overload(take, inline="always")
def _take_cpu(buf, o, n):
    return _take_carray


@cpu_overload(take2, inline="always")
def _take2_cpu(buf, o, r, c):
    return _take2_carray


@cpu_overload(take3, inline="always")
def _take3_cpu(buf, o, k, r, c):
    return _take3_carray


for _f, _cpu in ((take, _take_carray), (take2, _take2_carray), (take3, _take3_carray)):
    inline_before_typing(_f, _cpu)


# CUDA compiles the slices above (a copy of each, registered with numba-cuda alone: the
# CPU overloads never reach a CUDA compilation; vits_ref.config.cuda_twin)
for _f in (take, take2, take3):
    cuda_twin(_f)(_f)
