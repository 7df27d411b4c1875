"""Compiled drivers: the entry points that run kernel bodies on a target.

:mod:`.cpu` holds every CPU driver (``numba.njit`` through :func:`vits_ref.config.cpu_jit`);
:mod:`.cuda` every CUDA driver (``numba.cuda.jit``), imported lazily because it needs the
optional ``numba-cuda`` extra. Both compile the same bodies from :mod:`vits_ref.kernels`.
"""
