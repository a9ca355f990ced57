#!/bin/bash
# Session 21 GPU run 1: autograd on CUDA, torch.compile, plain backward timing.
cd "$(dirname "$0")/.."
source bench/gpu_env.sh && setup
export PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib ATTN_CACHE_DIR=/tmp/attn-cache ATTNRT_SYNC_TIMEOUT_S=30
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print(torch.__version__, torch.version.cuda)"
echo "== autograd_cuda"
cat > /tmp/ag.py <<'PY'
import sys, torch; sys.path.insert(0, "test/python/Inputs")
import grad_cases; grad_cases.run("cuda", half=(torch.bfloat16, torch.float16))
PY
timeout 300 python3 /tmp/ag.py 2>&1 | tail -60
echo "== torch_compile"
timeout 300 python3 test/python/torch_compile.test 2>&1 | tail -30
echo "== timing"
cat > /tmp/tm.py <<'PY'
import torch, attn, time
torch.manual_seed(0)
for N, B in ((4096, 2),):
    H, D = 32, 128
    q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn_like(q)
    def step():
        o = attn.attention(q, k, v, rope=dict(theta=10000.0), mask="causal")
        o.backward(do)
    def sdpa():
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(do)
    for name, f in (("attn fwd+bwd", step), ("sdpa fwd+bwd", sdpa)):
        f(); torch.cuda.synchronize()
        t = time.perf_counter(); n = 3
        for _ in range(n): f()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) / n * 1e3
        fl = 4 * B * H * N * N * D * 0.5 * 3.5
        print("%s N=%d B=%d: %.2f ms, %.1f TFLOP/s" % (name, N, B, ms, fl / ms / 1e9))
PY
timeout 200 python3 /tmp/tm.py 2>&1 | tail -5
