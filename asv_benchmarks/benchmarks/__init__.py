"""asv benchmarks of vits_ref (see ``asv_benchmarks/README.md``).

OpenBLAS reads ``OPENBLAS_NUM_THREADS`` once, when NumPy is first imported; asv imports the
benchmark modules in a fresh subprocess, so setting it here (and at the top of every
module, for direct imports) makes every BLAS call single-threaded unless the caller's
environment says otherwise.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
