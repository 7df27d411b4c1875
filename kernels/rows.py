"""``index_rows(tup, r)``: row ``r`` of every array in a tuple (per-thread scratch).

A batch driver hands each thread its own slice of every scratch array. Scratch tuples
differ by potential (length and element types), so this is a compile-time overload that
unrolls over the tuple; a non-tuple (the linear potential's placeholder ``0``) passes
through. Plain Python (the CUDA simulator, tests) runs the stub below.
"""

from numba.core import types

from vits_ref.config import cpu_overload, cuda_twin


def index_rows(tup, r):
    """``tuple(a[r] for a in tup)``; ``tup`` itself when it is not a tuple."""
    if isinstance(tup, tuple):
        return tuple(a[r] for a in tup)
    return tup


def _impl(n):
    if n == 0:
        return lambda tup, r: ()
    body = ", ".join(f"tup[{i}][r]" for i in range(n))
    ns = {}
    exec(f"def impl(tup, r):\n    return ({body},)\n", ns)  # noqa: S102 - unrolled tuple
    return ns["impl"]


@cpu_overload(index_rows)
def _index_rows(tup, r):
    if isinstance(tup, types.BaseTuple):
        return _impl(len(tup))
    return lambda tup, r: tup


# CUDA types a copy of index_rows by the same function (vits_ref.config.cuda_twin)
cuda_twin(index_rows, typer=_index_rows)(index_rows)
