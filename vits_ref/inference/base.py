"""The engine protocol every approximate posterior follows.

An engine holds a posterior over ``theta`` (dimension ``dim``) for one reward model:

``update(features, rewards)``
    append observations (``features`` (n, dim), ``rewards`` (n,)) and refit (inner steps).
``sample(n)``
    ``n`` draws, shape ``(n, dim)``, from the engine's sampling stream.
``mean``, ``cov``
    the current Gaussian, where the engine has one (:class:`GaussianEngine`).
``diagnostics``
    a :class:`Diagnostics` (a dict) of what the last update did (step size, steps, ...);
    its docstring lists every key an engine sets, what it means and which engines set it.
    An engine creates it in its constructor (``Diagnostics(n_obs=0)``, done by
    :class:`Engine`) and updates it in place.
``fresh(seed)``
    a new engine with the same hyperparameters, at the prior, with its own seed: how
    :func:`vits_ref.bandit.simulate` starts each run.
``fused(kl=False)``
    the engine's part of the fused compiled bandit loop (a
    :class:`vits_ref.drivers.fused.FusedSpec`), or None where it has none (non-linear
    models, general priors, some schedules).

Every engine's constructor starts ``(dim, model="linear", eta=1.0, lam=1.0, ...)`` and
ends with ``seed=None``; arguments with the same name mean the same thing everywhere.

Engines draw their randomness from two streams (:func:`vits_ref._seeding.engine_streams`):
one for Thompson draws, one for the inner steps of ``update``.

:class:`Engine` is the contract: :class:`vits_ref.ThompsonSampling` and
:class:`vits_ref.PerArm` take any instance of it (a nominal type, not a structural
protocol: an engine also inherits its transactional ``update``, its validation and its
seeding from it).
The policies' structural contract is :class:`vits_ref.bandit.protocols.Policy`.
"""

import inspect
import math
import warnings

import numpy as np

from .. import _validate as val
from .._seeding import engine_streams
from .._threads import blas_restore, blas_to_one
from ..errors import DegenerateCovarianceError, DivergenceError
from ..models import MODELS
from ..models._history import History
from .persist import Persistent


class Diagnostics(dict):
    """What an engine's last update did: a dict whose keys are documented here.

    Every engine creates one (:class:`Engine` does: ``Diagnostics(n_obs=0)``) and updates
    it in place; :class:`vits_ref.VTS` (a policy) keeps one too. The same key means the
    same thing in every engine that sets it. Keys (and who sets them):

    ``n_obs`` (int)
        Observations seen so far. Every engine; VTS: over all arms.
    ``step_size`` (float or None)
        The step size of the last update's inner steps (None before the first): VITS (the
        square root's ``h`` at that round), Langevin, SGLD (the last step's ``h_t``), SVGD
        and OPVI, RenyiVI (Adam's step size).
    ``n_steps`` (int)
        Inner steps of the last update (0 before the first): VITS, Langevin, SGLD, SVGD,
        OPVI, RenyiVI.
    ``total_steps`` (int)
        Inner steps taken since the prior, over all updates: SVGD and OPVI, RenyiVI
        (Adam's step count ``t``). Replaces SVGD's ``steps`` and RenyiVI's
        ``adam_steps``, which stay readable (see :attr:`ALIASES`).
    ``capped_rounds`` (int)
        Rounds whose step count the ``"theoretical"`` schedule's ``max_steps`` capped: VITS.
    ``batch_size`` (int)
        Observations in the last update's mini-batch: SGLD, OPVI.
    ``prior_weight`` (float)
        The prior's weight ``eta_t`` in the last round's potential: OPVI.
    ``bandwidth`` (float)
        The kernel bandwidth of the last SVGD step: SVGD, OPVI.
    ``converged`` (bool)
        Whether the last Newton/IRLS fit met its tolerance within ``max_iter``: Laplace.
    ``newton_iterations`` (int)
        Newton/IRLS iterations of the last fit: Laplace (its update), DiffTS with the
        logistic model (all stages of the last :meth:`~Engine.sample`). Replaces
        Laplace's ``irls_iterations``, which stays readable (see :attr:`ALIASES`).
    ``stages_not_converged`` (int)
        Stage solves of the last sample that stopped at ``max_iter``: DiffTS (logistic).
    ``bound``, ``ess`` (float)
        The Monte Carlo Rényi bound (up to the potential's constant) and the importance
        weights' effective sample size ``1/sum w^2``, at the start of the last step:
        RenyiVI.
    ``weights``, ``log_evidence`` ((K,) arrays), ``log_marginal`` (float)
        The mixture prior's posterior weights, the ``K`` values ``log p(h | k)`` and
        ``log p(h)``: MixTS.
    ``expected_rewards`` ((n_arms,) array)
        Every arm's posterior-mean expected reward at the last ``select``: VTS.
    ``arm`` (int), ``iterations`` (int), ``elbo`` (float), ``elbo_trace`` (array)
        The arm refitted by the last update, its CAVI iterations, final ELBO and ELBO per
        iteration: VTS.

    An engine of one's own may add keys of its own; the library's engines set only these
    (``tests/test_protocols.py`` checks it).

    Examples
    --------
    >>> from vits_ref.inference.base import Diagnostics
    >>> d = Diagnostics(n_obs=0)
    >>> d.update(newton_iterations=3)
    >>> d["newton_iterations"], sorted(d)
    (3, ['n_obs', 'newton_iterations'])
    """

    #: every key the library's engines set -> its meaning (the class docstring says more)
    KEYS = {
        "n_obs": "observations seen so far",
        "step_size": "step size of the last update's inner steps",
        "n_steps": "inner steps of the last update",
        "total_steps": "inner steps since the prior, over all updates",
        "capped_rounds": "rounds whose step count max_steps capped",
        "batch_size": "observations in the last update's mini-batch",
        "prior_weight": "the prior's weight in the last round's potential",
        "bandwidth": "kernel bandwidth of the last SVGD step",
        "converged": "whether the last Newton/IRLS fit converged",
        "newton_iterations": "Newton/IRLS iterations of the last fit",
        "stages_not_converged": "stage solves of the last sample stopped at max_iter",
        "bound": "Monte Carlo Renyi bound at the start of the last step",
        "ess": "importance weights' effective sample size at the start of the last step",
        "weights": "posterior weights of the mixture prior's components",
        "log_evidence": "log p(h | k) per component",
        "log_marginal": "log p(h)",
        "expected_rewards": "posterior-mean expected reward per arm at the last select",
        "arm": "the arm refitted by the last update",
        "iterations": "CAVI iterations of the last update",
        "elbo": "final ELBO of the last update",
        "elbo_trace": "ELBO per CAVI iteration of the last update",
    }

    #: old key -> the key that replaced it: reading the old one still works (for one
    #: release), with a DeprecationWarning naming the new one
    ALIASES = {
        "irls_iterations": "newton_iterations",
        "steps": "total_steps",
        "adam_steps": "total_steps",
    }

    def _canonical(self, key):
        new = self.ALIASES.get(key) if isinstance(key, str) else None
        if new is None or dict.__contains__(self, key):
            return key
        warnings.warn(f"diagnostics[{key!r}] is deprecated: read diagnostics[{new!r}]",
                      DeprecationWarning, stacklevel=3)
        return new

    def __getitem__(self, key):
        return dict.__getitem__(self, self._canonical(key))

    def get(self, key, default=None):
        """``self[key]`` if present (an old key of :attr:`ALIASES` reads its new one),
        else ``default``."""
        return dict.get(self, self._canonical(key), default)

    def __contains__(self, key):
        new = self.ALIASES.get(key) if isinstance(key, str) else None
        return dict.__contains__(self, key) or (new is not None
                                                and dict.__contains__(self, new))


class Engine(Persistent):
    """Base class: validation, seeding, the model and the protocol's defaults.

    ``save(path)`` writes the engine (hyperparameters: :meth:`_params`; state: the
    attributes each class lists in ``_persist_state``, accumulated over its bases) and
    :func:`vits_ref.load` reads it back (:mod:`vits_ref.inference.persist`).
    """

    #: short name used in messages and results
    name = "engine"
    #: what :func:`vits_ref.load` puts back after construction (a subclass adds its own)
    _persist_state = ("_rng_sample", "_rng_update", "diagnostics", "model")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, seed=None):
        self.dim = val.positive_int(dim, "dim")
        self.eta, self.lam = val.eta_lam(eta, lam)
        if isinstance(model, str):
            model = val.choice(model, "model", tuple(MODELS))
            # dim is the features' size; the engine's dimension is the model's parameter
            # count (the same for "linear" and "logistic", larger for "mlp")
            self.model = MODELS[model].from_dim(self.dim, eta=self.eta, lam=self.lam)
            self.dim = self.model.dim
        elif hasattr(model, "spawn") and hasattr(model, "potential"):
            self.model = model.spawn(self.eta, self.lam)
            if self.model.dim != self.dim:
                raise ValueError(f"dim ({self.dim}) must equal the model's number of "
                                 f"parameters ({self.model.dim})")
        else:
            raise TypeError(f"model must be one of {sorted(MODELS)} or a model object "
                            f"(vits_ref.models), got {type(model).__name__}")
        self.model_spec = model
        self.seed = seed
        self._rng_sample, self._rng_update = engine_streams(seed)
        self.diagnostics = Diagnostics(n_obs=0)

    # -- the random streams --------------------------------------------------------------
    # A door may take the engine's normals ahead in blocks (vits_ref.bandit._core.
    # HeldDraws, under "_held_draws"). Reading or replacing a stream first puts the
    # generator back where the draws taken so far leave it, so that anything else that
    # draws (the engine's own methods, save, a copy) sees the stream as if every call
    # had drawn its own, bit for bit.
    def _stream(key, doc):  # noqa: N805 (a property factory of the class body)
        def get(self):
            if "_held_draws" in self.__dict__:
                self._settle_draws()
            return self.__dict__[key]

        def put(self, rng):
            if "_held_draws" in self.__dict__:
                self._settle_draws()
            self.__dict__[key] = rng

        return property(get, put, doc=doc)

    _rng_sample = _stream("_sample_stream", "The sampling stream (draws of ``sample``, "
                          "and of a bandit's selections).")
    _rng_update = _stream("_update_stream", "The update stream (draws of ``update``'s "
                          "steps).")
    del _stream

    def _settle_draws(self):
        """Put each stream a door drew ahead from back where its taken draws leave it."""
        for held in self.__dict__.pop("_held_draws").values():
            held.settle()

    #: Whether :meth:`update` on a batch equals the updates one row at a time (to
    #: rounding): true of the exact linear engine; the iterative engines run one step
    #: schedule per batch, and Laplace fits the MAP to a tolerance.
    batch_is_sequential = False

    # -- protocol -----------------------------------------------------------------------
    @property
    def n_obs(self):
        """Number of observations seen so far."""
        return self.model.n_obs

    def update(self, features, rewards):
        """Append observations and refit. Subclasses implement :meth:`_refit`.

        Parameters
        ----------
        features : (n, dim) array
        rewards : (n,) array

        Returns
        -------
        self

        Notes
        -----
        A batch of ``n`` rows is one update: the rows are added together and the engine
        refits once. The exact engines (LinTS, Laplace on the linear model) end at the
        posterior of all the observations whatever their grouping, to rounding (Laplace
        on the logistic model at its MAP, to the Newton/IRLS fit's tolerance). The
        iterative engines (VITS, LMC-TS) run **one step schedule per batch**: ``K_t``
        steps of size ``h_t`` with ``t = n_obs`` counted after the batch, where the same
        rows one at a time run ``n K_t`` steps, each update's at its own ``t``. Once
        every row is in, both iterate the same map, whose fixed point (VITS: the Gaussian
        of its Wasserstein gradient flow, the exact posterior on the linear model) or
        stationary law (LMC-TS) is that of the whole data: with enough steps, a batch
        and the rows one by one end at the same posterior, up to the steps' Monte Carlo
        noise (``tests/test_batch_updates.py``). With a bandit's few steps a round, a
        batch update has taken fewer steps toward it; updates one row at a time
        (:meth:`vits_ref.Online.update`, :meth:`vits_ref.Bandit.partial_fit`, a
        simulation) follow the per-observation schedule.
        """
        return self._update_observed(*val.observations(features, rewards,
                                                        self.model.input_dim))

    def _update_observed(self, features, rewards):
        """:meth:`update` of a batch already through :func:`vits_ref._validate.observations`
        (the policies' batch doors check their rounds whole, then hand the played rows
        here): the model adds it without checking it again (``Model._add_observed``; a
        model without one, its ``add``)."""
        model = self.model
        add = getattr(model, "_add_observed", None) or model.add
        # transactional: a refit that fails (DivergenceError, or any error raised after
        # the batch was added) leaves the engine and its model exactly as they were
        saved = self._state()
        # a refit over a history multiplies matrices as long as it: OpenBLAS on one
        # thread, so that its bits do not depend on the process's thread count
        pinned = blas_to_one() if isinstance(model, History) else ()
        try:
            add(features, rewards)
            self._refit(features, rewards)
        except BaseException:
            self._restore(saved)
            raise
        finally:
            blas_restore(pinned)
        self.diagnostics["n_obs"] = self.model.n_obs
        return self

    # -- transactions -------------------------------------------------------------------
    #: the ndarray attributes that :meth:`update` changes in place, for an engine whose
    #: update draws only from the update stream and changes only ``diagnostics`` among
    #: its dicts (a fast snapshot); None: the generic snapshot of every writable ndarray,
    #: dict and random generator attribute
    _state_attrs = None

    def _state(self):
        """A snapshot of what :meth:`update` may change: the engine's attribute bindings,
        copies of its arrays (:attr:`_state_attrs`: O(d^2) for the Gaussian engines), the
        diagnostics, the random streams' states and the model's :func:`model_state`
        (which never copies a history). Restored by :meth:`_restore`. About 5 us."""
        if "_held_draws" in self.__dict__:  # before the bindings are copied
            self._settle_draws()
        if self._state_attrs is None:
            return None, _snapshot(self), model_state(self.model)
        d = self.__dict__
        arrays = [(d[k], d[k].copy()) for k in self._state_attrs]
        fast = (dict(d), arrays, dict(self.diagnostics),
                self._rng_update.bit_generator.state)
        return fast, None, model_state(self.model)

    def _restore(self, saved):
        """Put back a :meth:`_state` snapshot (arrays restored in place)."""
        fast, generic, model_saved = saved
        if fast is not None:
            bindings, arrays, diagnostics, stream = fast
            for arr, copy in arrays:
                arr[...] = copy
            self.__dict__.clear()
            self.__dict__.update(bindings)
            self.diagnostics.clear()
            self.diagnostics.update(diagnostics)
            self._rng_update.bit_generator.state = stream
        else:
            _restore_snapshot(self, generic)
        restore_model_state(self.model, model_saved)

    def sample(self, n=1):
        """``n`` posterior draws, shape ``(n, dim)``.

        On a model with a history (the logistic model, the networks), OpenBLAS runs on one
        thread during the draws and the update's refit, as in :func:`vits_ref.simulate`:
        a draw or a refit over the history (the DiffTS chain, Rényi VI, Laplace's IRLS)
        gives the same bits whatever the process's thread count."""
        n = val.positive_int(n, "n")
        if not isinstance(self.model, History):
            return self._sample(n)
        pinned = blas_to_one()
        try:
            return self._sample(n)
        finally:
            blas_restore(pinned)

    def fused(self, kl=False):
        """The engine's part of the fused compiled bandit loop, or None (the default)."""
        return None

    def fresh(self, seed=None):
        """A new engine with the same hyperparameters, at the prior, seeded with ``seed``."""
        return type(self)(**{**self._params(), "seed": seed})

    @classmethod
    def _persist_cost(cls, params):
        """For vits_ref.load's size policy (:mod:`vits_ref.inference.persist`): the
        engine's allocation and, for a model named by a string, the model's, whose
        parameter count may exceed ``dim`` (an MLP's)."""
        from .persist import default_cost, size_ints

        model, dims = params.get("model"), size_ints(params.get("dim"))
        if not (isinstance(model, str) and model in MODELS and len(dims) == 1):
            return default_cost(params)
        mcls = MODELS[model]
        key = "input_dim" if "input_dim" in inspect.signature(mcls).parameters else "dim"
        mparams = {key: dims[0]}
        dim = getattr(mcls, "_persist_dim", lambda p: dims[0])(mparams)
        mcost = getattr(mcls, "_persist_cost", default_cost)(mparams)
        return default_cost({**params, "dim": dim}) + mcost

    def _params(self):
        # a model named by a string is built from the features' size (its input_dim),
        # which differs from the engine's dim (the parameter count) for "mlp" and "bnn"
        dim = self.model.input_dim if isinstance(self.model_spec, str) else self.dim
        return {"dim": dim, "eta": self.eta, "lam": self.lam, "model": self.model_spec}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    # -- helpers ------------------------------------------------------------------------
    def _fused_model(self):
        """``"linear"`` or ``"logistic"`` when the model is the library's own of that name
        (its name and its potential) with the default prior: the models the fused loop's
        pieces implement (they bypass the model object, so a subclass that renames
        itself, or a general prior, keeps the Python loop); else None."""
        name = self.model.name
        if (name in ("linear", "logistic") and self.model.potential is MODELS[name].potential
                and self.model.has_default_prior):
            return name
        return None

    def _prior_start(self):
        """``(mean, B0)`` of the model's prior, ``B0 B0^T`` its covariance.

        The default prior ``N(0, I/(lam eta))`` returns None: engines then use their own
        closed form (bit-identical to the fused loop's initialisation).
        """
        if self.model.has_default_prior:
            return None
        return self.model.prior_mean, np.linalg.cholesky(self.model.prior_cov)

    def _diverged(self, step_size, detail=""):
        """The :class:`~vits_ref.errors.DivergenceError` of this engine after its
        ``n_obs`` observations, at ``step_size`` (None where it has none)."""
        return DivergenceError(self.name, self.model.n_obs, step_size, detail=detail)

    def _check_finite(self, step_size, *arrays, detail=""):
        for a in arrays:
            if not np.isfinite(a).all():  # the method: np.all's dispatch doubles it
                raise self._diverged(step_size, detail)

    def _refit(self, features, rewards):  # pragma: no cover - abstract
        raise NotImplementedError

    def _sample(self, n):  # pragma: no cover - abstract
        raise NotImplementedError


#: attribute names of growing history buffers and kernel scratch that a generic model
#: snapshot does not copy: appended rows lie beyond ``n_obs``, so restoring ``n_obs`` (and
#: the buffer binding, in case a growth reallocated it) restores the history in O(1)
_NOT_COPIED = frozenset({"_X", "_y", "_r", "_scratch", "_H", "_g"})


def _snapshot(obj, attrs=None, skip=_NOT_COPIED):
    """``(bindings, array copies, dict copies, generator states)`` of ``obj``."""
    bindings = dict(vars(obj))
    names = bindings if attrs is None else attrs
    arrays = [(bindings[k], bindings[k].copy()) for k in names
              if k not in skip and isinstance(bindings.get(k), np.ndarray)
              and bindings[k].flags.writeable and bindings[k].size]
    dicts = [(v, dict(v)) for v in bindings.values() if type(v) in (dict, Diagnostics)]
    gens = [(v, v.bit_generator.state) for v in bindings.values()
            if isinstance(v, np.random.Generator)]
    return bindings, arrays, dicts, gens


def _restore_snapshot(obj, snap):
    bindings, arrays, dicts, gens = snap
    for arr, copy in arrays:
        arr[...] = copy
    for d, copy in dicts:
        d.clear()
        d.update(copy)
    for g, state in gens:
        g.bit_generator.state = state
    vars(obj).clear()
    vars(obj).update(bindings)


def model_state(model):
    """Snapshot of what ``model.add`` changes: ``model._state()`` where the model defines
    it, else the generic snapshot (every writable ndarray attribute copied, except the
    history buffers and scratch of :data:`_NOT_COPIED`, restored by ``n_obs``)."""
    own = getattr(model, "_state", None)
    return own() if own is not None else _snapshot(model)


def restore_model_state(model, saved):
    """Put back a :func:`model_state` snapshot."""
    own = getattr(model, "_restore", None)
    if own is not None:
        own(saved)
    else:
        _restore_snapshot(model, saved)


def _is_spd(cov):
    """Whether ``cov`` passes the library's check of a covariance
    (:func:`vits_ref._validate.spd_matrix`: symmetric, finite, Cholesky to rounding)."""
    try:
        val.spd_matrix(cov, "cov")
    except ValueError:
        return False
    return True


class GaussianEngine(Engine):
    """An engine whose posterior is a Gaussian ``N(mean, cov)``."""

    @property
    def mean(self):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def cov(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _q_scale_tril(self):
        """The lower-triangular factor of ``q``'s covariance that the engine holds as its
        state (not a Cholesky of :attr:`cov`), or None: :meth:`kl_to_posterior` then uses
        it instead of :attr:`cov`."""
        return None

    def kl_to_posterior(self):
        """``KL(q || p)`` from the engine's Gaussian ``q`` to the exact posterior ``p``.

        An engine that holds a lower-triangular factor of ``q``'s covariance (Rényi VI)
        is judged from it (:func:`vits_ref.gaussian.kl_from_scale`), so a ``q`` that has
        shrunk by many orders of magnitude in some direction gets its finite, large KL.

        Raises
        ------
        ValueError
            If the model has no closed-form posterior (only the linear-Gaussian one has);
            :class:`~vits_ref.errors.DegenerateCovarianceError` if ``q``'s covariance is
            not positive definite to rounding (the approximation has collapsed) and the
            engine holds no factor of it with a positive diagonal.
        """
        from ..gaussian import kl, kl_from_scale

        posterior = getattr(self.model, "posterior", None)
        if posterior is None:
            raise ValueError(f"kl_to_posterior needs a closed-form posterior: the "
                             f"{self.model.name!r} model has none (only model='linear' does)")
        mean_p, cov_p = posterior()
        factor = self._q_scale_tril()
        if factor is not None and np.all(np.diag(factor) > 0.0):
            # q's own factor: the divergence stays finite and exact where q has shrunk so
            # far in some direction that L L^T rounds to a singular matrix
            return kl_from_scale(self.mean, factor, mean_p, cov_p)
        cov = self.cov
        if not _is_spd(cov) and _is_spd(cov_p):
            # q's own collapse, said here: vits_ref.gaussian.kl would name its argument, and
            # where p's covariance fails too (an exact engine on an ill-conditioned V) the
            # data are the cause, which kl's error and the runners' say
            eig = np.linalg.eigvalsh(0.5 * (cov + cov.T)) if np.all(np.isfinite(cov)) else None
            spread = ("" if eig is None else
                      f" (eigenvalues from {eig[0]:.3g} to {eig[-1]:.3g})")
            raise DegenerateCovarianceError(
                f"the {self.name} engine's Gaussian q has a covariance that is not positive "
                f"definite to rounding{spread}, where the exact posterior's is: the "
                f"approximation has collapsed in some direction, so KL(q || p) is not "
                f"finite")
        return kl(self.mean, cov, mean_p, cov_p)


class ParticleEngine(GaussianEngine):
    """An engine whose posterior is ``n_particles`` equally weighted particles, the rows of
    ``particles`` (n_particles, dim): :meth:`sample` picks particles with replacement and
    :attr:`mean` is theirs; :attr:`cov` is the subclass's (the particle measure's moments,
    or the chains' sample covariance)."""

    def _prior_particles(self):
        """``n_particles`` prior draws from the update stream: ``z / sqrt(lam eta)`` for the
        default prior ``N(0, I/(lam eta))``, else ``m0 + z B0^T`` (:meth:`_prior_start`)."""
        z = self._rng_update.standard_normal((self.n_particles, self.dim))
        start = self._prior_start()
        if start is None:
            return z / math.sqrt(self.lam * self.eta)
        mean, B0 = start
        return np.ascontiguousarray(mean + z @ B0.T)

    def _sample(self, n):
        idx = self._rng_sample.integers(0, self.n_particles, size=n)
        return self.particles[idx].copy()

    @property
    def mean(self):
        """The particles' mean, shape ``(dim,)``."""
        return self.particles.mean(axis=0)
