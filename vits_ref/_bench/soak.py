"""The long-horizon soak: 1 000 000 rounds of LinTS, VITS-II and LinUCB.

One fused run per policy on the pool environment of appendix H (``d = 20``, ``K = 50``,
``zeta = 0.1``, linear rewards; :func:`vits_ref.envs.pool`) with the documented defaults
(:data:`vits_ref.bandit.simulate.POLICY_DEFAULTS`), driven by chunks of rounds through
:func:`vits_ref.bandit.simulate._fused_batch`, the loop :func:`vits_ref.bandit.simulate` runs: the
realisation and the policy's randomness are drawn a chunk at a time, so the memory stays
bounded whatever the horizon. After each checkpoint (every 100 000 rounds by default) the
run's state buffer is read (the piece's ``views``) and compared with a fresh computation
from the sufficient statistics, rebuilt independently in NumPy from the played arms'
features, ``V = lam I + sum_t x_t x_t^T`` (accumulated chunk by chunk with one matrix
product per chunk, a different summation order from the loop's rank-one updates):

- LinTS: its Cholesky factor ``F`` (rank-one updated every round) against
  ``np.linalg.cholesky(V)``; positive definite while ``min diag F > 0`` (``F`` is
  triangular); the KL of its Gaussian to the exact posterior, which measures the factor's
  rounding;
- VITS-II: ``||B C - I||_F`` (``C`` is VITS-II's running inverse of the square root ``B``)
  and ``KL(N(mu, B B^T) || exact posterior)``; positive definite while the smallest
  singular value of ``B`` is > 0;
- LinUCB: its Sherman-Morrison inverse ``Vinv`` against ``np.linalg.inv(V)``, and its
  asymmetry; positive definite while the smallest eigenvalue of its symmetric part is > 0.

Drifts are relative Frobenius norms (``||F - chol(V)|| / ||chol(V)||``, ...); the loop's own
statistics ``V`` (LinTS, VITS-II) are also compared with the rebuilt ones (``stats``).
``main()`` prints the table, each policy's rounds/s (drawing included) and the process's
peak resident memory. Set ``OPENBLAS_NUM_THREADS=1``::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import soak; soak.main()"

``main(n_rounds=20_000, every=5_000)`` is the quick version. The compile (or cache load)
happens in a 10-round warm-up, outside the timings.
"""

import resource
import sys
import time

import numpy as np

from .. import envs
from .._seeding import policy_seed, run_seed
from ..bandit.simulate import POLICY_DEFAULTS, _fused_batch, fused_spec, has_kl, make_policy

DIM, N_ARMS, ZETA = 20, 50, 0.1
N_ROUNDS, EVERY = 1_000_000, 100_000
POLICIES = ("lints", "vits-ii", "linucb")


def environment(dim=DIM, n_arms=N_ARMS, zeta=ZETA, seed=0):
    """The soak's environment: the appendix H pool, linear rewards."""
    return envs.pool(dim=dim, n_arms=n_arms, zeta=zeta, reward="linear", seed=seed)


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _measure(name, state, V_ref, lam):
    """The checkpoint's figures from the piece's state views."""
    d = V_ref.shape[0]
    out = {}
    if name == "lints":
        F, V = state[0], state[1]
        out["factor"] = _rel(np.tril(F), np.linalg.cholesky(V_ref))
        out["stats"] = _rel(V, V_ref)
        out["min_pivot"] = float(np.diag(F).min())
        out["posdef"] = bool(out["min_pivot"] > 0)
    elif name == "linucb":
        Vinv = state[0]
        inv = np.linalg.inv(V_ref)
        out["inverse"] = _rel(Vinv, inv)
        out["asym"] = float(np.linalg.norm(Vinv - Vinv.T) / np.linalg.norm(Vinv))
        out["min_eig"] = float(np.linalg.eigvalsh(0.5 * (Vinv + Vinv.T)).min())
        out["posdef"] = bool(out["min_eig"] > 0)
    else:
        V, B, C = state[0], state[2], state[3]
        out["bc"] = float(np.linalg.norm(B @ C - np.eye(d)))
        out["stats"] = _rel(V, V_ref)
        out["min_sv"] = float(np.linalg.svd(B, compute_uv=False).min())
        out["posdef"] = bool(out["min_sv"] > 0)
    return out


def soak(name, n_rounds=N_ROUNDS, every=EVERY, env=None, seed=0, chunk=None):
    """One fused run of ``name`` (a name of :data:`vits_ref.bandit.simulate.POLICY_NAMES` with a
    fused loop) for ``n_rounds`` rounds, checked every ``every`` rounds.

    ``chunk`` (rounds drawn and run at a time) must divide ``every``; default the largest
    divisor of ``every`` up to 10 000 (about 100 MB of draws for VITS-II at d = 20,
    K = 50). Returns ``(rows, seconds)``: one dict per checkpoint (``round``, the drift
    figures of the module docstring, ``kl`` where the policy has a Gaussian posterior,
    ``regret`` the cumulative regret) and the wall time of the run (drawing included,
    checkpoints excluded).
    """
    env = environment() if env is None else env
    d, K = env.dim, env.n_arms
    if n_rounds % every:
        raise ValueError(f"every ({every}) must divide n_rounds ({n_rounds})")
    if chunk is None:
        chunk = max(c for c in range(1, min(every, 10_000) + 1) if every % c == 0)
    if every % chunk:
        raise ValueError(f"chunk ({chunk}) must divide every ({every})")
    policy = make_policy(name, d)
    gaussian = has_kl(name)
    spec = fused_spec(policy, kl=gaussian)
    if spec is None:
        raise ValueError(f"{name!r} has no fused loop")
    lam = float(POLICY_DEFAULTS[name]["lam"])
    checks = np.arange(every, n_rounds + 1, every, dtype=np.int64)
    kl_rounds = checks if gaussian else np.zeros(0, dtype=np.int64)
    seed0 = run_seed(seed, 0)
    M = spec.draw(policy_seed(seed0), 1, d)[2].shape[2]
    regret = np.empty((1, n_rounds))
    arms = np.empty((1, n_rounds), dtype=np.int64)
    kl = np.zeros((1, kl_rounds.size))
    V_ref = lam * np.eye(d)
    rows = []
    paused = [0.0]

    def on_chunk(t1, bufs, contexts):
        nonlocal V_ref
        tick = time.perf_counter()
        n = contexts.shape[1]
        X = contexts[0, np.arange(n), arms[0, t1 - n:t1]]
        V_ref = V_ref + X.T @ X
        if t1 % every == 0:
            state, _ = spec.piece.views(bufs[0], d, K, M, regret.shape[1])
            row = {"round": t1, **_measure(name, state, V_ref, lam),
                   "regret": float(regret[0, :t1].sum())}
            rows.append(row)
        paused[0] += time.perf_counter() - tick

    # warm-up: compile or load the cache outside the timing
    _fused_batch(spec, name, [env], [seed0], 10, 10, np.zeros(0, dtype=np.int64),
                     np.empty((1, 10)), np.empty((1, 10), dtype=np.int64), np.zeros((1, 0)), 0)
    start = time.perf_counter()
    _fused_batch(spec, name, [env], [seed0], n_rounds, chunk, kl_rounds, regret, arms,
                     kl, 0, on_chunk=on_chunk)
    seconds = time.perf_counter() - start - paused[0]
    if gaussian:
        for row, value in zip(rows, kl[0], strict=True):
            row["kl"] = float(value)
    return rows, seconds


def peak_rss_mb():
    """The process's peak resident memory in MB (``ru_maxrss``: KB on Linux, bytes on
    macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2 ** 20 if sys.platform == "darwin" else peak / 2 ** 10


_COLUMNS = {"lints": ("factor", "stats", "min_pivot", "kl"),
            "vits-ii": ("bc", "stats", "min_sv", "kl"),
            "linucb": ("inverse", "asym", "min_eig")}


def table(name, rows):
    """The drift table of one policy as text."""
    cols = ("round",) + _COLUMNS[name] + ("posdef", "regret")
    lines = ["  ".join(f"{c:>11}" for c in cols)]
    for row in rows:
        cells = []
        for c in cols:
            v = row[c]
            cells.append(f"{v:>11d}" if isinstance(v, (int, np.integer)) and not
                         isinstance(v, bool) else f"{v!s:>11}" if isinstance(v, bool)
                         else f"{v:>11.3g}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main(n_rounds=N_ROUNDS, every=EVERY, policies=POLICIES, seed=0):
    """Print each policy's drift table, rounds/s and the process's peak memory."""
    print(f"soak: pool environment d={DIM}, K={N_ARMS}, zeta={ZETA}, {n_rounds} rounds, "
          f"seed {seed}; drifts are relative Frobenius norms against a fresh factorisation "
          f"of V rebuilt from the played arms")
    results = {}
    for name in policies:
        rows, seconds = soak(name, n_rounds, every, seed=seed)
        results[name] = (rows, seconds)
        print(f"\n{name}: {seconds:.1f} s, {n_rounds / seconds:,.0f} rounds/s "
              f"(drawing included)")
        print(table(name, rows))
        sys.stdout.flush()
    print(f"\npeak resident memory of the process: {peak_rss_mb():.0f} MB")
    return results


if __name__ == "__main__":  # pragma: no cover
    main()
