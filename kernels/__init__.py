"""Compiled kernels of vits_ref (installed as ``vits_ref.kernels``).

Each module holds kernel *bodies* (plain loops on arrays, scratch buffers passed in,
decorated with :func:`vits_ref.config.kernel`) and the CPU drivers that call them
(built with :func:`vits_ref.config.cpu_jit`). The same bodies compile for CUDA.
"""
