"""The ``--dask-local`` cluster is usable by this process only.

A Dask scheduler runs whatever a connected client submits (on the workers, and in the
scheduler's process through ``run_on_scheduler``: here, the vits_ref process itself), and
the results are unpickled by the caller. The local cluster therefore speaks TLS with
temporary credentials that only the process that started it holds, on the loopback
interface, and serves no HTTP routes (no dashboard, metrics or proxy; it used to answer on
127.0.0.1:8787). Each check below connected or answered before the cluster was secured.
"""

import gc
import urllib.error
import urllib.request

import pytest

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from distributed import Client  # noqa: E402
from distributed.security import Security  # noqa: E402

from vits_ref.experiments import _chunks  # noqa: E402


def _refused(address, **kwargs):
    """Whether a client connecting to ``address`` with ``kwargs`` is turned away.

    A refused ``Client`` is left half-built in a reference cycle, and its ``__del__``
    closes its loop runner. Collected by chance inside the next ``Client``'s start, which
    holds that runner's (non-reentrant) lock, it hung the test run; so it is collected
    here, before anything else starts."""
    try:
        client = Client(address, timeout=5, **kwargs)
    except Exception:  # the TLS layer's errors vary (TypeError, CommClosedError, OSError)
        refused = True
    else:
        client.close()
        refused = False
    gc.collect()
    return refused


def test_local_cluster_refuses_clients_without_its_credentials():
    with _chunks.executor(dask_local=1) as (ex, _):
        address = ex._client.scheduler.address
        # the owner still runs work
        assert ex.submit(pow, 2, 10).result(timeout=60) == 1024
        # a plain client, a client speaking plain TCP to the same port, and a client with
        # TLS credentials of its own (another certificate authority) are all refused
        assert _refused(address)
        assert address.startswith("tls://127.0.0.1:")
        assert _refused(address.replace("tls://", "tcp://", 1))
        assert _refused(address, security=Security.temporary())
        # the owner's work is unaffected by the refused attempts
        assert ex.submit(pow, 3, 3).result(timeout=60) == 27


def test_local_cluster_serves_no_dashboard():
    with _chunks.executor(dask_local=1) as (ex, _):
        scheduler = ex._client.cluster.scheduler
        (host, port), = [s.getsockname()[:2] for s in scheduler.http_server._sockets.values()]
        assert host == "127.0.0.1" and port != 8787
        for route in ("/health", "/status", "/info/main/workers.html", "/metrics"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10)
            assert err.value.code == 404, route
