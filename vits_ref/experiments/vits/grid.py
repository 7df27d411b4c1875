"""The hyperparameter grid of the VITS paper, appendix E (Tables 1-3).

=========  =====================  ==============================  =========================
method     inverse temperature    regularisation ``lam``          step size
=========  =====================  ==============================  =========================
LinTS      eta in {10, 100,       {0.1, 1, 10}                    (none)
           500, 1000}
LMC-TS     same                   same                            h in {0.001, 0.01, 0.1}
VITS       same                   same                            h in {0.001, 0.01, 0.1}/eta
=========  =====================  ==============================  =========================

``K_t = 10`` for VITS; 10 or 50 for LMC-TS (two separate lines of Figure 1, so ``K_t`` is
fixed per line here, not searched); 20 Monte Carlo draws for the Hessian-free variant.

The step. The library's ``decayed`` schedule is the authors' code's
``h_t = h0 / (eta t)`` (docs/algorithms.md, section 2), so the grid's
``h in {0.001, 0.01, 0.1}/eta`` is ``h0 in {0.001, 0.01, 0.1}``, decayed in ``t`` as the
authors' code does; LMC-TS uses the same schedule and the same three ``h0``. The paper's
Hessian-free variant (Algorithm 3) has one step for the mean and the square root;
the library's symmetrised and control-variate variants, which are not in the paper, halve
the square root's step (``cov_step_size = h0 / 2``) as their earlier defaults did.

LinUCB is not in the paper's figures. Where it is shown, it explores at the temperature of
the Thompson samplers: ``alpha = 1/sqrt(eta)`` (the authors' code does the same), so its
grid is LinTS's.

Points at which a method diverges in an environment are left out by the tuning, which
reports them (:func:`vits_ref.experiments._tuning.grid_search`).
"""

import itertools
import math

ETAS = (10.0, 100.0, 500.0, 1000.0)
LAMS = (0.1, 1.0, 10.0)
STEPS = (0.001, 0.01, 0.1)


def points(kind):
    """The grid of a method kind as a list of keyword dicts for its policy/engine.

    Parameters
    ----------
    kind : {"lints", "linucb", "vits", "vits-hf", "vits-hf-half", "lmc"}
        ``"vits"``: VITS-I/II (``step_size``); ``"vits-hf"``: the paper's Hessian-free
        (``step_size = cov_step_size``); ``"vits-hf-half"``: the library's Hessian-free
        extras (``cov_step_size = step_size / 2``); ``"lmc"``: LMC-TS.

    Returns
    -------
    list of dict
        12 points for LinTS and LinUCB, 36 for the others, in the order
        ``eta`` (outer), ``lam``, step (inner).

    Examples
    --------
    >>> len(points("vits")), points("linucb")[0]
    (36, {'alpha': 0.31622776601683794, 'lam': 0.1})
    """
    if kind in ("lints", "linucb"):
        out = []
        for eta, lam in itertools.product(ETAS, LAMS):
            out.append({"eta": eta, "lam": lam} if kind == "lints" else
                       {"alpha": 1.0 / math.sqrt(eta), "lam": lam})
        return out
    if kind not in ("vits", "vits-hf", "vits-hf-half", "lmc"):
        raise ValueError(f"unknown grid kind {kind!r}")
    out = []
    for eta, lam, h in itertools.product(ETAS, LAMS, STEPS):
        point = {"eta": eta, "lam": lam, "step_size": h}
        if kind == "vits-hf":
            point["cov_step_size"] = h
        elif kind == "vits-hf-half":
            point["cov_step_size"] = h / 2
        out.append(point)
    return out
