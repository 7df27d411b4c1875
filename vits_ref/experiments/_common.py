"""Shared output writing of the experiments: CSV of curves, JSON summary, PNG plot."""

import csv
import json
import os
import platform

import numba
import numpy as np


def write_curves_csv(path, rows):
    """``rows``: iterable of dicts with keys panel, method, round, mean, stderr."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "method", "round", "mean_cumulative_regret", "stderr"])
        for r in rows:
            for t, (m, s) in enumerate(zip(r["mean"], r["stderr"], strict=True), start=1):
                w.writerow([r["panel"], r["method"], t, f"{m:.6g}", f"{s:.6g}"])


def environment_info():
    """Versions and thread settings, stored in every JSON summary."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "machine": platform.machine()}


def write_json(path, obj):
    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return str(o)

    with open(path, "w") as fh:
        json.dump(obj, fh, indent=2, default=default)
