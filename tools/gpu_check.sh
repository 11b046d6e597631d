#!/usr/bin/env bash
# The hf backend on one NVIDIA GPU, end to end, in one command (docs/performance.md and docs/limitations.md).
#
#   tools/gpu_check.sh [OUT_DIR] [-- gpu_check.py options]      (default OUT_DIR: ./gpu-check)
#
# Writes OUT_DIR/gpu_check.json and OUT_DIR/gpu_check.md (after every section, so a run cut short still
# reports) and OUT_DIR/work/ (the models it built, every replay's run folder and log).
#
# It installs nothing into the Python it is given. It makes an overlay environment: a venv whose
# site-packages come first and which then reads the given Python's own site-packages, so the machine's
# torch/transformers/accelerate (whatever versions it holds, recorded and checked against the kit's
# declared ranges) are used as they are and only the kit and what is missing go into the overlay.
#
# Environment:
#   PYTHON            the Python that holds torch/transformers/accelerate (default: python3)
#   SEAM_GPU_WHEELS   a folder of wheels for an offline machine: pip then installs with --no-index from it.
#                     Make it on a connected machine with `tools/gpu_check.sh --download-wheels DIR`
#                     (for CPython 3.12 on x86-64 Linux; PY_VERSION=3.11 etc. for another); ~49 MB, 43 of it
#                     bitsandbytes.
#
# Needs: one CUDA GPU, ~2 GB of disk, no network (with SEAM_GPU_WHEELS). Took 434 s on an H200, install
# included; `-- --device cpu --small` rehearses it on CPU (tests/test_gpu_check.py does).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${PYTHON:-python3}

# The small dependencies a GPU image with torch/transformers/accelerate usually lacks, at the versions of
# docker/requirements-cuda.lock. rouge-score publishes only an sdist: it is built into a wheel here.
download_wheels() {
  local dir=$1 ver=${PY_VERSION:-3.12}
  local pins=(bitsandbytes rapidfuzz jsonschema jsonschema-specifications referencing rpds-py fastjsonschema
              nltk defusedxml unidecode)
  local specs=() name
  for name in "${pins[@]}"; do
    specs+=("$(grep -m1 -i "^${name}==" "$repo/docker/requirements-cuda.lock" | sed 's/ .*//')")
  done
  mkdir -p "$dir"
  "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$ver" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dir" "${specs[@]}"
  "$py" -m pip wheel --quiet --no-deps -w "$dir" \
    "$(grep -m1 '^rouge-score==' "$repo/docker/requirements-cuda.lock" | sed 's/ .*//')"
  ls -l "$dir"
}

if [ "${1:-}" = "--download-wheels" ]; then
  [ -n "${2:-}" ] || { echo "usage: tools/gpu_check.sh --download-wheels DIR" >&2; exit 2; }
  download_wheels "$2"
  exit 0
fi

out=${1:-gpu-check}
shift || true
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$(date +%s)
stage() { printf '== gpu_check: %s (%ss)\n' "$1" "$(( $(date +%s) - started ))"; }

stage "overlay environment over $("$py" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$py" -c 'import torch, transformers, accelerate' 2>/dev/null || {
  echo "gpu_check: $py lacks torch, transformers or accelerate; set PYTHON to the Python that holds them" >&2
  exit 2
}
venv="$out/venv"
rm -rf "$venv"
"$py" -m venv --without-pip "$venv"
overlay_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# addsitedir (not a bare path line) so the base's own .pth files are processed too, as in the base itself
"$py" - "$overlay_site/_seam_gpu_check_base.pth" <<'EOF'
import sys
dirs = [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    fh.write("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")
EOF
"$venv/bin/python" -c 'import torch, transformers, accelerate, pip' || {
  echo "gpu_check: the overlay does not see the base Python's packages (or pip); see $overlay_site" >&2
  exit 2
}

stage "install the kit (and what the base lacks) into the overlay"
pip_args=(--disable-pip-version-check --no-input --quiet)
if [ -n "${SEAM_GPU_WHEELS:-}" ]; then
  pip_args+=(--no-index --find-links "$SEAM_GPU_WHEELS" --no-build-isolation)
fi
if ! "$venv/bin/python" -m pip install "${pip_args[@]}" "$repo[quant]"; then
  echo "gpu_check: bitsandbytes could not be installed: the 4-bit/8-bit runs are skipped and say so" >&2
  "$venv/bin/python" -m pip install "${pip_args[@]}" "$repo"
fi
"$venv/bin/python" -m seam_repro --version

stage "check"
cd "$repo"
set +e
PYTHONUNBUFFERED=1 "$venv/bin/python" "$repo/tools/gpu_check.py" --out "$out" "$@"
code=$?
set -e
stage "done (exit $code): $out/gpu_check.md"
exit $code
