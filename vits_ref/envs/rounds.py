"""What an environment's round draws: the one description of a round, and its realisation.

A round of an environment draws a few arrays of random numbers, each a :class:`Draw`
(standard normals, uniforms, bounded integers, categorical choices, distinct integers),
and builds from them the arms' features, their expected rewards and their rewards. A
:class:`RoundDraws` says which draws, in which order, and how the round is built from
them; :meth:`vits_ref.envs.Environment.round_draws` returns an environment's. Every way of
drawing rounds derives from it:

- **NumPy** (:meth:`~vits_ref.envs.Environment.realise`,
  :meth:`~vits_ref.envs.Environment.realise_chunks`): a run's rounds are drawn from one
  Generator in *blocks* of :func:`block_rounds` rounds. A block draws each draw's rows
  for its rounds, the context draws first, in the description's order, then builds its
  rounds. A whole realisation is its blocks one after the other; a chunk of rounds is a
  slice of them. So every number is drawn once (one pass), a chunked run holds one block
  at most, and the chunks are the rows of the whole realisation bit for bit whatever their
  size. A horizon of at most one block draws exactly what one draw of all its rounds
  draws (each draw's rows for every round, in the description's order).
- **Counter-based streams** (``simulate(..., stream="philox")``, docs/streams.md): each
  draw names its Philox stream (:attr:`Draw.stream`), round ``t``'s rows of it are the
  stream's elements at counter ``(t, stream, ., 0)``, and
  :attr:`RoundDraws.counter` gives the compiled round body that generates and builds them
  (:mod:`vits_ref.kernels.bandit_streams`). Its NumPy reference,
  :func:`vits_ref.reference.streams.env_rounds`, draws the same draws from Philox and
  builds the rounds with the description's own builders.

Why blocks: NumPy's normals (ziggurat) and bounded integers (Lemire) consume a variable
number of the bit generator's words (rejections), so where a draw starts in the stream is
known only after drawing everything before it. With the draws of all the rounds one after
the other, a chunk's rewards come after every round's contexts, and a chunked realisation
had to draw the stream twice (once to find each draw's start, once for the rows). Blocks
of a fixed number of rounds put each block's draws together, so one pass serves them.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BLOCK_VALUES", "KINDS", "Draw", "RoundDraws", "block_rounds", "realise_blocks",
           "slice_chunks", "values_per_round"]

#: The kinds of :class:`Draw`.
KINDS = ("normal", "uniform", "integers", "choice", "distinct")

#: Numbers a block of rounds holds at most (drawn and built, 8 bytes each: 32 MiB), unless
#: one round holds more (then a block is one round). It sets :func:`block_rounds`, so the
#: realisation of a run longer than a block depends on it: do not change it lightly.
BLOCK_VALUES = 2 ** 22

#: Uniform keys per call of a ``"distinct"`` draw (about 16 MB): rows of keys are drawn in
#: row-major order, so splitting the rounds changes no number.
_KEYS_PER_CALL = 2_000_000


@dataclass(frozen=True)
class Draw:
    """One draw of a round: an array of ``shape`` random numbers per round.

    Parameters
    ----------
    kind : {"normal", "uniform", "integers", "choice", "distinct"}
        Standard normals; uniforms in [0, 1); integers uniform in ``[0, high)``; indices
        in ``[0, len(p))`` drawn with probabilities ``p``; ``shape[-1]`` distinct indices
        in ``[0, high)``, uniform among the subsets (the ``shape[-1]`` smallest of
        ``high`` uniform keys, so a round draws ``high`` uniforms).
    shape : tuple of int
        The shape of one round's rows.
    high : int, optional
        The bound of ``"integers"`` and ``"distinct"``.
    p : tuple of float, optional
        The probabilities of ``"choice"``.
    stream : int, optional
        The counter-based stream the draw comes from (docs/streams.md), or None where the
        environment has no counter piece.
    into_contexts : bool, default False
        Drawn straight into the buffer of the round's features, which the context builder
        then transforms in place (saves a copy of the largest array of a round).

    Notes
    -----
    Every kind is *row-major*: drawing the rows of ``n`` rounds in one call draws the
    numbers of the first round first, so the rows of ``n1`` rounds then ``n2`` rounds are
    those of ``n1 + n2`` rounds. A block relies on it for ``"distinct"`` only (its keys are
    drawn a bounded number at a time); :func:`realise_blocks` draws each block's rows in
    one call.
    """

    kind: str
    shape: tuple
    high: int | None = None
    p: tuple | None = None
    stream: int | None = None
    into_contexts: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.kind in ("integers", "distinct") and (self.high is None or self.high < 1):
            raise ValueError(f"a {self.kind!r} draw needs high >= 1, got {self.high!r}")
        if self.kind == "distinct" and not 1 <= self.shape[-1] <= self.high:
            raise ValueError(f"a 'distinct' draw takes 1 to high = {self.high} indices a "
                             f"round, got {self.shape[-1]}")
        if self.kind == "choice":
            if self.p is None:
                raise ValueError("a 'choice' draw needs its probabilities p")
            object.__setattr__(self, "p", np.asarray(self.p, dtype=float))
        if self.into_contexts and self.kind not in ("normal", "uniform"):
            raise ValueError("only a normal or uniform draw can be drawn into the contexts")

    @property
    def values_per_round(self):
        """Numbers one round of the draw holds while it is drawn."""
        size = int(np.prod(self.shape, dtype=np.int64))
        return size + self.high if self.kind == "distinct" else size

    def numpy(self, rng, n, out=None):
        """The rows of ``n`` rounds, shape ``(n,) + shape``, from the Generator ``rng``
        (into ``out``, of that shape and float64, for a normal or uniform draw)."""
        size = (n,) + self.shape
        if self.kind == "normal":
            return rng.standard_normal(size) if out is None else rng.standard_normal(out=out)
        if self.kind == "uniform":
            return rng.random(size) if out is None else rng.random(out=out)
        if self.kind == "integers":
            return rng.integers(self.high, size=size)
        if self.kind == "choice":
            return rng.choice(self.p.size, size=size, p=self.p)
        return _distinct(rng, n, self.shape, self.high)


def _distinct(rng, n, shape, high):
    """``shape[-1]`` distinct indices in ``[0, high)`` per row: the smallest of ``high``
    uniform keys (``argpartition``), the keys drawn :data:`_KEYS_PER_CALL` at a time."""
    k = shape[-1]
    rows = n * int(np.prod(shape[:-1], dtype=np.int64))
    idx = np.empty((rows, k), dtype=np.int64)
    step = max(1, _KEYS_PER_CALL // high)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        keys = rng.random((hi - lo, high))
        idx[lo:hi] = np.argpartition(keys, k - 1, axis=1)[:, :k]
    return idx.reshape((n,) + shape)


@dataclass(frozen=True)
class RoundDraws:
    """What a round draws, and how its features, expected rewards and rewards follow.

    Parameters
    ----------
    context_draws : tuple of Draw
        The draws of the arms' features, in stream order (maybe empty).
    contexts : callable
        ``contexts(parts, n) -> (n, K, d)``: the features of ``n`` rounds from their rows
        of each context draw (``parts``, a list in the order of ``context_draws``; a draw
        with ``into_contexts`` may be transformed in place and returned).
    reward_draws : tuple of Draw
        The draws of the rewards, in stream order, after the context draws.
    rewards : callable
        ``rewards(contexts, means, parts) -> (n, K)``: the rewards of ``n`` rounds from
        their features, their expected rewards (the environment's
        :meth:`~vits_ref.envs.Environment.expected_reward` of the features) and their rows
        of each reward draw.
    counter : callable, optional
        ``counter() -> (env_round, params)``: the compiled round body that generates these
        draws from the counter-based streams (each at its :attr:`Draw.stream`) and builds
        the round as ``contexts`` and ``rewards`` do, and its parameters
        (:mod:`vits_ref.kernels.bandit_streams`); None where there is none.
    """

    context_draws: tuple
    contexts: object = field(repr=False)
    reward_draws: tuple
    rewards: object = field(repr=False)
    counter: object = field(default=None, repr=False)

    @property
    def draws(self):
        """Every draw of a round, in stream order: the context draws, then the rewards'."""
        return tuple(self.context_draws) + tuple(self.reward_draws)

    def draw_rows(self, rng, n, contexts_out=None):
        """``(context parts, reward parts)``: every draw's rows of ``n`` rounds from
        ``rng``, in stream order (the one draw of the round's numbers that everything
        else is built from); a draw marked ``into_contexts`` fills ``contexts_out`` where
        it has the draw's shape (else the draw's own array)."""
        ctx = [d.numpy(rng, n, contexts_out if d.into_contexts and contexts_out is not None
                       and contexts_out.shape == (n,) + d.shape else None)
               for d in self.context_draws]
        return ctx, [d.numpy(rng, n) for d in self.reward_draws]

    def build(self, expected_reward, parts, n):
        """``(contexts, means, rewards)`` of ``n`` rounds from their draws' rows
        (:meth:`draw_rows`); ``expected_reward`` maps features to expected rewards."""
        ctx_parts, reward_parts = parts
        contexts = self.contexts(ctx_parts, n)
        means = expected_reward(contexts)
        return contexts, means, self.rewards(contexts, means, reward_parts)


def values_per_round(draws, n_arms, dim):
    """Numbers a round of ``draws`` (a :class:`RoundDraws`) holds: its drawn numbers and
    its built features, means and rewards (``n_arms (dim + 2)``)."""
    return n_arms * (dim + 2) + sum(d.values_per_round for d in draws.draws)


def block_rounds(draws, n_arms, dim):
    """Rounds of a block: as many as :data:`BLOCK_VALUES` numbers hold
    (:func:`values_per_round`), at least one."""
    return max(1, BLOCK_VALUES // values_per_round(draws, n_arms, dim))


def realise_blocks(env, draws, n_rounds, rng, out=None):
    """The blocks of a run, in order: ``(contexts, means, rewards)`` of rounds ``[b0, b0 +
    n)`` for ``b0 = 0, B, 2B, ...`` (``B`` = :func:`block_rounds`), each drawn from
    ``rng`` in one pass (:meth:`RoundDraws.draw_rows`) and built.

    ``out(b0, n)``, if given, returns the features' buffer ``(n, K, d)`` of the block, or
    None: a draw marked ``into_contexts`` is drawn straight into it (the caller's stacked
    array, say), the numbers being the same.
    """
    B = block_rounds(draws, env.n_arms, env.dim)
    for b0 in range(0, n_rounds, B):
        n = min(B, n_rounds - b0)
        buf = None if out is None else out(b0, n)
        yield draws.build(env.expected_reward, draws.draw_rows(rng, n, buf), n)


def slice_chunks(blocks, n_rounds, chunk):
    """Rounds ``[t0, t0 + min(chunk, n_rounds - t0))`` of consecutive ``blocks`` (each a
    tuple of arrays whose first axis is the rounds), for ``t0 = 0, chunk, ...``: a view of
    a block where the chunk lies in one, else the concatenation of its pieces."""
    cur, pos = None, 0
    for t0 in range(0, n_rounds, chunk):
        need = min(chunk, n_rounds - t0)
        pieces = []
        while need:
            if cur is None or pos == cur[0].shape[0]:
                cur, pos = next(blocks), 0
            take = min(need, cur[0].shape[0] - pos)
            pieces.append(tuple(a[pos:pos + take] for a in cur))
            pos += take
            need -= take
        if len(pieces) == 1:
            yield pieces[0]
        else:
            yield tuple(np.concatenate(p) for p in zip(*pieces, strict=True))
        del pieces
