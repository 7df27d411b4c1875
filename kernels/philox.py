"""Philox4x64-10, a counter-based generator, and the fills built on it (one body, two targets).

Philox4x64-10 (Salmon, Moraes, Dror and Shaw 2011, "Parallel random numbers: as easy as
1, 2, 3", SC'11, section 4) maps a 256-bit counter ``c = (c0, c1, c2, c3)`` and a 128-bit
key ``k = (k0, k1)`` to four 64-bit words by ten rounds of

    (lo0, hi0) = M0 * c0,   (lo1, hi1) = M1 * c2          (64 x 64 -> 128-bit products)
    c = (hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0)

with the key bumped by the Weyl constants ``(W0, W1)`` between rounds (mod 2^64). There is
no state: a value depends only on (key, counter), so any split of the work over threads,
blocks, chunks or batches gives the same numbers. NumPy ships the same generator
(``numpy.random.Philox``, whose ``random_raw`` returns the words of counter ``c + 1``), an
exact independent reference for the raw words (``tests/test_philox.py``).

The 64 x 64 -> 128-bit product is written with 32-bit halves (:func:`mulhilo`): four
32 x 32 -> 64-bit products and a few adds and shifts, portable to CUDA and to plain Python
(the simulator; no intermediate wraps, where NumPy's scalars would warn). On a GPU, where
a 64-bit ``mul.hi`` is itself several 32-bit multiply-adds, that costs about what the
native instruction does. On the CPU the halves made a Philox block cost about 60 ns
against 12 ns with one LLVM ``i128`` product (one ``mulx`` on x86-64; measured in one
process on this 2-core machine, one thread, 2 000 000 blocks), so the CPU target gets
that product (an overload of :func:`mulhilo`, and the native wrapping addition for
:func:`add64`): the same bits, checked against NumPy's Philox.

On top (``u64`` a raw word):

* :func:`uniform`: ``((u >> 12) + 0.5) 2^-52``, the midpoints of ``2^52`` equal bins of
  (0, 1): never 0 or 1, exactly symmetric (``1 - u`` is representable), every value exact.
  A 53-bit grid ``k 2^-53`` cannot avoid both ends with equal spacing (``(k + 0.5)
  2^-53`` rounds to 1 at the top), so 52 bits are used;
* normals by the Box-Muller transform (Box and Muller 1958, "A note on the generation of
  random normal deviates", Ann. Math. Stat. 29(2)): ``(u1, u2)`` uniforms give
  ``sqrt(-2 ln u1) cos(2 pi u2)`` and ``sqrt(-2 ln u1) sin(2 pi u2)``, exactly two
  independent standard normals; a block's four words give four normals;
* bounded integers (:func:`bounded`): Lemire's multiply-shift ``floor(u n / 2^64)``
  (Lemire 2019, "Fast random integer generation in an interval", ACM TOMACS 29(1)),
  without the rejection step (a rejection would make a value depend on how many words
  were rejected before it): each value in ``[0, n)`` has probability ``floor(2^64 / n)``
  or ``ceil(2^64 / n)`` over ``2^64``, a relative bias below ``n 2^-64`` (3e-18 for a
  pool of 50).

Fills (:func:`fill_uniforms`, :func:`fill_normals`, :func:`fill_bounded`) write a 1-D
array from the counters ``(c0, c1, j, 0)`` for blocks ``j = 0, 1, ...``: element ``i``
comes from block ``i // 4``, word ``i % 4`` (normals: the Box-Muller pair of words
``(0, 1)`` or ``(2, 3)`` of block ``i // 4``), so its value depends only on the key, the
counter and ``i``. :mod:`.coop_philox` has their cooperative twins (a CUDA block's
threads split the blocks). docs/streams.md gives the layout of the simulation's streams.
"""

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from vits_ref.config import cpu_overload, cuda_twin, kernel

#: Philox4x64's multipliers and Weyl key increments (Salmon et al. 2011, table 2;
#: Random123's ``PHILOX_M4x64_0/1`` and ``PHILOX_W64_0/1``, NumPy's ``philox.h``).
M0 = np.uint64(0xD2E7470EE14C6C93)
M1 = np.uint64(0xCA5A826395121157)
W0 = np.uint64(0x9E3779B97F4A7C15)
W1 = np.uint64(0xBB67AE8584CAA73B)
ROUNDS = 10

_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S12 = np.uint64(12)
_ZERO = np.uint64(0)
_TWO_M52 = 2.0 ** -52
TWO_PI = 2.0 * math.pi


def mulhilo(a, b):
    """``(lo, hi)``: the 128-bit product ``a b`` of two uint64, from 32-bit halves.

    This body is what CUDA and plain Python (the simulator) run; on the CPU the same
    product is one 64 x 64 -> 128-bit multiplication (an LLVM ``i128`` product: one
    ``mul`` on x86-64), with the same result (both exact).
    """
    a_lo = a & _LO32
    a_hi = a >> _S32
    b_lo = b & _LO32
    b_hi = b >> _S32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _S32) + (p1 & _LO32) + (p2 & _LO32)
    hi = p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    lo = ((mid & _LO32) << _S32) | (p0 & _LO32)
    return lo, hi


@intrinsic
def _mul128(typingctx, a, b):
    """``(lo, hi)`` of the product of two uint64 as one LLVM ``i128`` multiplication."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128, i64 = ir.IntType(128), ir.IntType(64)
        p = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        lo = builder.trunc(p, i64)
        hi = builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), i64)
        return context.make_tuple(builder, signature.return_type, [lo, hi])

    return sig, codegen


@cpu_overload(mulhilo, inline="always")
def _mulhilo_cpu(a, b):
    def impl(a, b):
        return _mul128(np.uint64(a), np.uint64(b))
    return impl


cuda_twin(mulhilo)(mulhilo)  # CUDA compiles the halves (vits_ref.config.cuda_twin)


def add64(a, b):
    """``a + b`` mod ``2^64`` of two uint64, from 32-bit halves (nothing wraps, so plain
    Python's NumPy scalars do not warn); compiled (CPU and CUDA), the native wrapping
    addition."""
    lo = (a & _LO32) + (b & _LO32)
    hi = (a >> _S32) + (b >> _S32) + (lo >> _S32)
    return ((hi & _LO32) << _S32) | (lo & _LO32)


@cuda_twin(add64)
def _add64_native(a, b):
    return a + b


@cpu_overload(add64, inline="always")
def _add64_cpu(a, b):
    return _add64_native


@kernel
def philox4x64(c0, c1, c2, c3, k0, k1):
    """The four words of Philox4x64-10 at counter ``(c0, c1, c2, c3)``, key ``(k0, k1)``
    (all uint64)."""
    for r in range(ROUNDS):
        if r > 0:
            k0 = add64(k0, W0)
            k1 = add64(k1, W1)
        lo0, hi0 = mulhilo(M0, c0)
        lo1, hi1 = mulhilo(M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@kernel(inline=True)
def uniform(u):
    """A uint64 word to a double in (0, 1): ``((u >> 12) + 0.5) 2^-52``."""
    return (float(u >> _S12) + 0.5) * _TWO_M52


@kernel(inline=True)
def bounded(u, n):
    """A uint64 word to an integer in ``[0, n)``: ``floor(u n / 2^64)`` (bias < n 2^-64)."""
    _, hi = mulhilo(u, np.uint64(n))
    return int(hi)


@kernel(inline=True)
def box_muller(w0, w1):
    """Two standard normals from two words (their uniforms ``u1``, ``u2``)."""
    rad = math.sqrt(-2.0 * math.log(uniform(w0)))
    ang = TWO_PI * uniform(w1)
    return rad * math.cos(ang), rad * math.sin(ang)


@kernel(inline=True)
def _store4(out, i, n, v0, v1, v2, v3):
    """``out[i:i + 4] = (v0, v1, v2, v3)``, cut at ``n``."""
    out[i] = v0
    if i + 1 < n:
        out[i + 1] = v1
    if i + 2 < n:
        out[i + 2] = v2
    if i + 3 < n:
        out[i + 3] = v3


@kernel(inline=True)
def uniform_block(k0, k1, c0, c1, j, out):
    """Elements ``4j .. 4j + 3`` of :func:`fill_uniforms` (those below ``out``'s size)."""
    w0, w1, w2, w3 = philox4x64(np.uint64(c0), np.uint64(c1), np.uint64(j), _ZERO, k0, k1)
    _store4(out, 4 * j, out.shape[0], uniform(w0), uniform(w1), uniform(w2), uniform(w3))


@kernel(inline=True)
def normal_block(k0, k1, c0, c1, j, out):
    """Elements ``4j .. 4j + 3`` of :func:`fill_normals` (those below ``out``'s size)."""
    w0, w1, w2, w3 = philox4x64(np.uint64(c0), np.uint64(c1), np.uint64(j), _ZERO, k0, k1)
    z0, z1 = box_muller(w0, w1)
    n = out.shape[0]
    if 4 * j + 2 < n:
        z2, z3 = box_muller(w2, w3)
    else:  # the last block's second pair is not needed
        z2, z3 = 0.0, 0.0
    _store4(out, 4 * j, n, z0, z1, z2, z3)


@kernel(inline=True)
def bounded_block(k0, k1, c0, c1, j, m, out):
    """Elements ``4j .. 4j + 3`` of :func:`fill_bounded` (those below ``out``'s size)."""
    w0, w1, w2, w3 = philox4x64(np.uint64(c0), np.uint64(c1), np.uint64(j), _ZERO, k0, k1)
    _store4(out, 4 * j, out.shape[0], bounded(w0, m), bounded(w1, m), bounded(w2, m),
            bounded(w3, m))


@kernel
def fill_uniforms(k0, k1, c0, c1, out):
    """``out[i]`` (1-D) = uniform in (0, 1) of word ``i % 4`` of counter ``(c0, c1, i // 4,
    0)`` under key ``(k0, k1)`` (uint64)."""
    for j in range((out.shape[0] + 3) // 4):
        uniform_block(k0, k1, c0, c1, j, out)


@kernel
def fill_normals(k0, k1, c0, c1, out):
    """``out[i]`` (1-D) = standard normal: Box-Muller of words ``(0, 1)`` (``i % 4`` in
    {0, 1}) or ``(2, 3)`` of counter ``(c0, c1, i // 4, 0)`` under key ``(k0, k1)``."""
    for j in range((out.shape[0] + 3) // 4):
        normal_block(k0, k1, c0, c1, j, out)


@kernel
def fill_bounded(k0, k1, c0, c1, m, out):
    """``out[i]`` (1-D, integer or float) = integer in ``[0, m)`` of word ``i % 4`` of
    counter ``(c0, c1, i // 4, 0)`` under key ``(k0, k1)`` (:func:`bounded`)."""
    for j in range((out.shape[0] + 3) // 4):
        bounded_block(k0, k1, c0, c1, j, m, out)


@kernel(inline=True)
def normal_at(k0, k1, c0, c1, i):
    """Element ``i`` of :func:`fill_normals` alone (the same value)."""
    w0, w1, w2, w3 = philox4x64(np.uint64(c0), np.uint64(c1), np.uint64(i // 4), _ZERO,
                                k0, k1)
    q = i % 4
    if q < 2:
        z0, z1 = box_muller(w0, w1)
    else:
        z0, z1 = box_muller(w2, w3)
    return z0 if q % 2 == 0 else z1
