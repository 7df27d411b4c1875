"""The Rényi appendix's checkable content, computed: the identities of eqs. (43)-(46), the
linear-Gaussian bound of B.2 against quadrature and Monte Carlo, and its errata.

The appendix (most likely Sajid et al., "Bayesian brains and the Rényi divergence", 2022;
docs/algorithms.md, section 6) reports no bandit result, but it states equations that can be
checked by computation. This experiment computes them on random cases and stores each
comparison as an interval for the claim table (``renyi-appendix`` entries):

- eqs. (43)-(46): Tsallis, Amari and Rényi as functions of the I-divergence, from
  :func:`vits_ref.gaussian.i_divergence` and the others, and Table 2's I-divergence
  against 1-D quadrature of ``int p^a q^(1-a)`` (the largest relative difference over the
  cases);
- B.2: :func:`~vits_ref.gaussian.divergences.linear_gaussian_renyi_bound` against 1-D
  quadrature of eq. (68) (scalar ``s``, ``n = 1`` and ``3`` observations), and against a
  Monte Carlo estimate of ``E_q[(p(o, s)/q(s))^(1-a)]`` (its ratio to the closed form, with
  the draws' t interval);
- errata: eqs. (98)-(101) as printed (labelled ``D_a[q || p(s, o)]``, and eq. (101) without
  the ``(1-a)(O X - c^2)`` terms dropped between eqs. (93) and (94)), and their corrected
  forms, against the quadrature.

Output: ``summary.json`` and ``checks.png`` (each comparison's largest relative
difference, on a log scale).

A computed comparison has no sampling spread: its interval is the point (the largest
relative difference over the cases), judged against the quadrature's precision
(``NUMERICAL`` in docs/reproduction/judging.md). ``runs``: random cases per comparison;
``rounds``: Monte Carlo draws per case. About 10 CPU-seconds at the defaults.
"""

import math

import numpy as np
from scipy import integrate, stats

from ... import _validate as val
from ..._seeding import run_seeds
from ...gaussian import divergences as dv
from .._chunks import check_progress
from .._common import environment_info, write_json
from ..plotting import figure, paper_title, plotted, save

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"checks.png": paper_title("renyi", "appendices A-B: identities, bound and errata "
                                              "against quadrature")}

NAME = "renyi-appendix"
DESCRIPTION = ("Rényi appendix A-B: identities (43)-(46), the B.2 bound against quadrature "
               "and Monte Carlo, the errata of eqs. (98)-(101), computed")
DEFAULTS = {"runs": 8, "rounds": 200_000, "seed": 0}
ALPHAS = (0.3, 0.5, 0.8, 1.5, 2.0)
#: Monte Carlo cases: (alpha, q's covariance as a multiple of the posterior's), each with a
#: finite-variance estimator ((2a - 1)/scale + 2 - 2a > 0)
MC_CASES = ((0.5, 1.3), (2.0, 0.5), (-0.5, 1.5))
LOG_2PI = math.log(2 * math.pi)


def _rel(got, want):
    return abs(got - want) / max(abs(want), 1e-300)


def _quad_log(f, centre, sd):
    """``log int exp(f)`` over the line, by adaptive quadrature on +-14 sd of the centre."""
    shift = f(centre)
    val, err = integrate.quad(lambda s: math.exp(f(s) - shift), centre - 14 * sd,
                              centre + 14 * sd, epsabs=0.0, epsrel=1e-13, limit=200)
    if not err < 1e-10 * val:
        raise RuntimeError(f"quadrature did not converge (error {err:.3g} of {val:.3g})")
    return math.log(val) + shift


def _pair(rng):
    """Two 1-D Gaussians whose I-divergence exists for every alpha of ALPHAS."""
    mp, mq = rng.normal(size=2)
    vq = rng.uniform(0.5, 2.0)
    vp = vq * rng.uniform(0.6, 1.5)  # S_a = a vq + (1 - a) vp > 0 for a <= 2
    return mp, vp, mq, vq


def _log_integrand(mp, vp, mq, vq, a):
    """``s -> log(p(s)^a q(s)^(1-a))``, Table 2's I-divergence integrand, 1-D."""
    return lambda s: (a * stats.norm.logpdf(s, mp, math.sqrt(vp))
                      + (1 - a) * stats.norm.logpdf(s, mq, math.sqrt(vq)))


def identities(rng, cases):
    """Largest relative differences of eqs. (43)-(46) and of Table 2's I-divergence
    against quadrature, over ``cases`` random pairs and every alpha of ALPHAS."""
    worst = dict.fromkeys(("eq43", "eq44", "eq45", "eq46", "table2_quadrature"), 0.0)
    for _ in range(cases):
        mp, vp, mq, vq = _pair(rng)
        P, Q = (np.array([mp]), np.array([[vp]])), (np.array([mq]), np.array([[vq]]))
        for a in ALPHAS:
            di = dv.i_divergence(*P, *Q, a)
            b = (1 + a) / 2
            worst["eq43"] = max(worst["eq43"], _rel(dv.tsallis(*P, *Q, a), (di - 1) / (a - 1)))
            worst["eq44"] = max(worst["eq44"], _rel(
                dv.amari(*P, *Q, a), 4 / (1 - a * a) * (1 - dv.i_divergence(*P, *Q, b))))
            worst["eq45"] = max(worst["eq45"], _rel(dv.amari(*P, *Q, a),
                                                    dv.tsallis(*P, *Q, b) / b))
            worst["eq46"] = max(worst["eq46"], _rel(dv.renyi(*P, *Q, a),
                                                    math.log(di) / (a - 1)))
            f = _log_integrand(mp, vp, mq, vq, a)
            va = vp * vq / (a * vq + (1 - a) * vp)
            centre = va * (a * mp / vp + (1 - a) * mq / vq)
            worst["table2_quadrature"] = max(worst["table2_quadrature"], _rel(
                di, math.exp(_quad_log(f, centre, math.sqrt(va)))))
    return worst


def _scalar_model(rng, n):
    x = rng.normal(size=n)
    o = 0.7 * x + rng.normal(size=n)
    a = rng.normal(size=(n, n))
    sl = a @ a.T / n + 0.5 * np.eye(n)
    return o, x, rng.uniform(0.8, 1.5), sl, float(rng.normal(scale=0.3)), \
        float(rng.uniform(0.25, 0.8))


def _quad_bound(o, x, sp, sl, mu, sq, a):
    """Eq. (68), ``1/(1-a) log int q^a p(o, s)^(1-a) ds``, by quadrature (scalar s)."""
    isl = np.linalg.inv(sl)
    n = len(o)
    cst = -0.5 * ((n + 1) * LOG_2PI + math.log(sp) + np.linalg.slogdet(sl)[1])

    def f(s):
        r = o - s * x
        return (a * (-0.5 * (LOG_2PI + math.log(sq)) - 0.5 * (s - mu) ** 2 / sq)
                + (1 - a) * (cst - 0.5 * (s * s / sp + r @ isl @ r)))

    A = a / sq + (1 - a) * (1 / sp + x @ isl @ x)
    centre = (a * mu / sq + (1 - a) * x @ isl @ o) / A
    return _quad_log(f, centre, 1 / math.sqrt(A)) / (1 - a)


def printed_eqs_98_101(o, x, sp, sl, mu, sq, a):
    """Eqs. (98)-(101) as printed (scalar s): the value and the terms dropped between
    eqs. (93) and (94), ``-(1-a)/(2A) (O X - c^2)`` (docs/algorithms.md, section 6)."""
    isl = np.linalg.inv(sl)
    X, c, oo = x @ isl @ x, x @ isl @ o, o @ isl @ o
    A = a / sq + (1 - a) * (1 / sp + X)
    n = len(o)
    value = (0.5 * math.log(sq / ((2 * math.pi) ** n * sp * np.linalg.det(sl)))
             - a / (2 * sq * A) * (oo + mu**2 / sp + mu**2 * X - 2 * mu * c)
             - math.log(1 + (1 - a) * (sq * X + sq / sp - 1)) / (2 * (1 - a))
             - (1 - a) * oo / (2 * A * sp))
    return value, -(1 - a) / (2 * A) * (oo * X - c * c)


def bound_checks(rng, cases):
    """Largest relative differences, over ``cases`` random scalar models per ``n`` and the
    alphas of ALPHAS below 1 (where the integral always exists), of: the library's bound
    against quadrature; eqs. (98)-(101) as printed, read as their label ``D_a[q||p(s,o)]``
    (= -L_a), and as the bound; the corrected form (the dropped terms restored)."""
    worst = dict.fromkeys(("bound_quadrature", "eq98_label", "eq101_printed_n3",
                           "eq101_printed_n1", "corrected"), 0.0)
    for n in (1, 3):
        for _ in range(cases):
            o, x, sp, sl, mu, sq = _scalar_model(rng, n)
            for a in (al for al in ALPHAS if al < 1):
                want = _quad_bound(o, x, sp, sl, mu, sq, a)
                got = dv.linear_gaussian_renyi_bound(o, x[:, None], [[sp]], sl, [mu],
                                                     [[sq]], a)
                printed, missing = printed_eqs_98_101(o, x, sp, sl, mu, sq, a)
                worst["bound_quadrature"] = max(worst["bound_quadrature"], _rel(got, want))
                worst["eq98_label"] = max(worst["eq98_label"], _rel(printed, -want))
                key = f"eq101_printed_n{n}"
                worst[key] = max(worst[key], _rel(printed, want))
                worst["corrected"] = max(worst["corrected"], _rel(printed + missing, want))
    return worst


def monte_carlo(rng, draws):
    """Per MC case: the ratio of the Monte Carlo mean of ``(p(o, s)/q(s))^(1-a)``,
    ``s ~ q``, to the closed form ``exp((1-a) L_a)``, with the draws' 95% t interval."""
    out = []
    for a, scale in MC_CASES:
        X = rng.normal(size=(3, 2))
        sp = np.eye(2) * rng.uniform(0.8, 1.5)
        sl = np.eye(3) * rng.uniform(0.5, 1.0)
        o = X @ rng.normal(size=2) + rng.normal(size=3)
        prec = np.linalg.inv(sp) + X.T @ np.linalg.inv(sl) @ X
        C = np.linalg.inv(prec)
        m = C @ X.T @ np.linalg.inv(sl) @ o
        mu, sq = m + 0.3 * np.sqrt(np.diag(C)), scale * C
        s = mu + rng.standard_normal((draws, 2)) @ np.linalg.cholesky(sq).T
        log_w = (stats.multivariate_normal(np.zeros(2), sp).logpdf(s)
                 + stats.multivariate_normal(np.zeros(3), sl).logpdf(o[None, :] - s @ X.T)
                 - stats.multivariate_normal(mu, sq).logpdf(s))
        bound = dv.linear_gaussian_renyi_bound(o, X, sp, sl, mu, sq, a)
        r = np.exp((1 - a) * (log_w - bound))  # e / exp((1-a) L): mean 1 if L is right
        mean, sd = float(r.mean()), float(r.std(ddof=1))
        half = stats.t.ppf(0.975, draws - 1) * sd / math.sqrt(draws)
        out.append({"alpha": a, "scale": scale, "estimate": mean, "low": mean - half,
                    "high": mean + half, "n": draws, "sd": sd})
    return out


def run(runs, rounds, seed, out, progress=None):
    """Compute the checks (``runs`` random cases each, ``rounds`` Monte Carlo draws per
    case) and write ``summary.json`` into ``out``; returns the summary."""
    check_progress(progress)
    import os
    import time

    runs = val.positive_int(runs, "runs")
    rounds = val.positive_int(rounds, "rounds", minimum=1000)
    ss = val.as_seed_sequence(seed)
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    # three independent streams (identities, bound, Monte Carlo): the root's first seeds
    rng = [np.random.default_rng(s) for s in run_seeds(ss, 0, 3)]
    if progress:
        progress(f"{NAME}: {runs} cases, {rounds} draws")
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs,
              "rounds": rounds, "seed": seed, "identities": identities(rng[0], runs),
              "bound": bound_checks(rng[1], runs), "monte_carlo": monte_carlo(rng[2], rounds),
              "environment": environment_info()}
    result["total_wall_time_s"] = time.perf_counter() - t0
    result["files"] = [os.path.join(out, "summary.json")]
    path = os.path.join(out, "checks.png")
    if plotted(lambda: _plot_checks(result, path), progress):
        result["files"].append(path)
    write_json(result["files"][0], result)
    return result


def _plot_checks(result, path):
    """``checks.png``: each computed comparison's largest relative difference (log scale;
    a zero is drawn at 1e-17, below double precision)."""
    rows = [(k, v) for group in ("identities", "bound") for k, v in result[group].items()]
    rows += [(f"MC alpha={m['alpha']:g}", abs(m["estimate"] - 1.0))
             for m in result["monte_carlo"]]
    fig, (ax,) = figure(width=7.0, height=0.35 * len(rows) + 1.5)
    ax.barh(range(len(rows)), [max(v, 1e-17) for _, v in rows], color="tab:blue")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([k for k, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("largest relative difference")
    fig.suptitle(f"{TITLES['checks.png']} ({result['runs']} cases, "
                 f"{result['rounds']} draws)")
    save(fig, path)


def table(result):
    """The computed checks as a terminal table."""
    lines = ["check                      largest relative difference"]
    for group in ("identities", "bound"):
        lines += [f"{k:<26} {v:.3g}" for k, v in result[group].items()]
    lines.append("Monte Carlo / closed form, E_q[(p/q)^(1-a)] (95% t interval):")
    lines += [f"  alpha = {m['alpha']:g}, Sq = {m['scale']:g} C: {m['estimate']:.5f} "
              f"[{m['low']:.5f}, {m['high']:.5f}] ({m['n']} draws)"
              for m in result["monte_carlo"]]
    return "\n".join(lines)
