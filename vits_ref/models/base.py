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

    @property
    def has_default_prior(self):
        """True for the prior ``N(0, I/(lam eta))`` (the fused bandit loops start there)."""
        return self.prior_cov is None
