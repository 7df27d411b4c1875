"""Numba's CUDA simulator with the barriers of vits_ref/_numba_faster.py (its threads wait
at a barrier; no thread polls them) runs kernels as Numba's own simulator does.

One subprocess (the simulator must be on before Numba is imported) runs each kernel below
twice, with Numba's polling ``BlockManager.run`` and with the library's, and prints both
results: every kind of barrier (``syncthreads`` and its count, and, or), a shared-memory
tree sum over several blocks, threads that end before a barrier the others wait at, and a
thread that raises while the others wait (the error, with its thread, must reach the
caller and no thread may hang: the subprocess has a time limit).
"""

import textwrap

import pytest
from conftest import result_under_cuda_simulator

from vits_ref import _numba_faster

SCRIPT = textwrap.dedent("""
    import json, os
    import numpy as np
    from numba import cuda, float64
    from numba.cuda.simulator import kernel as sim
    from vits_ref import _numba_faster

    assert sim.BlockManager.run._event_driven  # installed at import
    ours = (sim.BlockManager.run, sim.BlockThread.run, sim.BlockThread.syncthreads)
    numbas = (sim.BlockManager.run.numba_run, sim.BlockThread.numba_run,
              sim.BlockThread.numba_syncthreads)

    def use(methods):
        sim.BlockManager.run, sim.BlockThread.run, sim.BlockThread.syncthreads = methods

    N = 8

    @cuda.jit
    def tree_sum(x, out):
        buf = cuda.shared.array(N, float64)
        i = cuda.threadIdx.x
        buf[i] = x[cuda.blockIdx.x * N + i]
        cuda.syncthreads()
        step = N // 2
        while step > 0:
            if i < step:
                buf[i] += buf[i + step]
            cuda.syncthreads()
            step //= 2
        if i == 0:
            out[cuda.blockIdx.x] = buf[0]

    @cuda.jit
    def votes(x, out):
        i = cuda.threadIdx.x
        out[0, i] = cuda.syncthreads_count(x[i] > 0)
        out[1, i] = cuda.syncthreads_and(x[i] > 0)
        out[2, i] = cuda.syncthreads_or(x[i] > 0)

    @cuda.jit
    def early_end(out, sums):
        i = cuda.threadIdx.x
        if i < 3:
            return  # these threads never reach the barrier the others wait at
        out[i] = i
        cuda.syncthreads()
        sums[i] = out[i] + out[(i + 1) % N]

    @cuda.jit
    def raising(x, out):
        i = cuda.threadIdx.x
        out[i] = x[i + 5]  # out of bounds for thread 3: an IndexError ...
        cuda.syncthreads()  # ... while the others wait here
        out[i] += 1

    def results():
        got = {}
        x = np.arange(3 * N, dtype=np.float64) ** 1.5
        out = np.zeros(3)
        tree_sum[3, N](x, out)
        got["tree_sum"] = out.tolist()
        got["tree_sum_exact"] = bool(np.allclose(out, x.reshape(3, N).sum(axis=1)))
        v = np.array([1, -1, 2, 0, 3, 4, -5, 6], dtype=np.float64)
        out = np.zeros((3, N), dtype=np.int32)
        votes[1, N](v, out)
        got["votes"] = out.tolist()
        out, sums = np.zeros(N), np.zeros(N)
        early_end[1, N](out, sums)
        got["early_end"] = sums.tolist()
        try:
            raising[1, 4](np.zeros(N), np.zeros(4))
            got["raising"] = "no error"
        except IndexError as err:
            got["raising"] = str(err).split(":")[0]  # the thread: "tid=[3, 0, 0] ctaid=..."
        return got

    use(numbas)
    numba_results = results()
    use(ours)
    our_results = results()

    # where the simulator's source is not the one it knows, Numba's is left in place; the
    # environment's VITS_REF_NUMBA_AS_IS=simulator leaves it too
    use(numbas)
    known = _numba_faster._POLLING
    _numba_faster._POLLING = "a loop of another release"
    unknown_left = (not _numba_faster.install_simulator()
                    and sim.BlockManager.run is numbas[0])
    _numba_faster._POLLING = known
    os.environ[_numba_faster.AS_IS] = "simulator"
    _numba_faster.install()
    as_is_left = sim.BlockManager.run is numbas[0]
    del os.environ[_numba_faster.AS_IS]
    _numba_faster.install()
    print("RESULT" + json.dumps({"numba": numba_results, "ours": our_results,
                                 "unknown_left": unknown_left, "as_is_left": as_is_left,
                                 "reinstalled": sim.BlockManager.run._event_driven}))
""")


@pytest.fixture(scope="module")
def both():
    """The script's results (``result_under_cuda_simulator`` skips without numba-cuda), in
    an environment that does not name the simulator's change in ``VITS_REF_NUMBA_AS_IS``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(_numba_faster.AS_IS, raising=False)
        return result_under_cuda_simulator(SCRIPT)


def test_kernels_give_numbas_results(both):
    numba, ours = both["numba"], both["ours"]
    assert numba["tree_sum_exact"] and ours["tree_sum_exact"]
    assert ours == numba
    # the votes as CUDA defines them (5 of the 8 values are positive), both ways
    assert ours["votes"] == [[5] * 8, [0] * 8, [1] * 8]
    # the threads that reach the barrier pass it when the others have ended
    assert ours["early_end"] == [0, 0, 0, 7, 9, 11, 13, 7]  # thread 7 adds thread 0's 0


def test_an_error_in_a_thread_reaches_the_caller(both):
    assert both["ours"]["raising"] == both["numba"]["raising"]
    assert both["ours"]["raising"].startswith("tid=[3, 0, 0]")


def test_nothing_installed_without_the_simulator():
    assert not _numba_faster.install_simulator()  # this process: no simulator


def test_left_alone_in_the_simulator_where_unknown_or_named(both):
    assert both["unknown_left"] and both["as_is_left"] and both["reinstalled"]
