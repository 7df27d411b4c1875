"""Reward models as potentials ``U(theta) = -log posterior(theta) + const``.

One module per model: :mod:`.linear` (sufficient statistics), and, for non-linear
models, modules that keep their history in preallocated buffers.

The model protocol (what the engines of :mod:`vits_ref.inference` use):

``name``, ``dim``, ``input_dim``, ``eta``, ``lam``, ``n_obs``
    identity, sizes (``dim`` the number of parameters, ``input_dim`` the size of an arm's
    features) and hyperparameters.
``add(features, rewards)``
    append observations (validated; ``features`` (n, input_dim), ``rewards`` (n,)).
``value(theta)``, ``grad(theta)``, ``hess(theta)``
    the potential, its gradient and its Hessian (or the documented approximation).
``grads_hessian(thetas, want_hessian)``
    ``(G, H)``: the gradients at the rows of ``thetas`` (M, dim), shape (M, dim), and the
    mean of the Hessians at those points (dim, dim), or None when not wanted.
``potential``, ``kernel_data(prior=True)``, ``kernel_scratch(n_rows=1)``
    the compiled potential (:class:`vits_ref.kernels.potential.Potential`), the tuple of
    arrays and scalars its bodies read (``prior=False``: the likelihood's part only, which
    the Laplace engine completes with the prior as a Gaussian term), and the scratch the
    model owns. What every engine's compiled steps use; no engine knows a model's type.
``has_default_prior``, ``from_dim(dim, eta, lam)``
    from :class:`.base.Model`.
``predict(theta, contexts)``
    the score of each arm (rows of ``contexts``, (K, input_dim)) under ``theta``, whose
    argmax Thompson sampling plays.
``spawn(eta, lam)``
    a model of the same kind and shape with no data: how an engine turns a model given
    as a specification (e.g. ``MLP(20)``) into its own.

:data:`MODELS` maps the model names accepted by the engines' ``model=`` argument to
classes constructed as ``cls.from_dim(dim, eta=eta, lam=lam)`` (``dim``: the size of the
features). A new model is one kernel module with a ``Potential`` and one module here.

Optional hooks of the particle engines (:mod:`vits_ref.inference.particles`):

``minibatch_data(index, like_weight=1.0, prior_weight=1.0)``
    the ``data`` tuple for ``model.potential`` (same types as ``kernel_data()``, so no
    recompilation) representing ``U(theta) = -like_weight * sum_{i in index} log p(y_i |
    x_i, theta) - prior_weight * log p0(theta)`` on the rows ``index`` (1-D integers in
    ``[0, n_obs)``) of the model's history, with the likelihood and prior exactly as the
    model's full potential has them (tempered by ``eta`` where the model tempers), so
    ``minibatch_data(arange(n_obs), 1, 1)`` is the full potential. Weights ``>= 0``; 0
    removes a term. OPVI's mini-batches use it (the linear model, which keeps statistics
    only, has none: OPVI keeps that model's history itself). Implemented by
    :class:`Logistic` and the particle models.
``sample_prior(n, rng)``
    ``n`` draws ``(n, dim)`` of the prior from the Generator ``rng``, where the prior is
    not the Gaussian ``(prior_mean, prior_cov)`` / ``N(0, I/(lam eta))`` (SVGD's and
    OPVI's initial particles).
"""

from .base import Model
from .linear import Linear
from .logistic import Logistic
from .mlp import MLP

MODELS = {"linear": Linear}
MODELS["logistic"] = Logistic
MODELS["mlp"] = MLP

__all__ = ["MODELS", "Linear", "Logistic", "MLP", "Model"]

# particle models (the OPVI paper): the Welling-Teh mixture, the BNN regression and classifier
from .bnn import BNNRegression, regression_metrics  # noqa: E402
from .classifier import BNNClassifier, accuracy  # noqa: E402
from .welling_teh import WellingTeh, posterior_grid, welling_teh_data  # noqa: E402

MODELS["bnn"] = BNNRegression  # from_dim(p): the 50-unit BNN on p inputs
__all__ += ["BNNClassifier", "BNNRegression", "WellingTeh", "accuracy", "posterior_grid",
            "regression_metrics", "welling_teh_data"]
