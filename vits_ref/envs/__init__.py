"""The VITS paper's bandit environments, seeded, with exact expected rewards.

- :mod:`vits_ref.envs.base`: :class:`Environment` (the protocol: a seeded instance,
  :meth:`Environment.realise` for a run) and :class:`Realisation` (one run's contexts,
  expected rewards and rewards);
- :mod:`vits_ref.envs.rounds`: what a round draws and how it is built, declared once per
  environment (:meth:`Environment.round_draws`), from which the whole and the chunked
  realisations and the counter-based streams' round derive;
- :mod:`vits_ref.envs.synthetic`: the pool of appendix H (:func:`pool`) and the hard
  instance of appendix G (:func:`hard_instance`);
- :mod:`vits_ref.envs.movielens`: the per-arm MovieLens bandit of section 5
  (:func:`movielens`); its data, factorisation and cache are in :mod:`vits_ref.data`;
- :mod:`vits_ref.envs.mixture`: arms paying mixtures of linear-Gaussian experts, with the
  VTS paper's scenarios A and B (:func:`vts_scenario`);
- :mod:`vits_ref.envs.classification`: a classification data set as a bandit, one arm per
  class (:class:`ClassificationBandit`), and scikit-learn's bundled data sets
  (:func:`sklearn_bandit`); :mod:`vits_ref.envs.wheel`: the wheel bandit of Riquelme et
  al. (:func:`wheel`); both give the linear engines the disjoint encoding
  (:mod:`vits_ref.envs.disjoint`).

Every realisation carries the expected reward of every arm, so regret is exact.
"""

from .base import REWARDS, Environment, Realisation
from .classification import ClassificationBandit, sklearn_bandit
from .diffusion import (
    PRIOR_SHAPES,
    PriorBandit,
    PriorShape,
    digits_prior_bandit,
    movielens_prior_bandit,
    prior_bandit,
)
from .mixture import MixtureEnvironment, vts_scenario
from .movielens import MovieLensEnvironment, movielens
from .synthetic import HardInstance, PoolEnvironment, hard_instance, pool
from .wheel import WheelBandit, wheel

__all__ = ["REWARDS", "Environment", "HardInstance", "MixtureEnvironment",
           "MovieLensEnvironment", "PoolEnvironment", "Realisation", "hard_instance",
           "movielens", "pool", "vts_scenario"]
__all__ += ["PRIOR_SHAPES", "PriorBandit", "PriorShape", "digits_prior_bandit",
            "movielens_prior_bandit", "prior_bandit"]
__all__ += ["ClassificationBandit", "WheelBandit", "sklearn_bandit", "wheel"]
