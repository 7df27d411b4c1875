"""The cost estimate an experiment prints before its runs (``experiments._common``).

A chunk's cost is modelled as a fixed cost per call plus a cost per run-round that may
grow with the history, fitted from timed one-run probes. Checked on planted calls whose
cost is exactly such a line or parabola (a fake clock advanced by the call), so that the
fit must recover its numbers; and the progress lines' time left, on chunks whose
estimated costs differ.
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


def _planted(clock, fixed, per_round, calls, growth=0.0, noise=None):
    """A call of ``n`` rounds costs ``fixed + per_round n + growth n^2`` seconds, times
    ``noise[n]`` where given."""
    def call(n):
        calls.append(n)
        clock.now += (fixed + per_round * n + growth * n * n) * (noise or {}).get(n, 1.0)
        return types.SimpleNamespace(fused=True)
    return call


@pytest.mark.parametrize(("fixed", "per_round"), [(0.012, 50e-6), (0.0, 400e-6),
                                                  (0.016, 2e-6)])
def test_probe_recovers_a_planted_fixed_and_per_round_cost(clock, fixed, per_round):
    calls = []
    got_fixed, got_per_round, fused, _ = _common._probe_cost(
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
    got_fixed, got_per_round, _, _ = _common._probe_cost(
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
                        lambda call, rounds, runs: probed.append(rounds)
                        or real(call, rounds, runs))
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


def test_a_cost_growing_with_the_history_is_extrapolated_as_a_parabola(clock):
    """Rényi VI on wine as measured on a loaded 2-core machine: 0.15, 0.68 and 5.1 s for
    10, 40 and 160 rounds. A run of 2000 rounds costs ``a R + b R^2``: the probe must
    recover ``a + b R`` a round, not the first call's 15 ms (seven times less here)."""
    fixed, a, b = 0.004, 0.012, 1.3e-4
    calls = []
    got_fixed, got_per_round, _, _ = _common._probe_cost(
        _planted(clock, fixed, a, calls, growth=b), 2000, runs=50)
    assert calls == [10, 40, 160]
    # exact for a parabola through the three points, up to the rounding of a few
    # divided differences of numbers of order 1
    assert got_per_round == pytest.approx(a + b * 2000, rel=1e-9)
    assert got_fixed == pytest.approx(fixed, abs=1e-9)
    single = (fixed + a * 10 + b * 100) / 10
    assert got_per_round > 7 * single


def test_the_third_size_is_timed_only_when_cheap_beside_the_planned_runs(clock):
    """Ten runs of 2000 rounds planned: a 160-round probe would cost more than
    ``PROBE_SHARE`` of them, so the probe keeps the line through its two sizes (a lower
    estimate, no extra cost); with one run planned, even the 40-round call would."""
    calls = []
    got_fixed, got_per_round, _, _ = _common._probe_cost(
        _planted(clock, 0.0, 0.012, calls, growth=1.3e-4), 2000, runs=10)
    assert calls == [10, 40]
    t10, t40 = 0.012 * 10 + 1.3e-4 * 100, 0.012 * 40 + 1.3e-4 * 1600
    assert got_per_round == pytest.approx((t40 - t10) / 30, rel=1e-9)
    calls.clear()
    _common._probe_cost(_planted(clock, 0.0, 0.012, calls, growth=1.3e-4), 2000, runs=1)
    assert calls == [10]


@pytest.mark.parametrize("excess", [1.0, 1.2])
def test_a_linear_cost_with_timing_noise_is_not_taken_for_growth(clock, excess):
    """A linear cost whose 160-round probe call ran 20% slow (noise, below
    ``PROBE_GROWTH``): no parabola is extrapolated over the run (which would multiply a
    20% error by the horizon). The parabola's reading, 3.5x the line, leaves the probe
    unsure, so one more size is timed: at 640 rounds the cost is back on the line, and
    the line through the last two sizes is kept. On an exact line no further size is."""
    assert excess < _common.PROBE_GROWTH
    calls = []
    _, got_per_round, _, high = _common._probe_cost(
        _planted(clock, 0.0, 0.004, calls, noise={160: excess}), 2000, runs=50)
    t = {40: 0.004 * 40, 160: 0.004 * 160 * excess, 640: 0.004 * 640}
    if excess == 1.0:
        assert calls == [10, 40, 160]
        assert got_per_round == pytest.approx((t[160] - t[40]) / 120, rel=1e-9)
    else:
        assert calls == [10, 40, 160, 640]
        assert got_per_round == pytest.approx((t[640] - t[160]) / 480, rel=1e-9)
    assert high == pytest.approx(got_per_round, rel=1e-9)  # no upper reading left
    assert 0.9 * 0.004 < got_per_round < 1.3 * 0.004


@pytest.mark.parametrize(("points", "want"), [
    (((10, 1.0 + 0.2 + 0.03), (40, 1.0 + 0.8 + 0.48), (160, 1.0 + 3.2 + 7.68)),
     (1.0, 0.02, 3e-4)),                                    # t = 1 + 0.02 r + 3e-4 r^2
    (((10, 0.02), (40, 0.05), (160, 0.17)), None),          # on the line: no growth
    (((10, 0.02), (40, 0.05), (160, 0.2)), None),           # 18% above it: noise
])
def test_cost_parabola(points, want):
    got = _common._cost_parabola(*points)
    if want is None:
        assert got is None
    else:
        assert got == pytest.approx(want, rel=1e-9)


def _status_lines(costs, workers):
    """The progress lines of three chunks of the same run-rounds: two cheap, then one
    that takes 1 s of the fake clock; ``costs`` as a probe would give them."""
    from vits_ref.experiments import _chunks

    clock = {"now": 0.0}

    def fn(arg):
        clock["now"] += arg
        return {"wall_time_s": arg}

    said = []
    chunks = [_chunks.Chunk(key=k, fn=fn, arg=t, work=100, info={})
              for k, t in (("a", 0.001), ("b", 0.001), ("c", 1.0))]
    old = _chunks.time.perf_counter
    _chunks.time.perf_counter = lambda: clock["now"]
    try:
        with _chunks.session(quiet=False, workers=workers):
            store = _chunks.Store(None, "fake", "stage", {}, force=False, options=None)
            _chunks.run_chunks(store, chunks, progress=said.append, desc="runs",
                               costs=costs)
    finally:
        _chunks.time.perf_counter = old
    return said


def test_the_time_left_weighs_the_chunks_by_their_estimated_cost(monkeypatch):
    """Two cheap chunks done in 2 ms, one of a second to go: by run-rounds the line
    said about 0 s left; weighed by the probe's costs it says the estimate's 1 s (the
    cheap chunks' rate says nothing of the expensive one's)."""
    from vits_ref import _terminal

    monkeypatch.setattr(_terminal, "columns", lambda: 0)  # plain lines, no bar
    by_rounds = _status_lines(None, 1)
    weighed = _status_lines({"a": 0.001, "b": 0.001, "c": 1.0}, 1)
    assert any(line.startswith("runs: 2/3 chunks done") and "about 0 s left" in line
               for line in by_rounds), by_rounds
    assert any(line.startswith("runs: 2/3 chunks done") and "about 1 s left" in line
               for line in weighed), weighed
    # a cost missing for a chunk: every run-round weighs the same, as without costs
    assert _status_lines({"a": 0.001, "c": 1.0}, 1) == by_rounds


@pytest.mark.parametrize(("n", "workers"), [(5, 2), (4, 2), (7, 3), (1, 4)])
def test_makespan_of_equal_chunks_is_the_rounds_of_the_pool(n, workers):
    """``n`` chunks of one cost on ``workers`` workers take ``ceil(n / workers)`` of
    them: five chunks of Rényi VI's 37 min on two workers ran in three rounds of the pool
    (111 min), not the 92.5 min of the total over the workers."""
    from vits_ref.experiments import _chunks

    assert _chunks.makespan([37.0] * n, workers) == 37.0 * -(-n // workers)


def test_makespan_assigns_chunks_in_submission_order():
    """Each chunk goes to the first worker to free, in order: [4, 1, 1, 1, 1] on two
    workers ends at 4 (the four short ones run beside the long one); [1, 1, 1, 1, 4]
    at 6 (the long one starts last, alone)."""
    from vits_ref.experiments import _chunks

    assert _chunks.makespan([4.0, 1.0, 1.0, 1.0, 1.0], 2) == 4.0
    assert _chunks.makespan([1.0, 1.0, 1.0, 1.0, 4.0], 2) == 6.0
    assert _chunks.makespan([], 2) == 0.0


@pytest.mark.parametrize(("trust", "want"), [(False, 4 + 4 + 1), (True, 4 + 4 + 4)])
def test_time_left_corrects_each_group_by_its_timed_chunks(trust, want):
    """A method whose probe said 1 s a chunk and whose first chunk took 4 s (a cost that
    grows with the history, unseen by the probe's short calls): its two chunks left count
    4 s each. A method not yet timed keeps its estimate, or takes the ratio over every
    finished chunk once those weigh enough to be trusted."""
    from vits_ref.experiments import _chunks

    timed = {"laplace": [4.0, 1.0]}
    pending = [("laplace", 1.0), ("laplace", 1.0), ("svgd", 1.0)]
    assert _chunks.time_left_by_cost(pending, timed, trust, 1) == want
    # on two workers: the two Laplace chunks side by side, then the third
    assert _chunks.time_left_by_cost(pending, timed, trust, 2) == 4 + want - 8


def test_the_progress_lines_use_a_chunk_s_measured_time_for_its_group(monkeypatch):
    """Three chunks of one method, each estimated at 1 s; the first takes 3 s: the lines
    then say about 6 s left (two more at the measured 3 s), where the estimates alone said
    2 s."""
    from vits_ref import _terminal
    from vits_ref.experiments import _chunks

    monkeypatch.setattr(_terminal, "columns", lambda: 0)  # plain lines, no bar
    clock = {"now": 0.0}

    def fn(arg):
        clock["now"] += arg
        return {"wall_time_s": arg}

    said = []
    chunks = [_chunks.Chunk(key=k, fn=fn, arg=3.0, work=100, info={}, group="m")
              for k in "abc"]
    monkeypatch.setattr(_chunks.time, "perf_counter", lambda: clock["now"])
    with _chunks.session(quiet=False):
        store = _chunks.Store(None, "fake", "stage", {}, force=False, options=None)
        _chunks.run_chunks(store, chunks, progress=said.append, desc="runs",
                           costs=dict.fromkeys("abc", 1.0))
    assert said[0].startswith("runs: 1/3 chunks done") and "about 6 s left" in said[0], said


def test_the_estimate_divides_a_fused_chunk_by_the_threads_it_runs_with(monkeypatch):
    """A fused method's chunk of two runs under an executor of two workers: its cost is
    divided by each worker's share of the cores (one on a 2-core machine), not by this
    process's threads; under the showdown's one-thread simulate, by 1."""
    import concurrent.futures

    import vits_ref as vr
    from vits_ref._threads import worker_share
    from vits_ref.experiments import _chunks
    from vits_ref.experiments.showdown.experiment import simulate_serial

    monkeypatch.setattr(_common, "_probe_cost", lambda call, rounds, runs: (0.0, 1.0, True, 1.0))
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    panels = [("p", env, [("LinTS", vr.make_policy("lints", 3))], {})]
    for sim, threads in ((None, min(worker_share(2), 2)), (simulate_serial, 1)):
        said = []
        with concurrent.futures.ThreadPoolExecutor(1) as ex, _chunks.session(
                executor=ex, workers=2, chunk_runs=2):
            _common.execute_panels("probe", panels, 4, 10, 0, None, progress=said.append,
                                   simulate_fn=sim)
        # two chunks of 2 runs x 10 rounds at 1 s a run-round, side by side on 2 workers
        line = next(s for s in said if s.startswith("estimate: about"))
        assert line.startswith(f"estimate: about {20 // threads} s ("), (sim, line)


def test_growth_too_weak_to_tell_is_timed_once_more(clock):
    """The DiffTS chain on digits: its third probe call took about 1.2x what the line
    through the first two predicts (growth, or noise), and its runs of 2000 rounds cost
    four times the line. With 50 runs planned, a 640-round call costs 14% of 2% of them:
    it is timed, shows the growth (1.7x the line), and the parabola gives ``a + b R``."""
    a, b = 0.0189, 4e-5
    calls = []
    _, got_per_round, _, high = _common._probe_cost(
        _planted(clock, 0.0, a, calls, growth=b), 2000, runs=50)
    assert calls == [10, 40, 160, 640]
    assert got_per_round == pytest.approx(a + b * 2000, rel=1e-9)
    assert high == got_per_round


def test_growth_still_unsure_after_the_further_size_is_an_upper_reading(clock):
    """A linear cost whose 160- and 640-round calls ran 20% and 40% slow: after the one
    further size the last three still show growth below ``PROBE_GROWTH`` (1.12x the line
    at 640 rounds). The estimate keeps the line through the last two sizes; the parabola
    through the last three (as ``numpy.polyfit`` gives it) comes back as the upper
    reading, ``a + b R``."""
    import numpy as np

    noise = {160: 1.2, 640: 1.4}
    calls = []
    _, got_per_round, _, high = _common._probe_cost(
        _planted(clock, 0.0, 0.004, calls, noise=noise), 2000, runs=50)
    assert calls == [10, 40, 160, 640]
    r = np.array([40.0, 160.0, 640.0])
    t = 0.004 * r * np.array([1.0, noise[160], noise[640]])
    assert got_per_round == pytest.approx((t[2] - t[1]) / 480, rel=1e-9)
    b, a, _ = np.polyfit(r, t, 2)
    # polyfit solves the Vandermonde system (condition number about 1e6) by least
    # squares: its rounding is near 1e-10, so 1e-8 is loose for it and tight for a slip
    assert high == pytest.approx(a + b * 2000, rel=1e-8)
    assert high > got_per_round

def test_a_linear_or_a_parabolic_cost_has_no_separate_upper_reading(clock):
    """On an exact line the three sizes show no growth (``high`` is the line's), and where
    the parabola is used ``high`` is the estimate itself."""
    _, per_round, _, high = _common._probe_cost(_planted(clock, 0.0, 0.004, []), 2000,
                                                runs=50)
    # the divided differences of an exact line leave b at rounding level (~1e-20)
    assert high == pytest.approx(per_round, rel=1e-9)
    _, per_round, _, high = _common._probe_cost(
        _planted(clock, 0.004, 0.012, [], growth=1.3e-4), 2000, runs=50)
    assert high == per_round


@pytest.mark.parametrize(("high", "named"), [(4.0, True), (1.0, False)])
def test_the_estimate_names_the_upper_reading_and_its_methods(monkeypatch, high, named):
    import vits_ref as vr

    monkeypatch.setattr(_common, "_probe_cost",
                        lambda call, rounds, runs: (0.0, 1.0, True, high))
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    panels = [("p", env, [("LinTS", vr.make_policy("lints", 3))], {})]
    said = []
    _common.execute_panels("probe", panels, 2, 10, 0, None, progress=said.append)
    line = next(s for s in said if s.startswith("estimate: about"))
    assert ("or up to about" in line and "of LinTS grows" in line) == named, line


def _stored_run(tmp_path, said=None, runs=4):
    """``runs`` runs each of LinTS and LinUCB in chunks of two stored under ``tmp_path``;
    the store's chunk keys, by method."""
    import vits_ref as vr
    from vits_ref.experiments import _chunks

    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    panels = [("p", env, [("LinTS", vr.make_policy("lints", 3)),
                          ("LinUCB", vr.make_policy("linucb", 3))], {})]
    with _chunks.session(chunk_runs=2):
        plan, _, _ = _common.execute_panels("probe", panels, runs, 10, 0, str(tmp_path),
                                            progress=None if said is None else said.append)
    return [[c.key for c in e["candidates"][0]["chunks"]] for e in plan]


def test_a_stored_chunk_s_wall_time_is_read_back(tmp_path):
    """``Store.wall_time``: the seconds each stored chunk's result recorded, None for a
    chunk not stored."""
    import json

    from vits_ref.experiments import _chunks

    keys = _stored_run(tmp_path)[0]
    stage = json.loads((tmp_path / "manifest.json").read_text())["stages"]["panels"]
    store = _chunks.Store(str(tmp_path), "probe", "panels", stage["description"])
    for k in keys:
        assert store.wall_time(k) == stage["chunks"][k]["wall_time_s"] > 0
    (tmp_path / stage["chunks"][keys[1]]["file"]).unlink()
    assert store.wall_time(keys[1]) is None
    assert store.wall_time("no-such-chunk") is None


@pytest.mark.parametrize("lose_linucb", [False, True])
def test_a_resumed_method_is_costed_by_its_stored_chunks_not_probed(tmp_path, monkeypatch,
                                                                    lose_linucb):
    """Resuming LinTS with one of its two equal chunks to go: the pending chunk is
    estimated at the stored chunk's measured time (planted: 7 s), and LinTS is not probed
    (the probe's short calls can miss a cost that grows late in a run). A method with no
    chunk stored (LinUCB, when its two are lost) is probed as before (planted: 1 s a
    run-round, 20 s a chunk), and the line names both sources."""
    from vits_ref.experiments import _chunks

    lints, linucb = _stored_run(tmp_path)
    for k in lints[1:] + (linucb if lose_linucb else []):
        (tmp_path / f"chunks/panels/{k}.npz").unlink()
    monkeypatch.setattr(_chunks.Store, "wall_time",
                        lambda self, key: 7.0 if self.done(key) else None)
    probed = []
    monkeypatch.setattr(_common, "_probe_cost",
                        lambda *a, **k: probed.append(a) or (0.0, 1.0, False, 1.0))
    said = []
    _stored_run(tmp_path, said)
    line = next(s for s in said if s.startswith("estimate: about"))
    stored = "the median time a run-round of the chunks already stored for "
    if lose_linucb:  # one worker: 7 s, then LinUCB's two chunks of 20 s
        assert line.startswith(f"estimate: about 47 s ({stored}"), line
        assert "; timed one-run probes of each other method" in line
        assert len(probed) == 1
    else:
        assert line.startswith(f"estimate: about 7 s ({stored}"), line
        assert "probes" not in line and probed == []


def test_a_resumed_method_is_costed_at_its_stored_chunks_median_rate(tmp_path, monkeypatch):
    """Three stored chunks took 5, 6 and 20 s (the last on a shared machine): the pending
    fourth is estimated at the median, 6 s, not the mean's 10.3 s."""
    from vits_ref.experiments import _chunks

    lints, _ = _stored_run(tmp_path, runs=8)
    (tmp_path / f"chunks/panels/{lints[3]}.npz").unlink()
    planted = dict(zip(lints[:3], (5.0, 6.0, 20.0), strict=True))
    monkeypatch.setattr(_chunks.Store, "wall_time",
                        lambda self, key: planted.get(key) if self.done(key) else None)
    said = []
    _stored_run(tmp_path, said, runs=8)
    line = next(s for s in said if s.startswith("estimate: about"))
    assert line.startswith("estimate: about 6 s (the median time"), line
