"""The diffusion chains' CUDA drivers run the same bodies as the CPU drivers.

Under Numba's CUDA simulator (a subprocess: the simulator must be enabled before Numba
is imported), tiny sizes (3 threads, 6 stages, d = 2): the plain chain, linear and
logistic LaplaceDPS, DPS and the linear DiffTS bandit run against
:mod:`vits_ref.drivers.cpu`. The CPU drivers and the simulator run the same loops in the
same order (the chain bodies call no BLAS; the logistic potential's products are BLAS on
the CPU, loops on CUDA), so they agree to rounding accumulated over a few stages: 1e-10
relative is about 1e5 ulps of headroom at these sizes. The arms of the bandit run must
agree exactly.
"""

from conftest import max_diff_under_cuda_simulator, requires_gpu

SCRIPT = r'''
import warnings
warnings.simplefilter("ignore")
import numpy as np
import vits_ref as vr
from vits_ref.diffusion import chain
from vits_ref.drivers import cpu, cuda
from vits_ref.kernels.logistic import POTENTIAL
from vits_ref.models.logistic import potential_scratch

def rel(a, b):
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))

rng = np.random.default_rng(3)
T, d, n = 6, 2, 3
worst = 0.0
for rv, st in (("exact", "exact"), ("ddpm", "standard")):
    prior = vr.diffusion.GaussianDiffusionPrior([0.5, -0.2], [[1.0, 0.3], [0.3, 0.5]],
                                                n_stages=T, reverse_variance=rv, start=st)
    ca = prior.chain_arrays()
    z = rng.standard_normal((n, T + 1, d))
    X = rng.standard_normal((5, d))
    y = X @ np.array([1.0, -1.0]) + 0.3 * rng.standard_normal(5)
    G, h = X.T @ X, X.T @ y
    out, ok = cuda.diffusion_chain(prior.eps_bodies, prior.eps_params, ca, z,
                                   chain.scratch_rows(prior, n))
    assert ok.all()
    worst = max(worst, rel(out, chain.reverse_chain(prior, z)))
    out, ok = cuda.diffusion_laplace_linear(prior.eps_bodies, prior.eps_params, ca, G, h, 2.0,
                                            z, chain.scratch_rows(prior, n))
    ref, ok2 = chain.laplace_linear(prior, G, h, 2.0, z)
    assert ok.all() and ok2.all()
    worst = max(worst, rel(out, ref))
    out, ok = cuda.diffusion_dps(prior.eps_bodies, prior.eps_params, ca, G, h, float(y @ y), z,
                                 chain.scratch_rows(prior, n))
    ref, ok2 = chain.dps_linear(prior, G, h, float(y @ y), z)
    assert ok.all() and ok2.all()
    worst = max(worst, rel(out, ref))
    m = vr.models.Logistic(d)
    m.add(X, (y > 0).astype(float))
    ps = potential_scratch(5, d)
    prows = tuple(np.stack([a] * n) for a in ps)
    out, info = cuda.diffusion_laplace_glm(prior.eps_bodies, POTENTIAL, prior.eps_params, ca,
                                           m.kernel_data(prior=False), 1e-8, 50, z,
                                           chain.scratch_rows(prior, n), prows)
    ref, info2 = chain.laplace_glm(prior, POTENTIAL, m.kernel_data(prior=False), ps, z, 1e-8, 50)
    assert (info[:, 0] == 0).all() and (info[:, :2] == info2[:, :2]).all(), (info, info2)
    worst = max(worst, rel(out, ref))
    R, rounds, K = 2, 4, 3
    contexts = rng.standard_normal((R, rounds, K, d))
    means = contexts @ np.array([1.0, -0.5])
    rewards = means + rng.standard_normal(means.shape)
    zz = rng.standard_normal((R, rounds, T + 1, d))
    regret, arms, status = cuda.diffts_linear_runs(prior.eps_bodies, prior.eps_params, ca, 0.25,
                                                   contexts, means, rewards, zz,
                                                   chain.scratch_rows(prior, R))
    ref_regret, ref_arms = chain.run_linear_bandit(prior, contexts, means, rewards, sigma=2.0,
                                                   z=zz)
    assert (status == 0).all() and (arms == ref_arms).all()
    worst = max(worst, rel(regret, ref_regret))
print("MAXDIFF", worst)
'''


def test_diffusion_chains_cuda_simulator_match_cpu():
    worst = max_diff_under_cuda_simulator(SCRIPT)
    assert worst < 1e-10


@requires_gpu
def test_diffusion_chains_on_gpu(capsys):
    exec(compile(SCRIPT, "diffusion_cuda_check", "exec"), {})
    worst = float(capsys.readouterr().out.split("MAXDIFF")[1])
    assert worst < 1e-10
