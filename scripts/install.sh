#!/usr/bin/env bash
# Install medpool into the active Python environment, building llama.cpp for this CPU portably.
#
#   scripts/install.sh [EXTRAS]        e.g. scripts/install.sh local,dev   (default: local)
#   scripts/install.sh --rebuild-llama rebuild only llama-cpp-python with the portable flags
#
# Why not a plain `pip install -e '.[local]'`: llama-cpp-python compiles llama.cpp with
# -march=native. On virtual machines whose CPU advertises instructions it then traps on (AMX
# seen here), that build dies with SIGILL or a protection fault in libggml-cpu.so on its first
# prompt. This script builds for the instruction sets the CPU lists instead (AVX/AVX2/FMA/F16C,
# AVX-512 with VNNI/VBMI, AVX-VNNI), never AMX. AVX-512 is kept where present: the two larger
# shipped models read prompts 1.35-1.5x faster with it (bench/README.md, "llama.cpp build"). A CMAKE_ARGS that is
# already set is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${VIRTUAL_ENV:-}" ] && [ "${MEDPOOL_ALLOW_SYSTEM_PIP:-}" != 1 ]; then
    echo "install.sh: no virtual environment is active; run 'python3 -m venv .venv && . .venv/bin/activate' first" >&2
    exit 2
fi

has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }

portable_cmake_args() {
    local args="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    local flag
    for flag in avx avx2 fma f16c; do
        if has "$flag"; then args="$args -DGGML_${flag^^}=ON"; fi
    done
    if has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx512cd; then
        args="$args -DGGML_AVX512=ON"
        if has avx512_vnni; then args="$args -DGGML_AVX512_VNNI=ON"; fi
        if has avx512vbmi; then args="$args -DGGML_AVX512_VBMI=ON"; fi
    fi
    if has avx_vnni; then args="$args -DGGML_AVX_VNNI=ON"; fi
    echo "$args"
}

if [ -z "${CMAKE_ARGS:-}" ] && [ "$(uname -m)" = x86_64 ]; then
    CMAKE_ARGS="$(portable_cmake_args)"
    export CMAKE_ARGS
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"

if [ "${1:-}" = "--rebuild-llama" ]; then
    version="$(python -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
    echo "install.sh: rebuilding llama-cpp-python $version with CMAKE_ARGS=${CMAKE_ARGS:-}"
    exec python -m pip install --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$version"
fi

extras="${1:-local}"
python -m pip install --quiet --upgrade pip
# --no-cache-dir: pip's wheel cache is keyed by the source archive, not by CMAKE_ARGS, so a
# llama.cpp wheel built earlier with -march=native would otherwise be reused as it is.
cache=()
case ",$extras," in *,local,*) cache=(--no-cache-dir) ;; esac
echo "install.sh: pip install -e '.[$extras]'${CMAKE_ARGS:+ with CMAKE_ARGS=$CMAKE_ARGS}"
python -m pip install --quiet "${cache[@]}" -e ".[$extras]"
