"""The benchmark machinery behind ``python -m vits_ref bench`` (private: no stable API).

Speed ratios measured in one process, calls interleaved (:mod:`.timing`), so the machine's
drift affects both sides alike: :mod:`.linear` (linear-bandit rounds of the fused loop
against the NumPy reference and against the floor of BLAS work, the ``prange`` speed-up,
import and compile times), :mod:`.env_rounds` (a ``simulate`` round of the random policy
and of LinTS against NumPy drawing the environment round's numbers),
:mod:`.logistic_loop` (the fused loop's VITS-II, LMC-TS and Laplace rounds on the
logistic model against the Python loop, and the share of a round that is the history's
O(n d) work) and :mod:`.nonlinear` (logistic and MLP VITS-II
rounds, IRLS against NumPy and statsmodels), :mod:`.vts` (one CAVI round of VTS) and
:mod:`.renyi` (one RenyiVI update), each against its NumPy reference, and :mod:`.online`
(a decision of :class:`vits_ref.Online` against the fused loop's round), :mod:`.doors`
(the policy objects, ``Bandit`` and ``Online``: a decision, a fit of logged rounds and a
batch of predictions, against MABWiser and bayesianbandits where installed). The
plain-NumPy side
is :mod:`vits_ref.reference`. The asv suite in ``asv_benchmarks/`` tracks the same quantities
over commits with these helpers.

Set ``OPENBLAS_NUM_THREADS=1`` for single-thread figures; :func:`main` sets Numba's
thread count itself (:func:`vits_ref._threads.numba_threads`: restored after each section).
"""

from .._threads import numba_threads


def main(quick=False):
    """Print every figure of ``python -m vits_ref bench`` (``quick``: fewer repeats)."""
    from . import linear, nonlinear, renyi, vts
    from .timing import RATIO_MEANING

    print(RATIO_MEANING)
    print()
    linear.main(quick=quick)
    # an environment round against NumPy drawing its numbers (one thread, set inside)
    from . import env_rounds

    print()
    env_rounds.main(quick=quick)
    # the logistic model's fused loop against the Python loop (every Numba thread, one run
    # each; sets the threads itself)
    from . import logistic_loop

    print()
    logistic_loop.main(quick=quick)
    # the others are single-thread figures: non-linear VITS-II rounds and IRLS, one CAVI
    # round of VTS, one RenyiVI update, the online API's decisions
    from . import doors, online

    with numba_threads(1):
        for section in (nonlinear, vts, renyi, online, doors):
            print()
            section.main(quick=quick)
    # one SVGD step: single thread and every core, sets Numba's threads itself
    from . import svgd

    print()
    svgd.main(quick=quick)
    # the learned diffusion prior: chain per stage, one training epoch, one
    # DiffTS round against NumPy, single-thread figures
    from . import diffusion

    with numba_threads(1):
        print()
        diffusion.main(quick=quick)
