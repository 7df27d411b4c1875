"""The cost estimate an experiment prints before its runs (``experiments._common``).

A chunk's cost is modelled as a fixed cost per call plus a cost per run-round, fitted from
timed one-run probes. Checked on planted calls whose cost is exactly such a line (a fake
clock advanced by the call), so that the fit must recover the line's two numbers.
"""

import types

import pytest

from vits_ref.experiments import _common


class _Clock:
    """``time.perf_counter`` stand-in, advanced by the planted calls."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(_common, "time", types.SimpleNamespace(perf_counter=c))
    return c


def _planted(clock, fixed, per_round, calls):
    def call(n):
        calls.append(n)
        clock.now += fixed + per_round * n
        return types.SimpleNamespace(fused=True)
    return call


@pytest.mark.parametrize(("fixed", "per_round"), [(0.012, 50e-6), (0.0, 400e-6),
                                                  (0.016, 2e-6)])
def test_probe_recovers_a_planted_fixed_and_per_round_cost(clock, fixed, per_round):
    calls = []
    got_fixed, got_per_round, fused = _common._probe_cost(
        _planted(clock, fixed, per_round, calls), 1000)
    # the planted cost is exactly linear in the rounds: the two-point fit is exact up to
    # float rounding of sums of a few numbers of order 1e-2
    assert got_per_round == pytest.approx(per_round, rel=1e-9)
    assert got_fixed == pytest.approx(fixed, abs=1e-12)
    assert fused
    # sizes growing 4x from 10, capped at half a run
    assert calls[0] == 10 and max(calls) <= 500
    assert all(b == min(4 * a, 500) for a, b in zip(calls, calls[1:], strict=False))


def test_probe_stops_growing_once_a_call_takes_long_enough(clock):
    calls = []
    _common._probe_cost(_planted(clock, 0.0, 0.01, calls), 1000)  # 10 rounds: 0.1 s
    assert calls == [10]


def test_the_old_single_probe_charged_the_fixed_cost_to_every_round(clock):
    """A 12 ms fixed cost and 50 us a round (LinTS on a loaded machine): one 10-round probe
    divided by its rounds says 1.25 ms a round, 25x the cost of a round."""
    fixed, per_round = 0.012, 50e-6
    got_fixed, got_per_round, _ = _common._probe_cost(
        _planted(clock, fixed, per_round, []), 1000)
    chunk = 10 * 1000  # a chunk of 10 runs x 1000 rounds
    line = got_fixed + got_per_round * chunk
    single = (fixed + 10 * per_round) / 10 * chunk
    assert line == pytest.approx(fixed + per_round * chunk, rel=1e-9)
    assert single > 20 * line


@pytest.mark.parametrize(("r0", "t0", "r1", "t1", "want"), [
    (10, 0.02, 40, 0.05, (0.01, 0.001)),  # a rising line
    (10, 0.02, 10, 0.02, (0.0, 0.002)),   # one size only: all of it per round
    (10, 0.03, 40, 0.02, (0.0, 0.0005)),  # noise made the longer call faster: t1 / r1
])
def test_cost_line(r0, t0, r1, t1, want):
    assert _common._cost_line(r0, t0, r1, t1) == pytest.approx(want)


def test_the_probe_runs_only_when_its_estimate_is_printed(monkeypatch):
    """Without progress nothing reads the estimate: the timed probe calls (each up to half
    the rounds of every method) are skipped, the warm-ups and the results kept."""
    import numpy as np

    import vits_ref as vr

    probed = []
    real = _common._probe_cost
    monkeypatch.setattr(_common, "_probe_cost",
                        lambda call, rounds: probed.append(rounds) or real(call, rounds))
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    panels = [("p", env, [("LinTS", vr.make_policy("lints", 3))], {})]
    said = []
    out = {}
    for progress in (None, said.append):
        plan, outcome, _ = _common.execute_panels("probe", panels, 2, 10, 0, None,
                                                  progress=progress)
        out[progress is None] = outcome[(0, 0)]["blocks"][0]["regret"]
    assert probed == [10]  # once: the call with progress
    assert any("estimate: about" in s for s in said)
    assert np.array_equal(out[True], out[False])
