#!/usr/bin/env bash
# Builds llama.cpp's C++ `llama-server` (continuous batching, `--parallel N` slots) from the
# llama.cpp sources vendored in llama-cpp-python's sdist: the same llama.cpp as the `llamacpp`
# extra that benchmarks/engine.py compares with. The wheel has no server binary, and nothing is
# fetched but the sdist, through pip. About 10 minutes on 2 cores.
#
#     benchmarks/servebench/build_llama_server.sh [OUT_DIR]      # default .cache/llama-server
#
# Prints the binary's path; benchmarks/serve.py finds it there (or take --llama-server PATH).
set -euo pipefail

VERSION=0.3.36
OUT=$(realpath -m "${1:-.cache/llama-server}")
PIP=${PIP:-.venv/bin/pip}
mkdir -p "$OUT/src"

if [ ! -d "$OUT/src/llama_cpp_python-$VERSION" ]; then
    "$PIP" download --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$OUT/src" >&2
    tar xzf "$OUT/src/llama_cpp_python-$VERSION.tar.gz" -C "$OUT/src"
fi

# No web UI (it would be downloaded), no HTTPS, no tests: the server and its OpenAI API only.
# Native instruction sets but not ggml's AMX-INT8 kernel: it segfaults on Q4_1 on AMX CPUs
# (see .ci/llama-cpp-wheel, which builds the Python package the same way).
NO_AMX=()
if [ "$(uname -m)" = x86_64 ]; then
    NO_AMX=(-DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8)
fi
cmake -S "$OUT/src/llama_cpp_python-$VERSION/vendor/llama.cpp" -B "$OUT/build" "${NO_AMX[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >&2
cmake --build "$OUT/build" --target llama-server -j "$(nproc)" >&2
cp "$OUT/build/bin/llama-server" "$OUT/llama-server"
echo "$OUT/llama-server"
