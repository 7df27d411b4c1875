"""Install vits_ref; ``kernels/`` is installed as the subpackage ``vits_ref.kernels``.

The package list is derived from the tree (every package under ``vits_ref/``, plus
``kernels/`` mapped to ``vits_ref.kernels``), so a new subpackage ships without an edit
here; ``.ci/run`` builds the wheel, installs it in a fresh virtual environment outside the
tree and imports every module from there.
"""

from setuptools import find_packages, setup

# kernels/ has an __init__.py, so a bare find_packages() would also ship it as a stray
# top-level package "kernels": include only vits_ref's own tree and map kernels/ into it
PACKAGES = find_packages(include=["vits_ref", "vits_ref.*"]) + ["vits_ref.kernels"]

EXTRAS = {
    # pytest-xdist: pytest.ini runs the suite in worker processes (-n auto, at most 4)
    "test": ["pytest>=7", "pytest-xdist>=3", "hypothesis>=6", "statsmodels>=0.14",
             "scikit-learn>=1.3", "nbclient>=0.9", "nbformat>=5.9", "ipykernel>=6",
             "matplotlib>=3.7", "ruff>=0.5", "import-linter>=2", "tqdm>=4.60",
             # pytest.ini's per-test time limit: a hung test fails with its stacks
             "pytest-timeout>=2.1",
             # the Dask executor's bit-identity test (tests/test_chunks.py)
             "distributed>=2024.1", "cryptography>=41",
             # numba-cuda alone runs the CUDA simulator tests (NUMBA_ENABLE_CUDASIM=1);
             # the compiler wheels that tests/test_cuda_ptx.py needs are the "ptx" extra
             "numba-cuda>=0.20"],
    # the CUDA 12 compiler wheels that compile_ptx needs, NVVM (nvcc) and NVRTC (about 310 MB
    # of NVIDIA wheels; numba-cuda's own cu12 extra adds the runtime, CCCL and nvJitLink, 430
    # MB in all), so that tests/test_cuda_ptx.py compiles every kernel to sm_90 PTX (all 50
    # cases, slow groups included, pass with these alone); no GPU is used, and without them
    # those tests skip. .ci/run installs it
    "ptx": ["numba-cuda>=0.20", "cuda-bindings>=12.9.1,<13", "cuda-toolkit[nvcc,nvrtc]==12.*"],
    # the figures, and tqdm's progress bars of the runs and of long work
    # (DiffusionPrior.fit; a line per step without it)
    "plot": ["matplotlib>=3.7", "tqdm>=4.60"],
    "progress": ["tqdm>=4.60"],
    # the data sets bundled with scikit-learn: digits (diffts-digits), diabetes
    # (opvi-bnn without --data), the classifiers' data sets (opvi-classifier)
    "data": ["scikit-learn>=1.3"],
    # chunks of experiments on a Dask cluster (--scheduler, --dask-local); cryptography
    # makes the local cluster's temporary TLS credentials (only this process may use it)
    "dask": ["distributed>=2024.1", "cryptography>=41"],
    "bench": ["asv>=0.6"],
    # the JAX peer of the GPU benchmark (vits_ref._bench.jax_peer); on a GPU install
    # "jax[cuda12]" instead, so that the peer runs on the device
    "jax": ["jax>=0.4"],
    # scikit-learn: the online notebook streams its wine data (07_online.ipynb)
    "notebooks": ["jupyter", "nbclient>=0.9", "nbformat>=5.9", "ipykernel>=6", "matplotlib>=3.7",
                  "scikit-learn>=1.3"],
    # numba-cuda <= 0.30.4's CUDA target uses np.row_stack, which numpy 2.5 removed
    # (vits_ref.config.check_cuda_stack names the fix when the pair is broken)
    "cuda": ["numba-cuda[cu12]>=0.20", "numpy<2.5"],
    # the documentation site (docs/conf.py): python -m sphinx -W --keep-going -b html docs
    # build/docs/html; myst-nb executes the notebooks, hence ipykernel and matplotlib
    "docs": ["sphinx>=7.3", "numpydoc>=1.7", "myst-nb>=1.1", "pydata-sphinx-theme>=0.15",
             "ipykernel>=6", "matplotlib>=3.7", "scikit-learn>=1.3"],
    # the batched MLP path of vits-fig2 --device cuda (vits_ref.bandit._batched_mlp): cuBLAS
    # batched d x d products through CuPy
    "cupy": ["cupy-cuda12x"],
}

setup(
    name="vits_ref",
    version="0.1.0",
    description=("Reference NumPy/Numba library for Thompson sampling with approximate "
                 "posteriors (VITS and baselines)."),
    long_description=open("README.rst", encoding="utf-8").read(),
    long_description_content_type="text/x-rst",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir={"vits_ref.kernels": "kernels"},
    install_requires=["numpy>=1.24", "scipy>=1.10", "numba>=0.59"],
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["vits-ref=vits_ref.__main__:main"]},
)
