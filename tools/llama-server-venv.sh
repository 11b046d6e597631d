#!/usr/bin/env bash
# Create .venv-server: llama-cpp-python's OpenAI-compatible server, for the openai backend's
# end-to-end test (tests/test_llama_server.py) and for serving the embedded SmolLM2 GGUF by hand:
#   .venv-server/bin/python -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port 8080 --model_alias smollm2
# Built from the PyPI sdist (measured ~20 min with nice on 2 cores shared with other jobs, ~4 min reported
# on idle ones); pip's wheel cache makes a later install take ~35 s.
# A native build (-march=native) crashed at the first decode on the CI machine's CPU, so the CPU
# features are fixed: AVX2 on, AVX-512 and AMX off. Kept out of .venv so the kit's venv stays lean.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${1:-.venv-server}
LLAMA_CPP_PYTHON_VERSION=0.3.36
PYTHON=${PYTHON:-python3}
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
if "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('llama-cpp-python') != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null \
   && "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "$VENV: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION already installed"
  exit 0
fi
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
  "$VENV/bin/python" -m pip install --no-binary llama-cpp-python "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
