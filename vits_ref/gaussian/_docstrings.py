"""Docstring sections that several closed forms share, written once and filled in at import.

A docstring names a section (heading included, where the section starts one) by a line
that holds only ``{name}``; :func:`fill` replaces that line with the section, indented as
the line was, so ``help()``, Sphinx and the doctests see the full text. Other braces (the
LaTeX of the Notes) are left alone.
"""

import re

SECTIONS = {
    # the two Gaussians of a divergence (vits_ref.gaussian, vits_ref.gaussian.divergences)
    "pair_parameters": """\
Parameters
----------
mean_p : array_like, shape (d,)
    Mean of ``p``.
cov_p : array_like, shape (d, d)
    Covariance of ``p``, symmetric positive definite.
mean_q : array_like, shape (d,)
    Mean of ``q``.
cov_q : array_like, shape (d, d)
    Covariance of ``q``, symmetric positive definite.""",
    "alpha": """\
alpha : float
    The order ``a``, any finite real number.""",
    "alpha_raises": """\
Raises
------
TypeError
    If ``alpha`` is not a real number.
ValueError
    If ``alpha`` or an array is non-finite, a shape is wrong, or a covariance is not
    symmetric positive definite.""",
    # the linear-Gaussian model of the Rényi appendix B
    "model_parameters": """\
Parameters
----------
o : array_like, shape (n,)
    The observation vector (``n >= 1``).
X : array_like, shape (n, d)
    Design matrix: ``E[o | s] = X s``. The appendix's scalar ``s`` with a vector
    ``x`` is ``d = 1``, ``X = x[:, None]``.
prior_cov : array_like, shape (d, d)
    Prior covariance ``Sigma_p`` of ``s`` (prior mean 0), symmetric positive definite.
    With ``gamma_prior`` it is the conditional covariance ``(lambda_p sigma_p)^-1``.
noise_cov : array_like, shape (n, n)
    Observation noise covariance ``Sigma_l``, symmetric positive definite.""",
    "model_q": """\
mean_q : array_like, shape (d,)
    Mean ``mu_q`` of the Gaussian ``q(s)``.
cov_q : array_like, shape (d, d)
    Covariance ``Sigma_q`` of ``q(s)``, symmetric positive definite.""",
    "gamma_prior": """\
gamma_prior : tuple (shape, rate, precision) or None, default None
    Appendix B.1's Gamma prior on the prior precision scale, ``lambda_p ~
    Gam(alpha_p, beta_p)`` (rate ``beta_p``), evaluated at the fixed value
    ``lambda_p = precision``: the target becomes ``p(o, s, lambda_p)`` and
    ``log Gam(lambda_p; alpha_p, beta_p)`` (eq. 64) is added. ``None`` leaves it out.""",
    "model_raises": """\
Raises
------
TypeError, ValueError
    On non-numeric, non-finite or wrongly shaped input, or a covariance that is not
    symmetric positive definite; the message names the argument.""",
}

_SLOT = re.compile(r"^( *)\{(\w+)\}$", flags=re.M)


def fill(func):
    """Decorator: ``func`` with each ``{name}`` line of its docstring replaced by
    ``SECTIONS[name]`` (a ``KeyError`` at import for an unknown name). Under
    ``python -OO`` there is no docstring to fill."""
    if func.__doc__ is None:
        return func

    def section(match):
        indent = match.group(1)
        return "\n".join(indent + line if line else line
                         for line in SECTIONS[match.group(2)].split("\n"))

    func.__doc__ = _SLOT.sub(section, func.__doc__)
    return func
