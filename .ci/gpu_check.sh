#!/usr/bin/env bash
# The real-GPU checks, for a machine with an NVIDIA GPU (CI has none and never runs this).
#
#   bash .ci/gpu_check.sh OUT [tests|bench|fig2|all|lease]
#
# tests: every test that skips without a real GPU (the "on_gpu" and CuPy tests of
#        tests/, paper-size ones included), then the two targets in one process
#        (tests/test_cuda_targets.py, slow ones included, and tests/cuda_targets.py's CPU
#        and GPU simulate in one process); bench: `python -m vits_ref bench --device cuda`
#        (rounds per second of the fused loop on the GPU, the all-core CPU, the JAX peer,
#        the fraction of float64 peak); fig2: `vits-fig2 --device cuda` at the default size,
#        timed. Each step has its own time limit (GPU_CHECK_LIMIT_S seconds, default 300)
#        and writes its log under OUT, so that one hang loses one step. docs/cuda.md says
#        what was measured with it.
# lease: what fits one short lease of a 16-core GPU machine, side by side, in at most
#        GPU_LEASE_S seconds (default 540). First, together: the gated tests on
#        GPU_CHECK_JOBS pytest workers (default 8); the mixed order of the two targets
#        launched on the GPU (CPU, GPU, CPU in one process; GPU, CPU in another); vits-fig2
#        on the GPU at FIG2_RUNS runs x 1000 rounds on 4 workers (default 4; 0 leaves it
#        out); and one bench process per policy of BENCH_POLICIES at the runs of
#        BENCH_RUNS, which compile their kernels (bench --share-gpu). Then, once the others
#        are done (or at GPU_LEASE_PHASE_S, default 330 s, whichever comes first), the
#        bench processes time one at a time on the otherwise idle machine. Writes at most
#        8 files under OUT (the device tool's limit): versions.txt, tests.log, mixed.log,
#        bench.log, bench_json.tgz, fig2.log, fig2.tgz, lease.txt (what ran when).
#
# Runs from the source tree without installing it (an installed copy would compile every
# kernel again): kernels/ is linked as vits_ref/kernels, as the wheel lays it out. Wheels in
# .whl/ (numpy < 2.5 where the machine's numba-cuda needs it: vits_ref.config's
# check_cuda_stack says when) go first on the path.
set -uo pipefail
out=${1:?usage: bash .ci/gpu_check.sh OUT [tests|bench|fig2|all|lease]}
what=${2:-all}
limit=${GPU_CHECK_LIMIT_S:-300}
cd "$(dirname "$0")/.."
mkdir -p "$out"
PY=${PYTHON:-python3}
# JAX (the bench's peer) would otherwise take 75% of the GPU memory at start
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/gpu_check_site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/gpu_check_site
fi
[ -e vits_ref/kernels ] || ln -s ../kernels vits_ref/kernels
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
    "$PY" - <<'PYEOF'
import numpy, numba, scipy
from vits_ref import config
print("numpy", numpy.__version__, "numba", numba.__version__, "scipy", scipy.__version__)
try:
    import numba_cuda
    print("numba-cuda", getattr(numba_cuda, "__version__", "?"))
    config.check_cuda_stack()
    print("cuda stack: ok")
except Exception as exc:  # reported, not fatal: the steps below say what fails
    print("cuda stack:", type(exc).__name__, exc)
from numba import cuda
print("device:", getattr(cuda.get_current_device(), "name", "simulator")
      if cuda.is_available() else "none")
PYEOF
} 2>&1 | tee "$out/versions.txt"

step() {  # step NAME COMMAND...: run under the time limit, log to OUT/NAME.log
    local name=$1
    shift
    echo "== $name: $*"
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$out/$name.log"
    tail -n 25 "$out/$name.log"
}

if [ "$what" = tests ] || [ "$what" = all ]; then
    step tests "$PY" -m pytest -n 0 -p no:cacheprovider -q -m "slow or not slow" \
        -k "on_gpu or (cupy_equals and not stand_in) or cupy_fig2" --durations=10 tests/
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
    # the two targets in one process, both orders (docs/architecture.md, "One body, two
    # targets"): CPU simulate, every kernel to sm_90 PTX, CPU again, and the reverse; then
    # CPU simulate and simulate(device="cuda") of every policy in one process on the GPU
    step mixed_targets "$PY" -m pytest -n 0 -p no:cacheprovider -q -m "slow or not slow" \
        --durations=10 tests/test_cuda_targets.py
    step mixed_gpu env -u NUMBA_ENABLE_CUDASIM VITS_REF_CACHE=0 "$PY" tests/cuda_targets.py \
        cpu:lints,vits-ii,vits-ii-logistic,lmc-logistic,laplace-logistic,random \
        gpu:lints,linucb,vits-i,vits-ii,vits-hf,vits-hf-cv,lmc,random,vits-ii-logistic,lmc-logistic,laplace-logistic \
        cpu:linucb,vits-i,vits-hf,vits-hf-cv,lmc
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    step bench "$PY" -m vits_ref bench --device cuda
fi
if [ "$what" = fig2 ] || [ "$what" = all ]; then
    step fig2 "$PY" -m vits_ref run vits-fig2 --device cuda --out /tmp/gpu_check_fig2 --force
fi

if [ "$what" = lease ]; then
    lease=${GPU_LEASE_S:-540}
    phase=${GPU_LEASE_PHASE_S:-330}
    jobs=${GPU_CHECK_JOBS:-8}
    fig2_runs=${FIG2_RUNS:-4}
    policies=${BENCH_POLICIES:-lints,linucb,vits-ii,vits-hf,lmc}
    bench_runs=${BENCH_RUNS:-1024,16384,65536}
    work=$(mktemp -d)
    out=$(cd "$out" && pwd)  # absolute: the archives below are written from $work
    log="$out/lease.txt"
    say() { echo "[$SECONDS s] $*" | tee -a "$log"; }
    start=$SECONDS
    say "lease: $lease s; first phase up to $phase s; $jobs test workers; fig2 $fig2_runs runs;" \
        "bench $policies at $bench_runs runs; $(nproc) cores"
    # -v: each test's outcome is logged as it ends, so a step cut by its limit still says which passed
    timeout "$phase" "$PY" -m pytest -n "$jobs" -p no:cacheprovider -v -m "slow or not slow" \
        -k "on_gpu or (cupy_equals and not stand_in) or cupy_fig2" --durations=40 tests/ \
        >"$out/tests.log" 2>&1 &
    p_tests=$!
    both=(env -u NUMBA_ENABLE_CUDASIM VITS_REF_CACHE=0 timeout "$phase" "$PY" tests/cuda_targets.py)
    "${both[@]}" cpu:lints,vits-ii,vits-ii-logistic,random \
        gpu:lints,linucb,vits-ii,vits-hf,random,vits-ii-logistic,laplace-logistic \
        cpu:linucb,vits-i,lmc,laplace-logistic >"$work/mixed_cpu_first.log" 2>&1 &
    p_mixed1=$!
    "${both[@]}" gpu:vits-i,vits-hf-cv,lmc,lmc-logistic \
        cpu:lints,vits-hf,vits-hf-cv,lmc-logistic >"$work/mixed_gpu_first.log" 2>&1 &
    p_mixed2=$!
    p_fig2=
    if [ "$fig2_runs" -gt 0 ]; then
        timeout "$phase" "$PY" -m vits_ref run vits-fig2 --device cuda --runs "$fig2_runs" \
            --rounds 1000 --jobs 4 --no-precompile --quiet --out "$work/fig2" --force \
            >"$out/fig2.log" 2>&1 &
        p_fig2=$!
    fi
    bench_pids=()
    for p in ${policies//,/ }; do
        timeout "$lease" "$PY" -m vits_ref bench --device cuda --policies "$p" \
            --runs "$bench_runs" --no-logistic --json "$work/bench_$p.json" \
            --share-gpu "$work/gpu.lock" >"$work/bench_$p.log" 2>&1 &
        bench_pids+=($!)
    done
    for name in tests mixed1 mixed2 fig2; do
        pid_var=p_$name
        [ -n "${!pid_var}" ] || continue
        wait "${!pid_var}"
        say "$name: exit $? after $((SECONDS - start)) s"
    done
    touch "$work/gpu.lock.go"
    say "bench: timing starts (one process at a time)"
    for i in "${!bench_pids[@]}"; do
        wait "${bench_pids[$i]}"
        say "bench process $i: exit $? after $((SECONDS - start)) s"
    done
    cat "$work/mixed_cpu_first.log" "$work/mixed_gpu_first.log" >"$out/mixed.log"
    cat "$work"/bench_*.log >"$out/bench.log"
    (cd "$work" && tar czf "$out/bench_json.tgz" bench_*.json 2>/dev/null)
    [ -d "$work/fig2" ] && (cd "$work" && tar czf "$out/fig2.tgz" --exclude=chunks fig2)
    say "lease: done after $((SECONDS - start)) s"
    tail -n 30 "$out/tests.log"
    "$PY" - "$out/mixed.log" <<'PYEOF'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("RESULT"):
        for ph in json.loads(line[len("RESULT"):]):
            print(f"mixed {ph['phase']}: {ph['seconds']} s, {len(ph['errors'])} errors")
            for err in ph["errors"]:
                print("   ", err.splitlines()[0][:160])
PYEOF
    tail -n 5 "$out/fig2.log" 2>/dev/null
    grep -h -v "^ *$" "$out/bench.log" | grep -E "^(lints|linucb|vits|lmc)|philox|JAX peer" || true
fi
