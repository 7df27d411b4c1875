r"""The learned DDPM prior: one two-hidden-layer ReLU network ``eps_t`` per stage, Adam.

Kveton et al. (NeurIPS 2024), section 3 and appendix B; docs/algorithms.md
section 3. The bodies (network, hand-written gradients, Adam) are in
:mod:`vits_ref.kernels.ddpm_mlp`, the training driver (``prange`` over stages) in
:mod:`vits_ref.drivers.cpu`, the NumPy reference in :mod:`vits_ref.reference.ddpm`.
"""

import math
import os
import sys
import time
import zipfile

import numpy as np

from .. import _validate as val
from .._seeding import child
from .._threads import blas_single_thread
from ..drivers import cpu
from ..errors import DivergenceError
from ..kernels.ddpm_mlp import MLP, eps_scratch_shapes, n_batches
from .base import DiffusionPriorBase

#: Version of the ``.npz`` layout written by :meth:`DiffusionPrior.save` (2: input-major
#: weights; version 1, written before that change, had output-major ones).
FORMAT_VERSION = 2
_KIND = "vits_ref.diffusion.DiffusionPrior"
_PARAM_NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")
STARTS = ("standard", "matched")
#: Adam's defaults (Kingma & Ba 2015)
BETA1, BETA2, ADAM_EPS = 0.9, 0.999, 1e-8


class DiffusionPrior(DiffusionPriorBase):
    r"""A diffusion-model prior learned from samples (DDPM; Kveton et al., appendix B).

    Parameters
    ----------
    dim : int
        Dimension ``d`` of ``theta``.
    n_stages : int, default 100
        Diffusion stages ``T`` (Kveton et al.: 100).
    alpha : float or (T,) array, default 0.97
        The schedule's ``alpha_t`` (:class:`~vits_ref.diffusion.Schedule`; Kveton et al.: 0.97).
    hidden : pair of int, default (32, 32)
        Widths ``(h1, h2)`` of the two hidden ReLU layers of every stage's network. Kveton et al.
        say "a 2-layer neural network with ReLU activations" without widths; 32 is the
        smallest width at which the cross shape of the paper is learned to the accuracy of
        the exact noise regressor (see Notes), and keeps the training of 10 000 samples
        within seconds.
    seed : int, SeedSequence or None, default 0
        Seeds the initial weights (child 0) and the training's mini-batches and noise
        (child 1): :meth:`fit` gives the same network for the same seed and data, whatever
        the number of threads.
    start : {"standard", "matched"}, default "standard"
        ``"standard"``: ``s_T ~ N(0, I)`` (Kveton et al., Ho et al.). ``"matched"``: the Gaussian
        with the first two moments of the forward marginal ``q(s_T)`` of the training
        samples, ``N(sqrt(abar_T) m, abar_T S + (1 - abar_T) I)`` (``m``, ``S`` the
        samples' mean and covariance), set by :meth:`fit`; it matters when the samples are
        far from unit scale (then ``q(s_T)`` is far from ``N(0, I)`` at ``abar_T = 0.048``).
    reverse_variance : {"ddpm"}, default "ddpm"
        The reverse step's covariance ``btilde_t I`` (``btilde_1`` clipped to ``beta_1``,
        :class:`~vits_ref.diffusion.Schedule`); a learned prior has no other.

    Attributes
    ----------
    hidden : tuple of int
    eps_params : tuple of ndarray
        ``(W1 (T, d, h1), b1 (T, h1), W2 (T, h1, h2), b2 (T, h2), W3 (T, h2, d), b3 (T, d))``
        (input-major weights, :mod:`vits_ref.kernels.ddpm_mlp`), the input
        standardisation folded into ``W1``, ``b1``.
    fitted : bool
    input_shift, input_scale : (T, d) ndarray or None
        The per-stage standardisation used in training (``x = (s - shift) / scale``), kept
        for the record (already folded into the first layer).
    loss_history : (epochs, T) ndarray or None
        Each stage's mean training loss per epoch.
    fit_seconds : float or None
        Wall time of the last :meth:`fit` (the training loop, compilation excluded when the
        drivers were compiled or cached before).

    Notes
    -----
    Forward process ``s_t = sqrt(abar_t) s_0 + sqrt(1 - abar_t) eps``, ``eps ~ N(0, I)``;
    stage ``t``'s network minimises ``E ||eps - eps_t(s_t)||^2`` over ``s_0`` drawn from the
    training samples (Kveton et al., eq. 14). The stages are independent problems (each
    ``eps_t`` has its own parameters): one epoch of stage ``t`` is one pass over a fresh
    permutation of the samples in mini-batches, each paired with fresh noise, one Adam step
    per mini-batch; the T stages run in parallel (``prange``). Adam's step size (its
    learning rate) decays from ``step_size`` to 0 over the epochs by a half cosine
    (``h_e = step_size (1 + cos(pi e/E))/2``, ``e = 0..E-1``) unless
    ``cosine_decay=False``.

    Each stage's inputs are standardised by the forward marginal's per-coordinate mean
    ``sqrt(abar_t) mean(s_0)`` and standard deviation ``sqrt(abar_t var(s_0) + 1 -
    abar_t)``: an affine map before the first layer, folded into ``W1`` and ``b1`` after
    training (exact up to rounding), so the diffusion runs in the samples' own coordinates
    and the compiled chains see a plain network. The regression target ``eps`` is already
    standard; the output is not rescaled.

    The samples of :meth:`sample` come from the reverse chain with ``Sigma_t = btilde_t I``
    and the ``N(0, I)`` start (the DDPM's and the paper's). That chain is biased at finite
    T even with the exact noise regressor: for Gaussian samples at ``T = 100``,
    ``alpha = 0.97`` its covariance falls about 8-9% short. The tests
    compare this prior with that exact propagated value
    (:func:`vits_ref.reference.diffusion.chain_moments`), and on the cross shape with the
    same chain run with the cross's exact noise regressor (a Gaussian mixture, closed form).

    Cost of one epoch: ``6 N T (d h1 + h1 h2 + h2 d)`` flops (forward and backward),
    0.7 GFLOP per stage-epoch at ``N = 10 000``, ``d = 2``, ``(32, 32)``. Measured on the
    2-core development machine (shared, load average about 3.5 from other jobs): ``fit``
    at the defaults on 10 000 samples of the 2-D cross in 6-7.5 s, on 10 000 8-d samples in
    9.5-12.5 s; one epoch about 4.5x faster than the NumPy reference on one thread
    (``python -m vits_ref bench``). The defaults were chosen on the cross against its exact
    noise regressor: at ``step_size = 3e-3`` the learned chain's energy distance to the true
    prior was 0.005, at ``1e-2`` 0.0029, with the exact regressor 0.0018 (widths 48 or 64
    gave no gain: the first stages, where the bars are sharp, are limited by the
    optimisation, not the width).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((500, 2)) * [1.0, 0.3]
    >>> prior = vr.diffusion.DiffusionPrior(2, n_stages=10, seed=0).fit(
    ...     x, epochs=2, progress=False)
    >>> prior.sample(3, seed=1).shape
    (3, 2)
    """

    eps_bodies = MLP
    #: for vits_ref.load (vits_ref.inference.persist): the fit (what the constructor
    #: does not rebuild from :meth:`_params`)
    _persist_state = ("eps_params", "start_mean", "start_chol", "input_shift", "input_scale",
                      "loss_history", "n_train", "fit_seconds", "fitted")

    def __init__(self, dim, n_stages=100, alpha=0.97, hidden=(32, 32), seed=0,
                 start="standard", reverse_variance="ddpm"):
        super().__init__(dim, n_stages=n_stages, alpha=alpha)
        self.hidden = _hidden(hidden)
        self.start = val.choice(start, "start", STARTS)
        self.reverse_variance = val.choice(reverse_variance, "reverse_variance", ("ddpm",))
        self._seed = val.as_seed_sequence(seed)
        self.eps_params = self._init_params()
        self.fitted = False
        self.input_shift = self.input_scale = None
        self.loss_history = None
        self.fit_seconds = None
        self.n_train = None

    def _params(self):
        """The constructor's arguments (for vits_ref.load; the fit is the state)."""
        return {"dim": self.dim, "n_stages": self.n_stages, "alpha": self.schedule.alpha[1:],
                "hidden": self.hidden, "seed": self._seed, "start": self.start,
                "reverse_variance": self.reverse_variance}

    # -- what the chains read ---------------------------------------------------------------
    def eps_scratch(self):
        """A new ``(a1 (h1,), a2 (h2,), g1 (h1,), g2 (h2,))`` scratch tuple for the bodies."""
        return tuple(np.empty(s) for s in eps_scratch_shapes(self.dim, self.hidden))

    def _init_params(self):
        """He-initialised weights (``N(0, 2/fan_in)``, the linear output layer
        ``N(0, 1/fan_in)``), zero biases, from the seed's child 0."""
        rng = np.random.Generator(np.random.PCG64(child(self._seed, 0)))
        T, d, (h1, h2) = self.n_stages, self.dim, self.hidden
        return (rng.standard_normal((T, d, h1)) * math.sqrt(2.0 / d), np.zeros((T, h1)),
                rng.standard_normal((T, h1, h2)) * math.sqrt(2.0 / h1), np.zeros((T, h2)),
                rng.standard_normal((T, h2, d)) * math.sqrt(1.0 / h2), np.zeros((T, d)))

    # -- training ----------------------------------------------------------------------------
    def fit(self, samples, epochs=20, batch_size=128, step_size=1e-2, cosine_decay=True,
            progress=True, *, lr=None, lr_decay=None):
        """Learn every stage's ``eps_t`` from ``samples`` (Adam; restarts from the seed's
        initial weights).

        Parameters
        ----------
        samples : (N, dim) array
            Draws of the prior to learn (finite; N >= 2). Kveton et al. use N = 10 000.
        epochs : int, default 20
            Passes over the samples, per stage.
        batch_size : int, default 128
            Mini-batch size (capped at N); the last mini-batch of an epoch is shorter when
            it does not divide N. One Adam step per mini-batch.
        step_size : float, default 1e-2
            Adam's step size, its learning rate (at the first epoch, see
            ``cosine_decay``). Named ``step_size`` as in the engines (formerly ``lr``).
        cosine_decay : bool, default True
            Decay the step size to 0 over the epochs by a half cosine (formerly
            ``lr_decay``).
        progress : bool, default True
            Show a progress bar over the epochs (``tqdm`` when installed, else a line per
            epoch on stderr); ``False`` is quiet.
        lr, lr_decay : optional
            Deprecated former names of ``step_size`` and ``cosine_decay`` (accepted for one
            release, with a DeprecationWarning).

        Returns
        -------
        self

        Raises
        ------
        DivergenceError
            When a stage's loss or weights become non-finite (lower ``step_size``).
        """
        S0 = val.float_array(samples, "samples", ndim=2)
        N = S0.shape[0]
        if S0.shape[1] != self.dim:
            raise ValueError(f"samples must have {self.dim} columns (the prior's dim), got "
                             f"shape {S0.shape}")
        if N < 2:
            raise ValueError(f"samples must have at least 2 rows, got {N}")
        epochs = val.positive_int(epochs, "epochs")
        batch = min(val.positive_int(batch_size, "batch_size"), N)
        step_size = val.renamed(step_size, lr, "step_size", "lr", 1e-2)
        cosine_decay = val.renamed(cosine_decay, lr_decay, "cosine_decay", "lr_decay", True)
        lr = val.positive_float(step_size, "step_size")
        if not isinstance(cosine_decay, (bool, np.bool_)):
            raise TypeError(f"cosine_decay must be a bool, got {type(cosine_decay).__name__}")
        if not isinstance(progress, (bool, np.bool_)):
            raise TypeError(f"progress must be a bool, got {type(progress).__name__}")

        T, d = self.n_stages, self.dim
        ab = self.schedule.abar[1:]
        ca, cb = np.sqrt(ab), np.sqrt(1.0 - ab)
        mean, var = S0.mean(axis=0), S0.var(axis=0)
        shift = np.ascontiguousarray(ca[:, None] * mean[None, :])
        scale = np.sqrt(ab[:, None] * var[None, :] + (1.0 - ab[:, None]))
        inv_scale = np.ascontiguousarray(1.0 / scale)

        params = self._init_params()
        m = tuple(np.zeros_like(p) for p in params)
        v = tuple(np.zeros_like(p) for p in params)
        rng = np.random.Generator(np.random.PCG64(child(self._seed, 1)))
        order = np.broadcast_to(np.arange(N, dtype=np.int64), (T, N))
        losses = np.empty(T)
        history = np.empty((epochs, T))
        run = cpu.ddpm_train_epoch()
        steps = n_batches(N, batch)
        bar = _progress(epochs, progress)
        t0 = time.perf_counter()
        try:
            # OpenBLAS at one thread: the training driver calls BLAS on (batch, h) blocks
            # from each of Numba's threads, and an OpenBLAS left multi-threaded nests its
            # own threads inside them (measured: 380 s instead of 33 s for one fit at
            # hidden=(64, 64) on 2 cores)
            with blas_single_thread():
                for e in range(epochs):
                    # C-ordered: permuted's layout follows the shape, and a Fortran
                    # array is another type to the compiled driver (compiled again)
                    idx = np.ascontiguousarray(rng.permuted(order, axis=1))
                    noise = rng.standard_normal((T, N, d))
                    lr_e = (lr * 0.5 * (1.0 + math.cos(math.pi * e / epochs)) if cosine_decay
                            else lr)
                    run(params, m, v, e * steps, ca, cb, shift, inv_scale, S0, idx, noise,
                        batch, lr_e, BETA1, BETA2, ADAM_EPS, losses)
                    history[e] = losses
                    if not np.all(np.isfinite(losses)):
                        bad = int(np.flatnonzero(~np.isfinite(losses))[0]) + 1
                        raise DivergenceError(
                            "DiffusionPrior.fit", e + 1, lr_e,
                            detail=f"(the round is the epoch) stage {bad}'s training loss "
                                   f"is not finite: lower step_size.")
                    bar.update(float(losses.mean()))
        finally:
            bar.close()
        self.fit_seconds = time.perf_counter() - t0
        cpu.ddpm_fold_input_scaling()(params, shift, inv_scale)
        if not all(np.all(np.isfinite(p)) for p in params):
            raise DivergenceError("DiffusionPrior.fit", epochs, lr,
                                  detail="(the round is the epoch) the network's weights are "
                                         "not finite: lower step_size.")
        self.eps_params = params
        self.input_shift, self.input_scale = shift, scale
        self.loss_history = history
        self.n_train = N
        self.fitted = True
        self._set_start(mean, np.atleast_2d(np.cov(S0, rowvar=False)))
        return self

    def _set_start(self, mean, cov):
        if self.start == "matched":
            abT = self.schedule.abar[-1]
            C = abT * cov + (1.0 - abT) * np.eye(self.dim)
            self.start_mean = np.sqrt(abT) * mean
            self.start_chol = np.linalg.cholesky(0.5 * (C + C.T))
        else:
            self.start_mean = np.zeros(self.dim)
            self.start_chol = np.eye(self.dim)

    def sample(self, n, seed=None):
        """``n`` draws by the compiled reverse chain, shape ``(n, dim)``
        (:meth:`DiffusionPriorBase.sample`); the prior must be fitted (or loaded)."""
        self._check_fitted()
        return super().sample(n, seed)

    def _check_fitted(self):
        if not self.fitted:
            raise RuntimeError("this DiffusionPrior is not fitted: call fit(samples) first "
                               "(or DiffusionPrior.load(path))")

    # -- persistence -------------------------------------------------------------------------
    def save(self, path):
        """Write the fitted prior to ``path`` (``.npz``; NumPy appends the suffix when it is
        missing): schedule, widths, start, every stage's weights (standardisation folded
        in), the standardisation and the training losses, with a format version.

        Returns
        -------
        str or path-like
            ``path``.
        """
        self._check_fitted()
        arrays = {name: p for name, p in zip(_PARAM_NAMES, self.eps_params, strict=True)}
        np.savez(path, kind=np.array(_KIND), format_version=np.array(FORMAT_VERSION),
                 dim=np.array(self.dim), alpha=self.schedule.alpha[1:],
                 hidden=np.array(self.hidden, dtype=np.int64), start=np.array(self.start),
                 start_mean=self.start_mean, start_chol=self.start_chol,
                 input_shift=self.input_shift, input_scale=self.input_scale,
                 loss_history=self.loss_history, n_train=np.array(self.n_train), **arrays)
        return path

    @classmethod
    def load(cls, path):
        """A prior written by :meth:`save`; the same samples for the same seed.

        Raises
        ------
        ValueError
            If the file is not a readable ``.npz`` of this class, has another format
            version, or an array has the wrong shape or is not finite.
        """
        single = False
        try:
            if not zipfile.is_zipfile(path):  # read no further: np.load would allocate
                with open(path, "rb") as fh:
                    single = fh.read(6) == b"\x93NUMPY"
                if not single:
                    raise ValueError("not a .npz (zip) file")
            else:
                n_values = _npz_sizes(path)
                loaded = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"cannot read a DiffusionPrior from {path!r}: {exc}") from None
        if single:
            raise ValueError(f"{path!r} is a single array, not a DiffusionPrior .npz file "
                             f"(written by DiffusionPrior.save)")
        try:
            with loaded as f:
                data = {k: f[k] for k in f.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"cannot read a DiffusionPrior from {path!r}: {exc}") from None
        if "kind" not in data or str(data["kind"]) != _KIND:
            raise ValueError(f"{path!r} is not a DiffusionPrior file (written by "
                             f"DiffusionPrior.save)")
        need = ("format_version", "dim", "alpha", "hidden", "start", "start_mean",
                "start_chol", "input_shift", "input_scale", "loss_history", "n_train")
        missing = [k for k in need + _PARAM_NAMES if k not in data]
        if missing:
            raise ValueError(f"{path!r} lacks the arrays {missing}: not a complete "
                             f"DiffusionPrior file")
        version = _int_field(data, "format_version", path)
        if version != FORMAT_VERSION:
            raise ValueError(f"{path!r} has format version {version}; this vits_ref reads "
                             f"version {FORMAT_VERSION}")
        alpha, hidden = data["alpha"], data["hidden"]
        if alpha.ndim != 1 or hidden.shape != (2,) or not np.issubdtype(hidden.dtype,
                                                                         np.integer):
            raise ValueError(f"{path!r} has an invalid schedule or shape: alpha must be 1-D "
                             f"and hidden two integers, got {alpha.shape} and "
                             f"{hidden.dtype} {hidden.shape}")
        dim, n_train = _int_field(data, "dim", path), _int_field(data, "n_train", path)
        # the constructor allocates the weights the sizes claim: bound them by the file's
        T, (h1, h2) = alpha.shape[0], (max(int(h), 0) for h in hidden)
        d = max(dim, 0)
        claimed = T * (d * h1 + h1 + h1 * h2 + h2 + h2 * d + d) + d * d
        if claimed > n_values:
            raise ValueError(f"{path!r} has an invalid schedule or shape: dim={dim}, "
                             f"hidden=({h1}, {h2}) and {T} stages need {claimed} weights, "
                             f"the file holds {n_values} values")
        try:
            prior = cls(dim, n_stages=int(T), alpha=alpha, hidden=(h1, h2),
                        start=str(data["start"]))
        except (TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"{path!r} has an invalid schedule or shape: {exc}") from None
        T, d, (h1, h2) = prior.n_stages, prior.dim, prior.hidden
        shapes = {"W1": (T, d, h1), "b1": (T, h1), "W2": (T, h1, h2), "b2": (T, h2),
                  "W3": (T, h2, d), "b3": (T, d), "start_mean": (d,), "start_chol": (d, d),
                  "input_shift": (T, d), "input_scale": (T, d)}
        arrs = {}
        for name, shape in shapes.items():
            a = data[name]
            if a.shape != shape or not np.issubdtype(a.dtype, np.floating):
                raise ValueError(f"{path!r}: {name} must be a float array of shape {shape}, "
                                 f"got {a.dtype} {a.shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{path!r}: {name} contains NaN or inf")
            arrs[name] = np.ascontiguousarray(a, dtype=np.float64)
        prior.eps_params = tuple(arrs[name] for name in _PARAM_NAMES)
        prior.start_mean, prior.start_chol = arrs["start_mean"], arrs["start_chol"]
        prior.input_shift, prior.input_scale = arrs["input_shift"], arrs["input_scale"]
        losses = data["loss_history"]
        if not np.issubdtype(losses.dtype, np.number):
            raise ValueError(f"{path!r}: loss_history must be a numeric array, got "
                             f"{losses.dtype} {losses.shape}")
        prior.loss_history = np.asarray(losses, dtype=np.float64)
        prior.n_train = n_train
        prior.fitted = True
        return prior

    def __repr__(self):
        state = "fitted" if self.fitted else "not fitted"
        return (f"DiffusionPrior(dim={self.dim}, n_stages={self.n_stages}, "
                f"hidden={self.hidden}, {state})")


#: largest decompressed / compressed ratio of a deflated zip member (deflate's bound is
#: about 1032; a member claiming more is corrupt or hostile)
_MAX_DEFLATE_RATIO = 1100


def _npz_sizes(path):
    """The number of values the ``.npz`` at ``path`` holds, after bounding every size it
    states by its bytes on disk, before anything is allocated.

    ``np.load`` allocates each array at the shape its ``.npy`` header states and reads into
    it afterwards: a 4.9 KB file whose header claims 7 TB failed with a MemoryError. Here
    each member's header is read alone (:mod:`numpy.lib.format`), and ValueError is raised
    unless the member's stated sizes fit the file (a stored member is its bytes, a deflated
    one at most :data:`_MAX_DEFLATE_RATIO` times them) and the array fits the member.
    """
    on_disk = os.path.getsize(path)
    fmt = np.lib.format
    total = 0
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            stored = info.compress_type == zipfile.ZIP_STORED
            if info.compress_size > on_disk or info.file_size > (
                    info.compress_size if stored
                    else _MAX_DEFLATE_RATIO * info.compress_size + 1024):
                raise ValueError(f"member {info.filename!r} states {info.file_size} bytes, "
                                 f"more than a {on_disk}-byte file can hold")
            with zf.open(info) as fh:
                version = fmt.read_magic(fh)
                if version not in ((1, 0), (2, 0)):  # what np.savez writes
                    raise ValueError(f"member {info.filename!r} is .npy version {version}")
                read = (fmt.read_array_header_1_0 if version == (1, 0)
                        else fmt.read_array_header_2_0)
                shape, _, dtype = read(fh, max_header_size=10_000)
                header = fh.tell()
            if dtype.hasobject:
                raise ValueError(f"member {info.filename!r} holds Python objects")
            n = math.prod(shape)
            if header + n * dtype.itemsize > info.file_size:
                raise ValueError(f"member {info.filename!r} claims shape {shape} "
                                 f"({n * dtype.itemsize} bytes) in {info.file_size} bytes")
            total += n
    return total


def _int_field(data, name, path):
    """``data[name]`` as an int: an integer scalar array, else a one-line ValueError."""
    a = data[name]
    if a.shape != () or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{path!r}: {name} must be an integer scalar, got {a.dtype} "
                         f"{a.shape}")
    return int(a)


def _hidden(hidden):
    """``(h1, h2)``: two positive ints."""
    try:
        widths = tuple(hidden)
    except TypeError:
        raise TypeError(f"hidden must be a pair of ints (h1, h2), got "
                        f"{type(hidden).__name__}") from None
    if len(widths) != 2:
        raise ValueError(f"hidden must have two widths (h1, h2): the network has two hidden "
                         f"layers; got {widths!r}")
    return tuple(val.positive_int(h, f"hidden[{i}]") for i, h in enumerate(widths))


class _Progress:
    """A progress bar over epochs: ``tqdm`` when installed (and the terminal does not say
    0 columns, where tqdm draws nothing), else a line per epoch on stderr; nothing when
    disabled."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.n = total, enabled, 0
        self.bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            from .._terminal import columns

            if tqdm is not None and columns() != 0:  # a 0-column console shows no bar
                self.bar = tqdm(total=total, desc="DiffusionPrior.fit", unit="epoch")

    def update(self, loss):
        self.n += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
            self.bar.update(1)
        else:
            print(f"DiffusionPrior.fit: epoch {self.n}/{self.total}, mean loss {loss:.4g}",
                  file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _progress(total, enabled):
    return _Progress(total, bool(enabled))
