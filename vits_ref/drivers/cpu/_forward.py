"""The factory-makers of the drivers that only forward to one body: one table row each.

Many drivers compile nothing but a call, ``run(a, b, ...) -> body(a, b, ...)``, with the
body a potential's (``potential.value``), one a kernel factory makes for a potential
(:func:`vits_ref.kernels.vits.make_vits_steps`), or a plain kernel
(:func:`vits_ref.kernels.cavi.init_factors`). Their factories differ only in the body and
the docstring, so each is one row of its family's module::

    value = potential_driver("value", attrgetter("value"), '''``run(data, theta, scratch)
    -> U(theta)``.''')
    cavi_init = kernel_driver("cavi_init", init_factors, '''``run(prior, fac, st)``: ...''')

Every factory is cached by :func:`functools.cache` (compiled once per process and
argument), and its driver closes over the stamp of the sources
(:func:`vits_ref.config.sources_stamp`, directly or through the potential's
``fingerprint``), as the hand-written factories' drivers do. The driver takes the body's
own parameters: Numba cannot call an inlined body (``kernel(inline=True)``) with
``*args`` ("Calling a closure with *args is unsupported"), so the driver is compiled from
:data:`_SOURCE` with the body's parameter names filled in, the code placed at the
template's lines of this file (Numba's cache and its error messages read them). Its
``__qualname__`` is ``"<name>.<locals>.run"``, as a hand-written factory's driver, so
that Numba's cache files (``_forward.value.locals.run-...``) and profiles name it.

Drivers that do more than forward (allocate scratch, loop, ``prange``) are written out by
hand next to the rows of their family.
"""

import ast
import functools
import inspect
import sys

from ...config import cpu_jit, sources_stamp

_SOURCE_LINE = sys._getframe().f_lineno + 1  # the line of "_SOURCE =": the template's is +1
_SOURCE = """\
def make(body, fp):
    def run(PARAMS):
        _ = fp
        return body(PARAMS)
    return run
"""


def _compile(name, body, fp):
    """``cpu_jit(run)``: ``run`` calls ``body`` with the body's parameters, closes over
    ``body`` and ``fp`` (Numba's cache key follows both)."""
    params = inspect.signature(body).parameters.values()
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty
           or p.name in ("body", "fp", "_") for p in params):
        raise TypeError(f"{name}: the body {body.__name__} must take positional "
                        f"parameters without defaults, none named body, fp or _; got "
                        f"{inspect.signature(body)}")
    tree = ast.parse(_SOURCE.replace("PARAMS", ", ".join(p.name for p in params)))
    ast.increment_lineno(tree, _SOURCE_LINE)
    namespace = {"__name__": __name__}  # run.__module__: Numba's cache rebuilds from it
    exec(compile(tree, __file__, "exec"), namespace)
    run = namespace["make"](body, fp)
    run.__qualname__ = f"{name}.<locals>.run"
    return cpu_jit(run)


def _caller_module():
    """The ``__name__`` of the module that called the factory-maker (where the row is),
    found as :func:`collections.namedtuple` finds it."""
    return sys._getframe(2).f_globals.get("__name__", __name__)


#: every factory made here, in definition order (tests check each driver's closure)
ROWS = []


def _finish(factory, name, doc, module, per_potential):
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = doc
    factory.__module__ = module
    factory = functools.cache(factory)
    factory.per_potential = per_potential  # name(potential), or name()
    ROWS.append(factory)
    return factory


def potential_driver(name, make_body, doc):
    """A factory ``name(potential) -> run``, cached per potential: ``run`` calls
    ``make_body(potential)`` with its arguments and returns its result; it closes over
    the potential's ``fingerprint`` (which includes the sources stamp)."""

    def factory(potential):
        return _compile(name, make_body(potential), potential.fingerprint)

    return _finish(factory, name, doc, _caller_module(), True)


def kernel_driver(name, body, doc):
    """A factory ``name() -> run``, cached: ``run`` calls the kernel ``body`` with its
    arguments and returns its result; it closes over :func:`vits_ref.config.sources_stamp`."""

    def factory():
        return _compile(name, body, sources_stamp())

    return _finish(factory, name, doc, _caller_module(), False)
