"""What every model shares: construction from a feature size and the prior's kind."""


class Model:
    """Base of the reward models (:mod:`vits_ref.models`).

    A model is the Python face of a potential (:mod:`vits_ref.kernels.potential`): it
    validates and stores the observations and hands the kernels ``potential``,
    ``kernel_data()`` and ``kernel_scratch(n_rows)``.
    """

    #: the prior covariance of a general Gaussian prior, None for ``N(0, I/(lam eta))``
    prior_cov = None

    @classmethod
    def from_dim(cls, dim, eta=1.0, lam=1.0):
        """The model for features of size ``dim``: what an engine builds from ``model=NAME``.

        For models whose parameters are the features' weights (linear, logistic) the
        number of parameters is ``dim``; a network's is larger (``model.dim``).
        """
        return cls(dim, eta=eta, lam=lam)

    def _add_observed(self, features, rewards):
        """:meth:`add` of a batch already through :func:`vits_ref._validate.observations`
        (``features`` (n, dim) and ``rewards`` (n,) float64, finite and bounded): the
        engines' update checks a batch once and hands it here. A model whose ``add`` checks
        only that overrides it to skip the second check (:class:`~vits_ref.models.linear.
        Linear`, :class:`~vits_ref.models.logistic.Logistic`); the others check again."""
        self.add(features, rewards)

    @property
    def has_default_prior(self):
        """True for the prior ``N(0, I/(lam eta))`` (the fused bandit loops start there)."""
        return self.prior_cov is None
