"""Compiled kernels of vits_ref (installed as ``vits_ref.kernels``): bodies only.

Each module holds kernel *bodies* (plain loops on arrays and the products of
:mod:`.linalg`, scratch buffers passed in, decorated with :func:`vits_ref.config.kernel`)
and the factories that close steps over potentials (:mod:`.potential`) or the bandit loop
over a policy's piece (:mod:`.bandit`). The drivers that compile them live in
:mod:`vits_ref.drivers` (``cpu`` and ``cuda``): the same bodies run on both targets.
"""
