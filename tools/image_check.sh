#!/usr/bin/env bash
# Build docker/Dockerfile.cpu (`tools/image_check.sh`, `make image-check`) or docker/Dockerfile.cuda
# (`tools/image_check.sh cuda`, `make image-check-cuda`) without a Docker engine (buildah + podman, runc)
# and check the kit inside the image with no network. Called by those make targets and `.ci/run`; safe
# to rerun (every step is cached or idempotent). Stages, each timed:
#   tools     buildah, podman, runc, mmdebstrap (installed with apt-get when missing and run as root)
#   base      a stand-in for the pinned python:3.11-slim base (both images use it), which cannot be
#             pulled here (Docker Hub is unreachable): `mmdebstrap --variant=minbase` Debian bookworm + python3.11, imported with
#             `podman import`, cached under $SEAM_IMAGE_STATE keyed by its inputs, and substituted with
#             `buildah build --from`. This tests the Dockerfile's steps and the hash locks, not the base.
#   build     buildah build of docker/Dockerfile.cpu; the host CA bundle is bind-mounted over the same
#             path for the TLS-intercepting proxy, and torch's CPU wheel comes from the local wheel
#             folder pip already uses (checked against the lock's sha256) when there is one
#             (cuda: torch's CUDA build and its nvidia-* CUDA 13 libraries come from PyPI, as locked)
#   mounts    no build mount left a file in the image
#   cuda      (cuda only) torch, transformers, accelerate and bitsandbytes import, torch.version.cuda is
#             the locked CUDA (from nvidia-cuda-runtime's version in the lock), and with no GPU torch
#             says so instead of failing. No GPU runs here: the CUDA kernels, the driver handshake and
#             NVIDIA_REQUIRE_CUDA are the GPU machine's part (tools/gpu_check.sh, README "Performance")
#   inside    with --network none: --version; verify every frozen manifest; echo replay + score + report;
#             paper.json fails in one line naming the offline route; the README's docker commands as
#             written (an embedded-model smoke replay with --limit 1; for cuda the same replay on the
#             CUDA image's CPU, as the README's commands name the CPU image)
#   identity  those embedded predictions are byte-identical to the same replay outside the image, and
#             the run's environment fingerprint records the image ID
#
# Environment: SEAM_IMAGE_STATE (podman storage, cached base, configs; default /var/tmp/seam-repro-image),
# SEAM_REPRO_BIN (the kit outside the image; default .venv/bin/seam-repro), SEAM_IMAGE_REFERENCE_RUN (a
# finished `replay manifests/smoke.json --limit 1` run dir to compare with instead of replaying again),
# SEAM_IMAGE_KEEP=1 (keep the scratch folder).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD

VARIANT=${1:-cpu}
case "$VARIANT" in cpu|cuda) ;; *) echo "usage: tools/image_check.sh [cpu|cuda] [--inputs-sha256]" >&2; exit 2 ;; esac
DOCKERFILE=docker/Dockerfile.$VARIANT
LOCK=docker/requirements-$VARIANT.lock
# What decides the image and this check: a change to any of them means the image must be checked again
# (.ci/run runs the CUDA check only then; docker/image-check-cuda.json records the last passing one).
INPUTS=("$DOCKERFILE" docker/requirements-build.lock "$LOCK" docker/requirements-model.lock tools/image_check.sh)
inputs_sha256() { sha256sum "${INPUTS[@]}" | sha256sum | cut -c1-64; }
if [ "${2:-}" = "--inputs-sha256" ]; then inputs_sha256; exit 0; fi
RECORD=docker/image-check-$VARIANT.json
STATE=${SEAM_IMAGE_STATE:-/var/tmp/seam-repro-image}
IMAGE=localhost/seam-repro:$VARIANT
BIN=${SEAM_REPRO_BIN:-$REPO/.venv/bin/seam-repro}
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
BASE_PACKAGES=python3,python3-venv,ca-certificates,python-is-python3
HOST_CA=/etc/ssl/certs/ca-certificates.crt
UID_IN_IMAGE=10001  # the Dockerfile's USER

started=$(date +%s)
last=$started
stage() {
  local now
  now=$(date +%s)
  printf '== image-check: %s (previous stage %ss, total %ss)\n' "$1" "$((now - last))" "$((now - started))"
  last=$now
}
fail() { echo "image-check: $*" >&2; exit 1; }

stage "tools"
missing=()
for tool in buildah podman runc mmdebstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    fail "missing ${missing[*]}; install buildah podman runc mmdebstrap (Debian/Ubuntu: apt-get install)"
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah podman runc mmdebstrap \
    >/dev/null
fi
[ -x "$BIN" ] || fail "no kit at $BIN to compare with (run \`make install\` or set SEAM_REPRO_BIN)"

# Storage and configuration live outside the repository. crun fails on this host's mixed cgroup
# setup and podman's default ulimits exceed what the sandbox allows: runc and explicit ulimits.
mkdir -p "$STATE"
cat > "$STATE/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
cat > "$STATE/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$STATE/storage"
runroot = "$STATE/run"
EOF
export CONTAINERS_CONF=$STATE/containers.conf CONTAINERS_STORAGE_CONF=$STATE/storage.conf

stage "base (stand-in for the pinned python:3.11-slim)"
recipe="mmdebstrap --variant=minbase --include=$BASE_PACKAGES $SUITE $MIRROR; podman import --change ENV=LANG=C.UTF-8"
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
BASE=localhost/seam-repro-standin:$key
tarball=$STATE/standin-$key.tar
if podman image exists "$BASE"; then
  echo "cached: $BASE"
else
  if [ ! -f "$tarball" ] || [ ! -s "$tarball" ]; then
    rm -rf "$tarball" "$tarball.part"
    mmdebstrap --quiet --format=tar --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$tarball.part" "$MIRROR"
    mv "$tarball.part" "$tarball"
  fi
  podman import --quiet --change ENV=LANG=C.UTF-8 "$tarball" "$BASE" >/dev/null
  echo "imported: $BASE from $tarball"
fi

stage "build $DOCKERFILE"
# COPY keeps file modes and the image runs as a non-root user: a file only its owner can read (e.g.
# written through mkstemp, mode 0600) would be unreadable inside. git checkouts are not affected.
unreadable=$(find pyproject.toml README.md seam_repro manifests docker -name __pycache__ -prune -o ! -perm -o=r -print)
[ -z "$unreadable" ] || fail "not world-readable, so not readable by the image's user (chmod a+r): $unreadable"
build_args=(--build-arg "SEAM_REPRO_SOURCE_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)")
mounts=()
if [ -s "$HOST_CA" ]; then  # same path as in the base, so nothing is left behind in the image
  mounts+=(-v "$HOST_CA:$HOST_CA:ro")
  build_args+=(--build-arg "PIP_CERT=$HOST_CA")
fi
# torch: the wheel pip already uses on this machine, if its sha256 is the one locked (for cpu; the
# CUDA build's wheels come from PyPI, or from PIP_FIND_LINKS given to this script, checked likewise).
torch_req=$(sed -n 's/^torch==\([^ ]*\) .*/\1/p' "$LOCK")
# pip's own view of its wheel folders: PIP_FIND_LINKS, then `pip config` (e.g. /etc/xdg/pip/pip.conf).
PY=$(dirname "$BIN")/python
[ -x "$PY" ] || PY=python3
wheel_dirs=$("$PY" - <<'EOF'
import os, subprocess, sys
dirs = os.environ.get("PIP_FIND_LINKS", "").split()
done = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True, text=True)
dirs += done.stdout.split() if done.returncode == 0 else []
print("\n".join(d for d in dict.fromkeys(dirs) if os.path.isdir(d)))
EOF
)
wheel_dir=''
for d in $wheel_dirs; do
  for w in "$d"/torch-"$torch_req"-cp311-*.whl; do
    [ -f "$w" ] || continue
    sha=$(sha256sum "$w" | cut -d' ' -f1)
    if grep -q "sha256:$sha" "$LOCK"; then wheel_dir=$d; echo "torch: $w (sha256 as locked)"; fi
  done
done
if [ -n "$wheel_dir" ]; then  # /mnt exists, empty, in the base: the mount leaves nothing behind
  mounts+=(-v "$wheel_dir:/mnt:ro")
  build_args+=(--build-arg PIP_FIND_LINKS=/mnt)
  [ "$VARIANT" = cpu ] && build_args+=(--build-arg PIP_EXTRA_INDEX_URL=)
else
  echo "torch: no local wheel with the locked sha256; from the Dockerfile's default index"
fi
build_started=$(date +%s)
build_inputs=$(inputs_sha256)
buildah build --quiet --layers --format docker --isolation chroot --from "$BASE" -f "$DOCKERFILE" \
  -t "$IMAGE" "${build_args[@]}" "${mounts[@]}" .
IMAGE_ID=sha256:$(podman image inspect --format '{{.Id}}' "$IMAGE")
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
build_seconds=$(( $(date +%s) - build_started ))
echo "image: $IMAGE $IMAGE_ID ($size bytes, $((size / 1000000)) MB; build $build_seconds s)"

stage "mounts left nothing in the image"
in_base() { podman run --rm --network none --user 0 --entrypoint /bin/sh "$BASE" -c "$1"; }
in_image() { podman run --rm --network none --user 0 --entrypoint /bin/sh "$IMAGE" -c "$1"; }
probe='sha256sum /etc/ssl/certs/ca-certificates.crt; ls -A /mnt; find / -xdev \( -name "torch-*.whl" -o -path /tmp/locks \) -print'
[ "$(in_image "$probe")" = "$(in_base "$probe")" ] \
  || fail "a build mount left a trace: $(diff <(in_base "$probe") <(in_image "$probe") || true)"
echo "CA bundle as in the base, /mnt empty, no wheel or lock copies"

WORK=$(mktemp -d /var/tmp/seam-image-check.XXXXXX)
if [ "${SEAM_IMAGE_KEEP:-0}" = 1 ]; then echo "scratch: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
mkdir -p "$WORK/out" "$WORK/cache"
chown "$UID_IN_IMAGE:$UID_IN_IMAGE" "$WORK/out" "$WORK/cache" 2>/dev/null || chmod 777 "$WORK/out" "$WORK/cache"
# Under cgroup v1 (this host) a container's cgroup weighs as much as ONE process at the root, so on a
# busy machine its two torch threads got a fraction of what the same threads get outside (measured:
# the embedded smoke replay ran ~2x slower inside). Weighing it as one process per core restores
# the outside share; it changes scheduling only, never results.
FAIR_SHARE=--cpu-shares=$((1024 * $(nproc)))
run_in() {  # as the image's own non-root user, no network, image ID passed as `docker run -e` would
  podman run --rm --network none "$FAIR_SHARE" -e SEAM_REPRO_IMAGE_DIGEST="$IMAGE_ID" \
    -v "$WORK/out:/out" -v "$WORK/cache:/cache" "$IMAGE" "$@"
}

if [ "$VARIANT" = cuda ]; then
  stage "cuda: the locked CUDA build of torch and the GPU libraries import"
  cuda_locked=$(sed -n 's/^nvidia-cuda-runtime==\([0-9]*\.[0-9]*\).*/\1/p' "$LOCK")
  [ -n "$cuda_locked" ] || fail "$LOCK pins no nvidia-cuda-runtime"
  podman run --rm --network none --entrypoint python "$IMAGE" -c "
import torch, transformers, accelerate, bitsandbytes
assert torch.version.cuda == '$cuda_locked', f'torch.version.cuda {torch.version.cuda!r}, lock $cuda_locked'
assert not torch.cuda.is_available()  # no GPU here: torch must say so, not fail
print(f'torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}, '
      f'accelerate {accelerate.__version__}, bitsandbytes {bitsandbytes.__version__}; no GPU visible: ok')"
fi

stage "inside: --version"
run_in --version

stage "inside: verify every frozen manifest"
frozen=$(python3 -c 'import glob, json
print(" ".join(p for p in sorted(glob.glob("manifests/*.json")) if json.load(open(p, encoding="utf-8")).get("frozen") is True))')
[ -n "$frozen" ] || fail "no frozen manifests under manifests/"
# shellcheck disable=SC2086  # one argument per manifest
run_in verify $frozen

stage "inside: echo replay + score + report"
run_in replay manifests/smoke.json --backend echo --out runs/echo | tail -n 3
run_in report runs/echo --out runs/echo-report | tail -n 2
[ -n "$(find "$WORK/out/echo/scores" -name summary.json -size +0)" ] || fail "echo replay wrote no scores"
[ -n "$(find "$WORK/out/echo-report" -type f -size +0)" ] || fail "report wrote nothing"

stage "inside: paper.json offline names the offline route"
set +e
run_in replay manifests/paper.json --out runs/paper > "$WORK/paper.out" 2> "$WORK/paper.err"
code=$?
set -e
cat "$WORK/paper.err"
if [ "$code" -ne 2 ] || [ "$(wc -l < "$WORK/paper.err")" -ne 1 ] || ! grep -q -- '--data-dir' "$WORK/paper.err"; then
  fail "replay manifests/paper.json without network: exit $code, expected 2 and one line naming --data-dir"
fi

stage "inside: the README's docker commands, as written (seam-repro:$VARIANT)"
mkdir -p "$WORK/readme"
python3 - "$REPO/README.md" > "$WORK/readme/commands.sh" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"<!-- tested by tools/image_check.sh -->\s*```bash\n(.*?)```", text, re.S)
sys.exit("README.md: no ```bash block after '<!-- tested by tools/image_check.sh -->'") if m is None else print(m.group(1))
EOF
# the README's commands name the CPU image; the CUDA image takes the same commands (README "Docker")
sed -i "s/seam-repro:cpu/seam-repro:$VARIANT/g" "$WORK/readme/commands.sh"
cat "$WORK/readme/commands.sh"
# `docker` is podman here (a function, so a Docker client on PATH without an engine is not used);
# `run` gets the fair CPU share above, nothing else is added to the README's commands.
# shellcheck disable=SC2317  # called by the README commands
docker() { if [ "$1" = run ]; then shift; podman run "$FAIR_SHARE" "$@"; else podman "$@"; fi; }
export -f docker
export FAIR_SHARE
(cd "$WORK/readme" && bash -euo pipefail commands.sh)

stage "identity: embedded predictions inside = outside, fingerprint has the image ID"
inside=$WORK/readme/out/smoke
python3 - "$inside/run.json" "$IMAGE_ID" "$VARIANT" <<'EOF'
import json, sys
fp = json.load(open(sys.argv[1], encoding="utf-8"))["fingerprint"]
got = fp.get("image_digest") or ""
assert got and sys.argv[2].endswith(got.removeprefix("sha256:")), f"fingerprint image_digest {got!r}, image {sys.argv[2]}"
assert fp.get("image_variant") == sys.argv[3], fp
print(f"fingerprint: image_digest {got}, variant {fp['image_variant']}, source_commit {fp.get('source_commit')}")
EOF
reference=${SEAM_IMAGE_REFERENCE_RUN:-}
if [ -z "$reference" ]; then
  reference=$WORK/outside
  "$BIN" replay manifests/smoke.json --out "$reference" --limit 1 --no-score | tail -n 2
fi
n=$(find "$inside/predictions" -name 'run_*.jsonl' | wc -l)
[ "$n" -gt 0 ] || fail "no predictions inside the image"
diff -r "$reference/predictions" "$inside/predictions" >/dev/null \
  || fail "predictions differ between $reference/predictions and the image's $inside/predictions"
echo "$n prediction files byte-identical inside and outside the image"

stage "done"
# The record of this passing check (README "Docker" quotes it; .ci/run compares inputs_sha256).
[ "$VARIANT" = cuda ] || exit 0
python3 - "$RECORD" <<EOF
import json, sys
json.dump({"variant": "$VARIANT", "inputs_sha256": "$build_inputs", "image_bytes": $size,
           "build_seconds": $build_seconds, "check_seconds": $(( $(date +%s) - started )),
           "checked": "$(date -u +%Y-%m-%d)", "cores": $(nproc), "base": "stand-in: mmdebstrap $SUITE + python3",
           "source_commit": "$(git rev-parse HEAD 2>/dev/null || echo unknown)"},
          open(sys.argv[1], "w", encoding="utf-8"), indent=1)
open(sys.argv[1], "a", encoding="utf-8").write("\n")
EOF
echo "recorded: $RECORD"
