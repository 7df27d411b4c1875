"""The CUDA kernels the library launches, recorded and compiled to sm_90 PTX without a GPU.

Imported by the scripts of ``tests/test_cuda_ptx.py`` and ``tests/test_cuda_targets.py``,
which run in a subprocess without ``NUMBA_ENABLE_CUDASIM`` (see the former's docstring for
the method): :func:`install` stubs the device (sm_90, an H100's compute capability) and
the launches, :func:`record` runs a group of the library's launchers on tiny inputs and
returns the launches it made, :func:`compile_launches` compiles each launched kernel to PTX
for the argument types its dispatcher infers. Nothing here adds a registration: the
library's own (``vits_ref.config.cuda_jit``) must suffice.
"""

import sys
import time
import traceback

import numpy as np

d, K, R, n = 20, 50, 4, 2  # the paper's d and K (the VITS state > 48 KiB), 2 rounds
KL = [1, 2]
LAUNCHES, LABEL = [], [""]
vr = dc = _streams = make_policy = cuda = None  # set by install()


def install(nvvm=True):
    """Stub the device and the launches, then import the library's CUDA drivers. With
    ``nvvm``, first compile a trivial kernel: without libNVVM, print ``NONVVM ...`` and exit
    with status 3."""
    global vr, dc, _streams, make_policy, cuda
    # no GPU here: the device's compute capability, sm_90 (an H100)
    import numba.cuda.dispatcher as disp

    class _Device:
        compute_capability = (9, 0)

    disp.get_current_device = lambda: _Device()
    from numba import cuda

    # a trivial kernel first: without libNVVM, say so and stop
    try:
        if nvvm:
            cuda.compile_ptx(lambda a: None, "void(float64[:])", cc=(9, 0))
    except Exception as err:  # NvvmSupportError and kin
        print("NONVVM " + repr(err))
        sys.exit(3)

    # the launchers run on host arrays; each launch is recorded, not run
    class _Host(np.ndarray):
        def copy_to_host(self):
            return np.array(self)

    def _to_device(a, *args, **kwargs):
        return np.array(a).view(_Host)

    def _device_array(shape, dtype=np.float64, *args, **kwargs):
        return np.zeros(shape, dtype).view(_Host)

    cuda.to_device, cuda.device_array = _to_device, _device_array

    def _getitem(self, config):
        def launch(*args):
            LAUNCHES.append((LABEL[0], self, tuple(_plain(a) for a in args)))
        return launch

    disp.CUDADispatcher.__getitem__ = _getitem

    import vits_ref as vr
    from vits_ref.bandit import _streams
    from vits_ref.bandit.simulate import make_policy
    from vits_ref.drivers import cuda as dc


def _plain(a):
    if isinstance(a, np.ndarray):
        return a.view(np.ndarray)
    if isinstance(a, tuple):  # a NamedTuple (a piece's params) keeps its type
        items = [_plain(x) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    return a


def _chunk(spec):
    init, sel, st = spec.draw(np.random.SeedSequence(0), n, d)
    return st.shape[2], (np.zeros((R, n, K, d)), np.zeros((R, n, K)),
                         np.zeros((R, n, K)), np.zeros((R,) + init.shape),
                         np.zeros((R,) + sel.shape), np.zeros((R,) + st.shape))


def rounds(names, cls=None):
    cls = cls or dc.BanditRounds
    for name in names:
        spec = make_policy(name, d).fused(kl=True)
        M, chunk = _chunk(spec)
        LABEL[0] = f"{cls.__name__}/{name}"
        cls(spec.piece, spec.params, R, n, d, K, M, KL).advance(*chunk)


def runs(names):
    for name in names:
        spec = make_policy(name, d).fused(kl=True)
        LABEL[0] = f"bandit_runs/{name}"
        dc.bandit_runs(spec.piece, spec.params, *_chunk(spec)[1], KL)


def streams(cls, cases):
    from vits_ref.kernels.bandit_streams import scratch_size
    for name, env_name in cases:
        env = (vr.envs.pool(dim=d, n_arms=K, seed=0) if env_name == "pool" else
               vr.envs.hard_instance(dim=d, n_arms=K, reward="logistic", seed=0))
        spec = make_policy(name, d).fused(kl=True)
        env_round, env_params = env.counter_piece()
        dims = _streams.noise_dims(spec, d, K)
        LABEL[0] = f"{cls.__name__}/{name}/{env_name}"
        cls(spec.piece, spec.params, env_round, env_params, np.zeros((R, 2), np.uint64),
            dims, n, KL, _streams.state_size(spec, dims, n),
            scratch_size(*dims)).advance(n)


def steps():
    from vits_ref.kernels.linear import POTENTIAL as LINEAR
    from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC
    from vits_ref.kernels.renyi import MIXTURE_PRIOR

    from vits_ref.models.mixture_prior import MixturePrior
    rng = np.random.default_rng(7)
    dd, S, M, nd = 3, 3, 2, 10
    X = rng.standard_normal((nd, dd))
    lin = (np.eye(dd) + X.T @ X, X.T @ rng.standard_normal(nd))
    logit = vr.models.Logistic(dd, eta=1.3, lam=0.7)
    logit.add(X, (rng.random(nd) < 0.5).astype(float))
    def rows(scr):
        return tuple(np.stack([a] * R) for a in scr)
    mu, eye = np.zeros((R, dd)), np.stack([np.eye(dd)] * R)
    for label, pot, data, pscr in (("linear", LINEAR, lin, 0),
                                   ("logistic", LOGISTIC, logit.kernel_data(),
                                    rows(logit.kernel_scratch(M)))):
        LABEL[0] = f"vits_steps/{label}"
        dc.vits_steps(pot, 1, True, mu, eye, eye, data, np.zeros((R, S, M, dd)), 0.01,
                      0.005, pscr)
    pscr = rows(logit.kernel_scratch(1))
    LABEL[0] = "langevin_steps/logistic"
    dc.langevin_steps(LOGISTIC, mu, logit.kernel_data(), np.zeros((R, S, dd)), 0.01, pscr)
    LABEL[0] = "newton/logistic"
    P0 = 0.7 * np.eye(dd)
    dc.newton(LOGISTIC, logit.kernel_data(prior=False), P0, P0 @ np.full(dd, 0.1), mu,
              1e-10, 50, pscr)
    mix = MixturePrior(2, [[1.0, 0.0], [-1.0, 2.0]], [[1.0, 0.5], [2.0, 1.0]],
                       [0.3, 0.7], eta=1.3)
    mix.add(X[:, :2], rng.standard_normal(nd))
    logit2 = vr.models.Logistic(2, eta=1.2, lam=0.8)
    logit2.add(X[:, :2], (rng.random(nd) < 0.5).astype(float))
    X2 = X[:, :2]
    for label, pot, data, pscr in (
            ("linear", LINEAR, (np.eye(2) + X2.T @ X2, X2.T @ np.ones(nd)), 0),
            ("mixture_prior", MIXTURE_PRIOR, mix.kernel_data(), rows(mix.kernel_scratch())),
            ("logistic", vr.models.Logistic.potential, logit2.kernel_data(),
             rows(logit2.kernel_scratch(M)))):
        LABEL[0] = f"renyi_steps/{label}"
        P = np.zeros((R, 3, 2))
        dc.renyi_steps(pot, 0.5, P, data, np.zeros((R, S, M, 2)), 0.05, 0.9, 0.999, 1e-8,
                       np.zeros_like(P), np.zeros_like(P), np.zeros((R, 1)), pscr)


def vts():
    from vits_ref.inference.vts import _Prior, _rng_state
    rng = np.random.default_rng(3)
    nd, dd = 8, 2
    prior = _Prior(dd, 2, 1.0, None, None, 1.0, 1.0, "spread").kernel
    LABEL[0] = "cavi_fits"
    dc.cavi_fits(rng.random((R, nd, dd)), rng.standard_normal((R, nd)),
                 np.full(R, nd), prior, 1e-6, 8)
    env = vr.envs.vts_scenario("B")
    pol = vr.VTS(2, 2, n_components=2, scoring="sample_z", max_iter=6, seed=0)
    reals = [env.realise(3, rng=s) for s in range(R)]
    st = [np.stack([getattr(x, f) for x in reals]) for f in ("contexts", "means",
                                                             "rewards")]
    LABEL[0] = "vts_runs"
    dc.vts_runs(pol.params, pol._prior.kernel, *st,
                np.stack([_rng_state(s) for s in range(R)]))


def diffusion():
    from vits_ref.kernels.ddpm_mlp import MLP
    from vits_ref.kernels.logistic import POTENTIAL

    from vits_ref.diffusion import DiffusionPrior, chain
    from vits_ref.models.logistic import potential_scratch
    rng = np.random.default_rng(3)
    T, dd, m = 6, 2, 3
    prior = vr.diffusion.GaussianDiffusionPrior([0.5, -0.2], [[1.0, 0.3], [0.3, 0.5]],
                                                n_stages=T)
    ca, bodies, par = prior.chain_arrays(), prior.eps_bodies, prior.eps_params
    z = rng.standard_normal((m, T + 1, dd))
    X = rng.standard_normal((5, dd))
    y = X @ np.array([1.0, -1.0])
    G, h = X.T @ X, X.T @ y
    scr = chain.scratch_rows(prior, m)
    LABEL[0] = "diffusion_chain/gaussian"
    dc.diffusion_chain(bodies, par, ca, z, scr)
    LABEL[0] = "diffusion_laplace_linear/gaussian"
    dc.diffusion_laplace_linear(bodies, par, ca, G, h, 2.0, z, scr)
    LABEL[0] = "diffusion_dps/gaussian"
    dc.diffusion_dps(bodies, par, ca, G, h, float(y @ y), z, scr)
    lg = vr.models.Logistic(dd)
    lg.add(X, (y > 0).astype(float))
    prows = tuple(np.stack([a] * m) for a in potential_scratch(5, dd))
    LABEL[0] = "diffusion_laplace_glm/gaussian/logistic"
    dc.diffusion_laplace_glm(bodies, POTENTIAL, par, ca, lg.kernel_data(prior=False),
                             1e-8, 50, z, scr, prows)
    contexts = rng.standard_normal((R, 4, 3, dd))
    means = contexts @ np.array([1.0, -0.5])
    LABEL[0] = "diffts_linear_runs/gaussian"
    dc.diffts_linear_runs(bodies, par, ca, 0.25, contexts, means, means,
                          rng.standard_normal((R, 4, T + 1, dd)),
                          chain.scratch_rows(prior, R))
    x = rng.standard_normal((60, 2))
    mlp = DiffusionPrior(2, n_stages=4, hidden=(5, 3), seed=1).fit(x, epochs=1,
                                                                   progress=False)
    S = rng.standard_normal((m, 2))
    LABEL[0] = "ddpm_rows/mlp"
    dc.ddpm_rows(mlp.eps_params, 1, S)
    dc.ddpm_rows(mlp.eps_params, 1, S, S)
    LABEL[0] = "diffusion_chain/mlp"
    dc.diffusion_chain(MLP, mlp.eps_params, mlp.chain_arrays(),
                       chain.normals(mlp, m, seed=2), chain.scratch_rows(mlp, m))
    LABEL[0] = "svgd_phi"
    dc.svgd_phi(rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), 0.0, 1.0)


def logistic():
    # the logistic model's pieces (kernels/logistic_bandit.py), one run per thread: the
    # chunked rounds, the whole-run launcher and the streamed loop on the hard instance
    from vits_ref.kernels.bandit_streams import scratch_size
    env = vr.envs.hard_instance(dim=d, n_arms=K, reward="logistic", seed=0)
    env_round, env_params = env.counter_piece()
    for pol in (make_policy("vits-ii", d, model="logistic"),
                make_policy("lmc", d, model="logistic"),
                vr.ThompsonSampling(vr.Laplace(d, model="logistic"))):
        spec = pol.fused()
        name = spec.piece.name
        M, chunk = _chunk(spec)
        LABEL[0] = f"BanditRounds/{name}"
        dc.BanditRounds(spec.piece, spec.params, R, n, d, K, M, []).advance(*chunk)
        LABEL[0] = f"bandit_runs/{name}"
        dc.bandit_runs(spec.piece, spec.params, *chunk, [])
        dims = _streams.noise_dims(spec, d, K)
        LABEL[0] = f"BanditStreams/{name}/hard-logistic"
        dc.BanditStreams(spec.piece, spec.params, env_round, env_params,
                         np.zeros((R, 2), np.uint64), dims, n, [],
                         _streams.state_size(spec, dims, n), scratch_size(*dims)).advance(n)


def block():
    from vits_ref.drivers import cuda_coop
    rounds(("vits-i", "vits-ii", "vits-hf", "vits-hf-cv", "lints"), cuda_coop.BlockRounds)
    streams(cuda_coop.BlockStreams, (("vits-ii", "pool"), ("lints", "pool")))


VITS = ("vits-i", "vits-ii", "vits-hf", "vits-hf-cv")
GROUPS = {
    "lints": lambda: rounds(("lints",)),
    # the smallest kernel that reaches the state views (``take``): the mixed-order test's
    # default form (``tests/test_cuda_targets.py``); "rounds" compiles it too
    "random": lambda: rounds(("random",)),
    "rounds": lambda: (rounds(("linucb",) + VITS + ("lmc", "random")),
                       runs(("lints", "vits-ii"))),
    "streams": lambda: streams(dc.BanditStreams, (("lints", "pool"), ("vits-ii", "pool"),
                                                  ("random", "hard-logistic"))),
    "steps": lambda: (steps(), vts()),
    "diffusion": diffusion,
    "block": block,
    "logistic": logistic,
}


def record(*groups):
    """``[(label, dispatcher, args), ...]``: the launches the ``groups`` make (after
    :func:`install`)."""
    start = len(LAUNCHES)
    for group in groups:
        GROUPS[group]()
    return LAUNCHES[start:]


def compile_launches(launches, log=sys.stderr):
    """One record per kernel and argument types: ``labels``, ``kernel`` (qualified name),
    ``module``, ``seconds`` and either ``error`` and ``trace`` or the PTX's ``chars``,
    ``entry``, ``sm_90``, ``bar`` and ``extern_shared``. Kernels launched twice with the
    same types (the VITS variants share one piece, hence one kernel) compile once."""
    out, done = [], {}
    for label, kern, args in launches:
        name = kern.py_func.__qualname__
        types = tuple(kern.typeof_pyval(a) for a in args)
        key = (id(kern), types)
        if key in done:  # the same kernel for the same types: compiled once
            done[key]["labels"].append(label)
            continue
        rec = {"labels": [label], "kernel": name, "module": kern.py_func.__module__}
        done[key] = rec
        out.append(rec)
        t = time.perf_counter()
        try:
            ptx, _ = cuda.compile_ptx(kern.py_func, types, cc=(9, 0))
        except Exception as err:
            rec["error"] = f"{type(err).__name__}: {err}"[:3000]
            rec["trace"] = traceback.format_exc()[-3000:]
        else:
            rec.update(chars=len(ptx), entry=ptx.count(".entry"),
                       sm_90=".target sm_90" in ptx, bar=ptx.count("bar.sync"),
                       extern_shared=".extern .shared" in ptx)
        rec["seconds"] = round(time.perf_counter() - t, 1)
        print(label, name, rec.get("chars"), rec["seconds"], rec.get("error", "")[:200],
              file=log, flush=True)
    return out
