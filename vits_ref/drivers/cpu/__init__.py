"""Every CPU driver of the library: the compiled entry points that call kernel bodies.

``kernels/`` holds bodies only (:mod:`vits_ref.kernels`); the modules of this package
compile them with :func:`vits_ref.config.cpu_jit`, one module per family, and this
package re-exports every driver (``from vits_ref.drivers import cpu; cpu.vits_steps``):

- :mod:`.potentials`: a potential's value, gradients and scores; the MLP's Jacobian;
- :mod:`.engines`: the VITS, Langevin and Newton steps, LinTS's and LinUCB's updates;
- :mod:`.bandit`: the fused bandit loops over pre-drawn randomness (whole runs, chunks);
- :mod:`.streams`: the bandit loop fed by counter-based streams, the Philox fills;
- :mod:`.environments`: the environments' round builders (the pool's features);
- :mod:`.target`: KL traces of VITS and LMC on Gaussian targets;
- :mod:`.renyi`: Rényi VI's steps and bound;
- :mod:`.mixtures`: VTS (CAVI fits, the arm update and selection, many runs);
- :mod:`.particles`: the SVGD direction and steps;
- :mod:`.diffusion`: the DDPM prior's training and the diffusion chains.

Steps that are generic over a potential or a bandit piece are built per (step,
potential) or per piece by factories, each cached in the process (``functools.cache``)
and on disk by Numba (one entry per closure contents). Every cached driver closes over
the stamp of the kernel and driver sources (:func:`vits_ref.config.sources_stamp`:
through the bodies' ``fingerprint``, or as ``stamp``; module-level drivers are built by
:func:`vits_ref.config.stamped`), so an edit of a body in any file recompiles the drivers
that inline it. The factories that only forward to one body are one row each
(:mod:`._forward`). Drivers allocate what the bodies need as scratch when the caller does
not keep it; engines that run many steps keep their scratch (:func:`vits_scratch`).

Callers use the drivers through this package (``cpu.chol_update_rows``), so a test that
replaces one here (``monkeypatch.setattr(cpu, ...)``) replaces it for them.
"""

from .bandit import (
    bandit_online,
    bandit_rounds,
    bandit_rounds_late,
    bandit_run,
    bandit_runs,
    online_compiled,
    online_meta,
)
from .diffusion import (
    ddpm_adam_update,
    ddpm_batch_loss_grads,
    ddpm_fold_input_scaling,
    ddpm_train_epoch,
    diffts_linear_runs,
    diffusion_chain,
    diffusion_dps,
    diffusion_eps,
    diffusion_laplace_glm,
    diffusion_laplace_linear,
    diffusion_reverse_mean,
    diffusion_vjp,
)
from .engines import (
    chol_update_rows,
    langevin_steps,
    lints_draws,
    linucb_scores,
    newton,
    sherman_morrison,
    sherman_morrison_rows,
    vits_scratch,
    vits_steps,
)
from .environments import pool_block
from .mixtures import cavi_fit, cavi_init, vts_runs, vts_select, vts_update
from .particles import svgd_phi, svgd_scratch, svgd_steps
from .potentials import grads_hessian, mlp_jacobian_rows, predict, value
from .renyi import renyi_grad, renyi_scratch, renyi_steps
from .streams import (
    FILL_BOUNDED,
    FILL_NORMALS,
    FILL_UNIFORMS,
    NORMALS_BY_ELEMENT,
    bandit_streams,
    philox_fills,
    philox_words,
    stream_draws,
)
from .target import trace_many, trace_one

__all__ = [
    # potentials
    "grads_hessian", "value", "predict", "mlp_jacobian_rows",
    # engines
    "vits_scratch", "vits_steps", "langevin_steps", "newton", "chol_update_rows",
    "lints_draws", "linucb_scores", "sherman_morrison", "sherman_morrison_rows",
    # bandit loops
    "bandit_online", "bandit_run", "bandit_runs", "bandit_rounds", "bandit_rounds_late",
    "online_compiled",
    "online_meta",
    # streams
    "bandit_streams", "stream_draws", "philox_words", "philox_fills", "FILL_UNIFORMS",
    "FILL_NORMALS", "FILL_BOUNDED", "NORMALS_BY_ELEMENT",
    # environments' rounds
    "pool_block",
    # Gaussian targets
    "trace_one", "trace_many",
    # Rényi VI
    "renyi_scratch", "renyi_steps", "renyi_grad",
    # VTS
    "cavi_fit", "cavi_init", "vts_update", "vts_select", "vts_runs",
    # particles
    "svgd_scratch", "svgd_phi", "svgd_steps",
    # diffusion
    "ddpm_batch_loss_grads", "ddpm_adam_update", "ddpm_train_epoch",
    "ddpm_fold_input_scaling", "diffusion_eps", "diffusion_vjp", "diffusion_reverse_mean",
    "diffusion_chain", "diffusion_laplace_linear", "diffusion_laplace_glm", "diffusion_dps",
    "diffts_linear_runs",
]
