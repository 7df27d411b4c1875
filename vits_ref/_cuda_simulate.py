"""The ``device="cuda"`` path of :func:`vits_ref.simulate` (imported lazily)."""


def run_fused_cuda(spec, policy, env_for, root, T, n_runs, kl_rounds, regret, arms, kl,
                   progress, first_run=0):
    """The fused runs on the GPU (not yet available)."""
    raise NotImplementedError("simulate(device='cuda') is not implemented yet")
