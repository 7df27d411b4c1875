"""VTS (Urteaga & Wiggins) as the VITS paper's experiments run it: at the VTS authors'
defaults, since the VITS paper gives no hyperparameters for it (``vits-figG`` in appendix G,
``vits-fig1``'s ill-conditioned panel in section 4.1)."""

#: VTS's hyperparameters: the VTS authors' defaults, K = 2 experts per arm.
VTS_PARAMS = {"n_components": 2, "gamma0": 1.0, "u0": "u0_k = k 1_d", "V0": "I",
              "alpha0": 1.0, "beta0": 1.0, "scoring": "sample_pi", "sample_params": True,
              "tol": 1e-5, "max_iter": 100}


def vts_policy(dim, n_arms):
    """VTS at :data:`VTS_PARAMS` for ``dim`` features and ``n_arms`` arms, one model per arm
    (``u0`` and ``V0`` at VTS's defaults, as :data:`VTS_PARAMS` says)."""
    from ...inference.vts import VTS

    return VTS(dim, n_arms, **{k: v for k, v in VTS_PARAMS.items() if k not in ("u0", "V0")})
