"""A potential's own bodies, compiled one by one: value, gradients (and Hessians), scores.

A potential (:class:`vits_ref.kernels.potential.Potential`: linear, logistic, MLP, the
mixtures and BNNs) is a set of kernel bodies behind one signature; each factory here
compiles one of them for that potential, cached per potential, its driver closing over
the potential's ``fingerprint`` (rows of :func:`._forward.potential_driver`). The models
call them for their Python paths (``value``, ``grads``, ``predict``), the particle and
SGLD engines for their gradients.
"""

from operator import attrgetter

from ...config import cpu_jit, stamped
from ...kernels.mlp import mlp_jacobian
from ._forward import potential_driver

# one row per driver: name, the potential's body, the docstring (the driver's arguments)
grads_hessian = potential_driver("grads_hessian", attrgetter("grads_hessian"), """\
``run(data, thetas, want_hessian, G, H, scratch)``: the potential's gradients.""")
value = potential_driver("value", attrgetter("value"), """\
``run(data, theta, scratch) -> U(theta)``.""")
predict = potential_driver("predict", attrgetter("predict"), """\
``run(data, theta, X, out, scratch)``: the arms' scores.""")


@stamped
def mlp_jacobian_rows(stamp):
    @cpu_jit
    def mlp_jacobian_rows(data, theta, X, out, J, scratch):
        """The network's Jacobian ``J`` (n, d) and outputs at the rows of ``X`` (tests,
        teaching)."""
        _ = stamp
        mlp_jacobian(data, theta, X, out, J, scratch)

    return mlp_jacobian_rows
