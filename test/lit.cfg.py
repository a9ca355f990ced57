# lit configuration for attn: tools from the build, FileCheck from LLVM 22.
import os
import shutil
import subprocess

import lit.formats

config.name = "attn"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "CMakeLists.txt",
                   "errors.test.mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

bin_dir = os.path.join(config.attn_obj_root, "bin")
lib_dir = os.path.join(config.attn_obj_root, "lib")
config.substitutions.append(("%attn_bin", bin_dir))
config.substitutions.append(("%attn_lib", lib_dir))
config.substitutions.append(("%attn_src", config.attn_src_root))
# Stock mlir-opt: IRDL-level diagnostics are cross-checked against it (2.7).
config.substitutions.append(
    ("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
# ATTN_CPU_PORTABLE: scripts/test.sh runs the CPU suites a second time with
# the JIT's native bf16/f16 conversions off (lib/Target/attn_jit.h).
for var in ("CUDA_HOME", "CUDA_ROOT", "CUDA_PATH", "HOME", "ATTN_CPU_PORTABLE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# ptxas: lets tests assemble the PTX attn emits (the CUDA toolkit).
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
ptxas = shutil.which("ptxas") or (os.path.join(cuda_home, "bin", "ptxas")
                                  if os.path.exists(os.path.join(cuda_home, "bin", "ptxas")) else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# cuda: a GPU and its driver are present; GPU-executing tests REQUIRE it.
def has_gpu():
    if os.environ.get("ATTN_TEST_NO_GPU"):
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False

if has_gpu():
    config.available_features.add("cuda")
    # hopper: a GPU of compute capability 9.0 (the wgmma/TMA kernels).
    try:
        caps = subprocess.run([shutil.which("nvidia-smi"), "--query-gpu=compute_cap",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.split()
        if "9.0" in caps:
            config.available_features.add("hopper")
    except (OSError, subprocess.SubprocessError):
        pass
    # gpu2: two GPUs or more, for the communicator tests (one nvidia-smi -L).
    try:
        listed = subprocess.run([shutil.which("nvidia-smi"), "-L"], capture_output=True,
                                text=True, timeout=20).stdout
        if sum(line.startswith("GPU ") for line in listed.splitlines()) >= 2:
            config.available_features.add("gpu2")
    except (OSError, subprocess.SubprocessError):
        pass

# --- libattn and the Python binding (test/CAPI, test/python)
import sys
config.substitutions.append(("%attn_obj", config.attn_obj_root))
# The Python of the tests, chosen as scripts/bootstrap.sh chooses it:
# $ATTN_PYTHON, else the first of python3 on PATH and /usr/bin/python3 that
# imports torch (Debian's python3-torch is for /usr/bin/python3; PATH's
# python3 may be a pyenv shim or a venv, as on the GPU machine), else
# /usr/bin/python3, else the Python that runs lit. %attn_python adds the
# binding of the source tree and the libraries of the build.
def find_python():
    if os.environ.get("ATTN_PYTHON"):
        return os.environ["ATTN_PYTHON"]
    for candidate in (shutil.which("python3"), "/usr/bin/python3"):
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        try:
            found = subprocess.run([candidate, "-c", "import sys, torch; print(sys.executable)"],
                                   capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            continue
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

python = find_python()
config.substitutions.append(("%attn_python", "env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=%s ATTN_LIBRARY_DIR=%s %s" % (
    os.path.join(config.attn_src_root, "python"), lib_dir, python)))
config.substitutions.append(("%python", python))

def python_has(module):
    try:
        return subprocess.run([python, "-c", "import " + module], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False

if python_has("torch"):
    config.available_features.add("torch")
    # torch-custom-op: torch.library.custom_op and torch.compile (torch 2.4
    # and later; Debian's 1.13 has neither): attn's custom ops are tested there.
    if python_has("torch; assert hasattr(torch.library, 'custom_op') and "
                  "hasattr(torch, 'compile')"):
        config.available_features.add("torch-custom-op")
    # transformers: Hugging Face transformers with its attention and mask
    # interfaces (the GPU machine's 5.x; not on CI's CPU machines), for
    # attn.hf on real model code.
    if python_has("transformers.masking_utils; from transformers import AttentionInterface"):
        config.available_features.add("transformers")
# libfuzzer: the libFuzzer targets of test/fuzz were built (a clang build,
# test/fuzz/build.sh); test/fuzz/*.test REQUIRE it.
if all(os.path.exists(os.path.join(bin_dir, t))
       for t in ("attn-fuzz-parse", "attn-fuzz-compile", "attnrt-fuzz-manifest")):
    config.available_features.add("libfuzzer")
if shutil.which("pkg-config"):
    config.available_features.add("pkg-config")
