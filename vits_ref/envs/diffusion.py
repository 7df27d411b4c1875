r"""The diffusion paper's bandits: ``theta_*`` drawn from a known prior (Kveton et al. 2024).

Every problem of the paper's section 6 draws the unknown parameter from a "true prior"
that the algorithms only know through samples: "All algorithms are evaluated on theta_*
sampled from the true prior". :class:`PriorBandit` is that environment:

- the *instance* (``seed``) is one draw ``theta_* ~ prior``; run :func:`vits_ref.bandit.simulate`
  with ``new_instance_per_run=True`` so that every run draws its own ``theta_*``;
- each round shows ``K`` arms: feature vectors uniform in the unit ball (synthetic
  problems, section 6.2), or ``K`` distinct rows of a finite pool (MovieLens, section
  6.3; digits, appendix C.2), **redrawn every round** ("In each round, K = 10 random
  actions are chosen randomly"; for the ball the text only says "sampled uniformly at
  random from a unit ball", read the same way; ``fixed_arms=True`` keeps one set per
  instance instead);
- rewards: ``x^T theta_* + sigma N(0, 1)`` (``reward="linear"``) or
  ``Bernoulli(sigmoid(x^T theta_*))`` (``"logistic"``); expected rewards are exact, so the
  regret is too.

:data:`PRIOR_SHAPES` holds the six 2-D priors of the synthetic problems (section 6.2 and
appendix C.1). The text names two, "a mixture of two Gaussians" and "cross" (and says "the
last can be approximated well by a mixture of two Gaussians"); its Figures 2 and 4 are
lost, so the shapes here are reconstructions, scaled so that ``|theta|`` is O(1) (arms have
``|x| <= 1``, noise ``sigma = 2``):

================ ==========================================================================
``mixture``      ``1/2 N((-0.8, -0.8), 0.05 I) + 1/2 N((0.8, 0.8), 0.05 I)``: the paper's
                 first problem, exactly a two-component mixture
``ring``         an annulus: angle uniform, radius ``1 + 0.1 N(0, 1)``
``cross``        the paper's "cross", reconstructed as two perpendicular thin bars through
                 the origin: with probability 1/2 each, ``(u, 0.1 z)`` or ``(0.1 z, u)``,
                 ``u ~ U(-sqrt 3, sqrt 3)`` (unit variance along the bar), ``z ~ N(0, 1)``.
                 Uniform along each bar so that, as the paper says, two Gaussians
                 approximate it well but not exactly
``banana``       a crescent: ``(u, 0.6 (u^2 - 1) + 0.15 z)``, ``u ~ U(-sqrt 3, sqrt 3)``,
                 ``z ~ N(0, 1)`` (mean 0, bounded along the arc)
``spiral``       a 1.5-turn spiral: ``t ~ U(0, 1)``, angle ``3 pi t``, radius
                 ``0.25 + 1.25 t``, plus ``0.05 N(0, I)``
``checkerboard`` uniform on the 8 "black" squares (row + column even) of a 4 x 4 board
                 on ``[-1.5, 1.5]^2``
================ ==========================================================================

The order is the figures' guess: Figure 2 shows ``mixture``, ``ring``, ``cross`` (first
the mixture, last the cross, as the text says), Figure 4 the other three.

Helpers build the higher-dimensional problems: :func:`movielens_prior_bandit` (rank-5
ALS embeddings, ``K = 10``, ``sigma = 0.75``) and :func:`digits_prior_bandit` (the
appendix C.2 digit embeddings, ``K = 10``, ``sigma = 1``).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as val
from .base import Environment
from .rounds import Draw, RoundDraws

__all__ = ["PRIOR_SHAPES", "PriorBandit", "PriorShape", "digits_prior_bandit",
           "movielens_prior_bandit", "prior_bandit"]

#: The reward models of :class:`PriorBandit`.
REWARDS = ("linear", "logistic")


# ------------------------------------------------------------------------------------------
# the six 2-D prior shapes
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PriorShape:
    """A named 2-D prior of ``theta``: ``sample(n, rng)`` returns ``(n, 2)`` draws.

    Attributes
    ----------
    name : str
    description : str
        What the distribution is (its sampler's docstring).
    mixture : tuple or None
        ``(weights, means, covs)`` when the shape is exactly a Gaussian mixture (only
        ``mixture``), for exact checks of MixTS.
    """

    name: str
    sampler: object = field(repr=False)
    mixture: tuple | None = field(default=None, repr=False)
    dim: int = 2

    @property
    def description(self):
        return " ".join(self.sampler.__doc__.split())

    def sample(self, n, rng=None):
        """``n`` draws, shape (n, 2); ``rng``: int, SeedSequence, Generator or None."""
        n = val.positive_int(n, "n")
        return self.sampler(n, val.as_generator(rng, "rng"))


_MIX = (np.array([0.5, 0.5]), np.array([[-0.8, -0.8], [0.8, 0.8]]),
        np.array([0.05 * np.eye(2), 0.05 * np.eye(2)]))


def _mixture(n, rng):
    """Two Gaussians with equal weights, means (-0.8, -0.8) and (0.8, 0.8), covariance
    0.05 I each (standard deviation 0.22): the paper's first synthetic problem."""
    comp = rng.random(n) < 0.5
    z = rng.standard_normal((n, 2)) * math.sqrt(0.05)
    return np.where(comp[:, None], _MIX[1][0], _MIX[1][1]) + z


def _ring(n, rng):
    """An annulus: angle uniform on [0, 2 pi), radius 1 + 0.1 N(0, 1)."""
    angle = rng.uniform(0.0, 2.0 * np.pi, n)
    radius = 1.0 + 0.1 * rng.standard_normal(n)
    return radius[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])


def _cross(n, rng):
    """Two perpendicular thin bars through the origin (a "+"): with probability 1/2 each,
    (u, 0.1 z) or (0.1 z, u), u uniform on (-sqrt 3, sqrt 3) (unit variance along the bar),
    z ~ N(0, 1) (thickness 0.1). Reconstruction of the paper's "cross", which "can be
    approximated well by a mixture of two Gaussians"."""
    horizontal = rng.random(n) < 0.5
    u = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), n)
    z = 0.1 * rng.standard_normal(n)
    return np.where(horizontal[:, None], np.column_stack([u, z]), np.column_stack([z, u]))


def _banana(n, rng):
    """A crescent (banana): (u, 0.6 (u^2 - 1) + 0.15 z) with u uniform on (-sqrt 3, sqrt 3)
    (unit variance, so the mean is 0) and z ~ N(0, 1)."""
    u = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), n)
    z = rng.standard_normal(n)
    return np.column_stack([u, 0.6 * (u * u - 1.0) + 0.15 * z])


def _spiral(n, rng):
    """A 1.5-turn spiral (swiss roll): t ~ U(0, 1), angle 3 pi t, radius 0.25 + 1.25 t,
    plus 0.05 N(0, I) noise."""
    t = rng.random(n)
    angle = 3.0 * np.pi * t
    radius = 0.25 + 1.25 * t
    pts = radius[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])
    return pts + 0.05 * rng.standard_normal((n, 2))


_BLACK = np.array([(i, j) for i in range(4) for j in range(4) if (i + j) % 2 == 0], float)


def _checkerboard(n, rng):
    """Uniform on the 8 "black" squares (row + column even) of a 4 x 4 board of side-0.75
    squares covering [-1.5, 1.5]^2."""
    square = _BLACK[rng.integers(len(_BLACK), size=n)]
    return -1.5 + 0.75 * (square + rng.random((n, 2)))


#: The six 2-D priors of the synthetic problems, by name (see the module docstring).
PRIOR_SHAPES = {
    "mixture": PriorShape("mixture", _mixture, mixture=_MIX),
    "ring": PriorShape("ring", _ring),
    "cross": PriorShape("cross", _cross),
    "banana": PriorShape("banana", _banana),
    "spiral": PriorShape("spiral", _spiral),
    "checkerboard": PriorShape("checkerboard", _checkerboard),
}


# ------------------------------------------------------------------------------------------
# the environment
# ------------------------------------------------------------------------------------------

def _as_prior(prior, dim):
    """``(sampler(n, rng), dim, empirical samples or None)`` of a prior given by the user."""
    if isinstance(prior, str):
        prior = PRIOR_SHAPES[val.choice(prior, "prior", tuple(PRIOR_SHAPES))]
    if isinstance(prior, PriorShape):
        return prior.sample, prior.dim, None
    if callable(getattr(prior, "sample", None)):
        if dim is None:
            dim = getattr(prior, "dim", None)
        if dim is None:
            raise ValueError("dim is needed for a prior given as an object with sample(n, rng)")
        return prior.sample, val.positive_int(dim, "dim"), None
    samples = _frozen(val.float_array(prior, "prior", ndim=2))
    if samples.shape[0] == 0 or samples.shape[1] == 0:
        raise ValueError(f"prior samples must have shape (m, d) with m, d >= 1, "
                         f"got {samples.shape}")

    def empirical(n, rng):
        return samples[rng.integers(samples.shape[0], size=n)]

    return empirical, samples.shape[1], samples


def _frozen(arr):
    """A read-only array: ``arr`` itself if already read-only, else a read-only copy (the
    caller's array is never touched)."""
    if arr.flags.writeable:
        arr = arr.copy()
        arr.setflags(write=False)
    return arr


def _unit_ball(shape, d, rng):
    """Uniform draws in the d-dimensional unit ball: a uniform direction (normalised
    Gaussian) times a radius ``U^(1/d)``."""
    g = rng.standard_normal(shape + (d,))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    return g * rng.random(shape + (1,)) ** (1.0 / d)


class PriorBandit(Environment):
    r"""A contextual bandit whose ``theta_*`` is one draw from a known prior.

    Parameters
    ----------
    prior : str, PriorShape, object with ``sample(n, rng)``, or array (m, d)
        The true prior: a name of :data:`PRIOR_SHAPES`, a shape, any sampler (then ``dim``
        is needed unless it has a ``dim`` attribute), or samples whose empirical
        distribution is the prior (each instance draws one row uniformly).
    n_arms : int, default 100
        Arms per round ``K``.
    dim : int or None
        The dimension; None: the prior's. Checked against the prior and the pool.
    sigma : float, default 2.0
        Reward noise standard deviation (linear rewards).
    reward : {"linear", "logistic"}
    arms : "ball" or array (pool_size, d)
        Arm features uniform in the unit ball, or a pool of feature vectors from which
        ``K`` distinct ones are drawn uniformly each round (``pool_size >= K``).
    fixed_arms : bool, default False
        Ball arms only: one set of ``K`` arms per instance instead of new arms each round.
    seed : int, SeedSequence, Generator or None
        The instance: ``theta_*`` (and the fixed arms).

    Attributes
    ----------
    theta_star : ndarray, shape (d,)
    prior_pool : ndarray or None
        The prior's samples when it was given as an array.

    Notes
    -----
    Expected reward ``x^T theta_*`` or ``sigmoid(x^T theta_*)``; a linear reward adds
    ``sigma N(0, 1)``, one draw per round shared by the arms (only the played arm's is
    observed), as the library's other environments do. Logistic rewards are
    ``Bernoulli(sigmoid(x^T theta_*))``.

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.prior_bandit("cross", n_arms=100, sigma=2.0, seed=0)
    >>> run = env.realise(50, rng=1)
    >>> run.contexts.shape, float(abs(run.contexts).max()) <= 1.0
    ((50, 100, 2), True)
    >>> env.prior_samples(10_000, rng=0).shape
    (10000, 2)
    """

    name = "prior-bandit"

    def __init__(self, prior, n_arms=100, dim=None, sigma=2.0, reward="linear", arms="ball",
                 fixed_arms=False, seed=None):
        self._sampler, prior_dim, self.prior_pool = _as_prior(prior, dim)
        self.prior = prior if self.prior_pool is None else self.prior_pool
        if dim is not None and val.positive_int(dim, "dim") != prior_dim:
            raise ValueError(f"dim ({dim}) does not match the prior's dimension ({prior_dim})")
        if val.choice(reward, "reward", REWARDS + ("quadratic",)) == "quadratic":
            raise ValueError("reward must be 'linear' or 'logistic' for the prior bandit")
        self.sigma = val.positive_float(sigma, "sigma")
        self.noise_scale = self.sigma
        n_arms = val.positive_int(n_arms, "n_arms")
        if isinstance(arms, str):
            if arms != "ball":
                raise ValueError(f"arms must be 'ball' or an array of feature vectors, "
                                 f"got {arms!r}")
            self.pool = None
        else:
            self.pool = _frozen(val.float_array(arms, "arms", ndim=2, shape=(None, prior_dim)))
            if self.pool.shape[0] < n_arms:
                raise ValueError(f"the arm pool has {self.pool.shape[0]} rows but n_arms is "
                                 f"{n_arms}: each round draws n_arms distinct rows")
        if not isinstance(fixed_arms, (bool, np.bool_)):
            raise TypeError(f"fixed_arms must be a bool, got {type(fixed_arms).__name__}")
        if fixed_arms and self.pool is not None:
            raise ValueError("fixed_arms applies to arms='ball' only")
        self.fixed_arms = bool(fixed_arms)
        self.arms = "ball" if self.pool is None else self.pool
        super().__init__(prior_dim, n_arms, reward, seed)

    def _build(self, rng):
        self.theta_star = np.array(self._sampler(1, rng)[0], dtype=float)
        if self.theta_star.shape != (self.dim,) or not np.all(np.isfinite(self.theta_star)):
            raise ValueError(f"the prior's sampler must return finite rows of size {self.dim}")
        self.arm_set = (_unit_ball((self.n_arms,), self.dim, rng) if self.fixed_arms
                        else None)

    def round_draws(self):
        """A round: nothing drawn for fixed arms; for the ball, ``K d`` normals (the
        directions) then ``K`` uniforms ``u`` (the radii ``u^(1/d)``, :func:`_unit_ball`);
        for a pool, ``K`` distinct rows, uniform among the subsets; then the reward model's
        draws (:meth:`Environment._reward_round`). No counter piece."""
        K, d, arm_set, pool = self.n_arms, self.dim, self.arm_set, self.pool
        if arm_set is not None:
            def contexts(parts, n):
                return np.broadcast_to(arm_set, (n,) + arm_set.shape).copy()

            draws = ()
        elif pool is None:
            def contexts(parts, n):
                g, u = parts
                g = g / np.linalg.norm(g, axis=-1, keepdims=True)
                return g * u ** (1.0 / d)

            draws = (Draw("normal", (K, d)), Draw("uniform", (K, 1)))
        else:
            def contexts(parts, n):
                return pool[parts[0]]

            draws = (Draw("distinct", (K,), high=pool.shape[0]),)
        return RoundDraws(draws, contexts, **self._reward_round())

    def prior_samples(self, n, rng=None):
        """``n`` draws of the true prior, shape (n, d): the training samples of a learned
        prior (10 000 in the paper). For an empirical prior, rows drawn with replacement;
        the pool itself is :attr:`prior_pool`."""
        n = val.positive_int(n, "n")
        return np.array(self._sampler(n, val.as_generator(rng, "rng")), dtype=float)

    def _params(self):
        return {"prior": self.prior, "n_arms": self.n_arms, "dim": self.dim,
                "sigma": self.sigma, "reward": self.reward, "arms": self.arms,
                "fixed_arms": self.fixed_arms, "seed": self.seed}

    def __repr__(self):
        def short(v):
            if isinstance(v, np.ndarray):
                return f"<array {v.shape}>"
            if isinstance(v, PriorShape):
                return repr(v.name)
            return repr(v)

        args = ", ".join(f"{k}={short(v)}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"


def prior_bandit(prior, n_arms=100, dim=None, sigma=2.0, reward="linear", arms="ball",
                 fixed_arms=False, seed=None):
    """A bandit with ``theta_*`` drawn from ``prior`` (see :class:`PriorBandit`).

    The synthetic problems of the diffusion paper: ``prior_bandit(name)`` for a name of
    :data:`PRIOR_SHAPES`, with the defaults ``K = 100``, ``sigma = 2``, arms uniform in the
    unit ball. Run with ``vr.simulate(..., new_instance_per_run=True)``.

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.prior_bandit("mixture", seed=3)
    >>> env.theta_star.shape, env.n_arms, env.noise_scale
    ((2,), 100, 2.0)
    """
    return PriorBandit(prior, n_arms=n_arms, dim=dim, sigma=sigma, reward=reward, arms=arms,
                       fixed_arms=fixed_arms, seed=seed)


def movielens_prior_bandit(path=None, reward="linear", n_arms=10, sigma=0.75, theta="movies",
                           rank=5, lam=1.0, n_iter=50, data_seed=0, synthetic_kwargs=None,
                           seed=None):
    r"""The MovieLens problem of the diffusion paper (section 6.3) as a :class:`PriorBandit`.

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens ratings file (:func:`vits_ref.data.load_ratings`); None for the
        synthetic stand-in (:func:`vits_ref.data.synthetic_ratings`).
    reward : {"linear", "logistic"}
    n_arms : int, default 10
    sigma : float, default 0.75
        Noise of the linear rewards ("estimated from data" in the paper).
    theta : {"movies", "users"}, default "movies"
        Which embeddings are the parameters. The paper: "We use the item embeddings V_j as
        unknown model parameters and the user embeddings U_i as features of the actions";
        so by default the prior of ``theta`` is the empirical distribution of the movie
        vectors and the arm pool is the user vectors. ``"users"`` swaps the roles.
    rank, lam, n_iter, data_seed, synthetic_kwargs
        The factorisation (:func:`vits_ref.data.factorization`, cached per process).
    seed : int, SeedSequence, Generator or None
        The instance (which movie is ``theta_*``).

    Returns
    -------
    PriorBandit
        Its ``prior_pool`` holds the parameter vectors (the training samples of a learned
        prior) and ``pool`` the arm features.

    Examples
    --------
    >>> import vits_ref as vr
    >>> small = {"n_users": 60, "n_movies": 40, "n_ratings": 600}
    >>> env = vr.envs.movielens_prior_bandit(synthetic_kwargs=small, seed=0)
    >>> env.prior_pool.shape, env.pool.shape, env.n_arms, env.noise_scale
    ((40, 5), (60, 5), 10, 0.75)
    """
    from ..data import factorization

    theta = val.choice(theta, "theta", ("movies", "users"))
    users, movies, _ = factorization(path, rank=val.positive_int(rank, "rank"), lam=lam,
                                     n_iter=n_iter, data_seed=data_seed,
                                     synthetic_kwargs=synthetic_kwargs)
    params, features = (movies, users) if theta == "movies" else (users, movies)
    return PriorBandit(params, n_arms=n_arms, sigma=sigma, reward=reward, arms=features,
                       seed=seed)


def digits_prior_bandit(reward="linear", n_arms=10, sigma=1.0, seed=None, **digit_kwargs):
    r"""The digits problem (appendix C.2, on scikit-learn's digits) as a :class:`PriorBandit`.

    The prior of ``theta`` is the empirical distribution of the linear fits of
    :func:`vits_ref.data.digits.digit_embeddings`; the arm pool is the 8-d embeddings of
    all 1 797 digits, ``K = 10`` drawn each round; ``sigma = 1`` for linear rewards.
    ``digit_kwargs`` go to :func:`~vits_ref.data.digits.digit_embeddings` (needs
    scikit-learn).
    """
    from ..data.digits import digit_embeddings

    emb, thetas = digit_embeddings(**digit_kwargs)
    return PriorBandit(thetas, n_arms=n_arms, sigma=sigma, reward=reward, arms=emb, seed=seed)
