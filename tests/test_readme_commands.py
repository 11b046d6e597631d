"""Every command block of README.md and of the docs/*.md pages runs as written, or is marked here
with the reason it cannot.

Each ```bash block (outside the generated CLI reference) is split into commands (``\\``-continued
lines joined, comment lines dropped) and run in order by bash in one temporary folder, with
``seam-repro`` on PATH running this checkout and ``manifests/`` linked in, as a reader of the README
would run them from a clone: README.md first (its journeys make the run folders the pages use, such as
runs/smoke), then the docs pages in name order, all in the same folder. A trailing ``# exit N`` comment is the expected exit status (else 0);
a trailing comment that is a number is a value the output must show.

A command that cannot run offline on CPU in seconds is listed in ``SKIPPED`` (with the reason) or in
``STAND_INS`` (with the reason and the command run in its place, so the commands after it find what
they need). A command of any page in neither list is run, so a new or changed command is tested or
explicitly excused; a listed command that no page has any more fails the test, so the lists cannot
go stale.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def pages() -> list[Path]:
    """README.md, then every docs/*.md page in name order: the files whose commands are run."""
    return [README, *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^```(bash|sh|shell|console)\n(.*?)^```", re.S | re.M)
COMMENT = re.compile(r"\s+#\s+(.*)$")

pytestmark = pytest.mark.slow

ECHO_SMOKE = "seam-repro replay manifests/smoke.json --backend echo --no-fic --out"
SKIPPED: dict[str, str] = {
    "make test": "is this test suite (make test runs pytest over tests/, this file included)",
    ". .venv/bin/activate": "the test puts this checkout's seam-repro on PATH itself",
    "seam-repro fetch": "needs the network (Hugging Face, Google Drive, GitHub)",
    "seam-repro freeze manifests/paper.json -o paper.frozen.json --store-prompts":
        "needs the paper's datasets, which `seam-repro fetch` downloads (network)",
    "seam-repro replay paper.frozen.json --model meta-llama/Meta-Llama-3-8B-Instruct --prompt-path upstream "
    "--out runs/l3-8b": "needs paper.frozen.json (network) and an 8B Hub model (network, a GPU)",
    "seam-repro diff runs/l3-8b --reference paper": "needs runs/l3-8b from the 8B replay above",
    "seam-repro sensitivity runs/noise runs/iid --out report-noise/ --bootstrap 100":
        "needs runs of the decoding-noise and i.i.d. configs the comment above describes; "
        "tests/test_sensitivity.py samples, replays and attributes both end to end",
    "seam-repro view runs/l3-8b runs/mistral other.bundle.json --reference paper --out site/":
        "needs the 8B and Mistral runs above (network, a GPU); the browser test builds a site from an echo run",
    "seam-repro replay manifests/smoke.json --model ./checkpoints/run7 --name \"Run 7 (ours)\" --out runs/run7":
        "needs a local model checkpoint (local folders: tests/test_local_model.py)",
    "seam-repro replay paper.frozen.json --model ./checkpoints/run7 --name \"Run 7 (ours)\" --model-args "
    "dtype=bf16,attn_implementation=sdpa,max_model_len=8192 --out runs/run7-paper":
        "needs paper.frozen.json (network) and a local model checkpoint",
    "seam-repro replay m.json --model ./ckpt --model-args trust_remote_code=true,chat_template=tpl.jinja "
    "--out runs/c": "needs a local model checkpoint and a chat template (tests/test_model_args.py)",
    "seam-repro replay paper.frozen.json --backend openai --model my-model@2025-01-31 --name \"My model (served)\" "
    "--model-args base_url=http://127.0.0.1:8000/v1,concurrency=8 --out runs/served":
        "needs a served model and paper.frozen.json (tests/test_openai_backend.py runs a fake server)",
    "OPENAI_API_KEY=... seam-repro replay paper.frozen.json --backend openai --model gpt-4o-mini-2024-07-18 "
    "--model-args base_url=https://api.openai.com/v1,endpoint=chat --out runs/api": "needs the network and an API key",
    "bash tools/llama-server-venv.sh": "a llama.cpp C++ build (~20 min); .ci/run stage 4 runs it",
    "GGUF=$(.venv/bin/python -c 'from seam_repro.generate.embedded import find_gguf; print(find_gguf())')":
        "part of the llama.cpp server walk-through (.ci/run stage 4, tests/test_llama_server.py)",
    ".venv-server/bin/python -m llama_cpp.server --model \"$GGUF\" --host 127.0.0.1 --port 8080 "
    "--model_alias smollm2 &": "needs .venv-server from tools/llama-server-venv.sh (.ci/run stage 4)",
    "seam-repro replay manifests/zeroscrolls-mini.json --backend openai --model smollm2 --model-args "
    "base_url=http://127.0.0.1:8080/v1 --out runs/llama": "needs the llama.cpp server above (.ci/run stage 4)",
    "pip install 'seam-repro[vllm]'": "needs the network, and vLLM needs a GPU",
    "seam-repro replay paper.frozen.json --backend vllm --model meta-llama/Meta-Llama-3-70B-Instruct --model-args "
    "tensor_parallel_size=8,gpu_memory_utilization=0.9,max_model_len=8192 --out runs/l70": "needs vLLM and 8 GPUs",
    "seam-repro replay paper.frozen.json --backend vllm --model meta-llama/Meta-Llama-3-70B-Instruct --model-args "
    "tensor_parallel_size=8 --shard \"$SLURM_ARRAY_TASK_ID/8\" --out \"runs/l70/s$SLURM_ARRAY_TASK_ID\"":
        "a SLURM array task on 8-GPU nodes with vLLM",
    "seam-repro replay paper.frozen.json --backend vllm --model M --model-args tensor_parallel_size=8,"
    "pipeline_parallel_size=2,distributed_executor_backend=ray --shard \"$SLURM_ARRAY_TASK_ID/4\" "
    "--out \"runs/m/s$SLURM_ARRAY_TASK_ID\"": "a 2-node Ray cluster with vLLM",
    "seam-repro import paper.frozen.json --upstream-dir seam_predictions/ --model "
    "mistralai/Mistral-7B-Instruct-v0.2@<rev> --out runs/m7":
        "needs upstream SEAM's predictions and paper.frozen.json (tests/test_import.py)",
    "seam-repro import paper.frozen.json --jsonl api_outputs.jsonl --model openai/gpt-4o@2024-08-06 --out runs/gpt4o":
        "needs outputs made elsewhere and paper.frozen.json (tests/test_import.py)",
    "make image-cpu": "needs a Docker engine", "make image": "needs a Docker engine",
    "make image-check": "a buildah image build (minutes to tens of minutes); .ci/run stage 5 runs it",
    "make image-check-cuda": "a buildah CUDA image build; .ci/run stage 6 runs it",
    "mkdir -p cache out": "part of the Docker walk-through, which tools/image_check.sh runs inside the image",
    "docker run --rm --network none --user \"$(id -u):$(id -g)\" -v \"$PWD/cache:/cache\" -v \"$PWD/out:/out\" "
    "-e SEAM_REPRO_IMAGE_DIGEST=\"$(docker image inspect --format '{{.Id}}' seam-repro:cpu)\" seam-repro:cpu "
    "replay manifests/smoke.json --out runs/smoke --limit 1": "needs Docker; tools/image_check.sh runs it",
    "docker run --rm --network none seam-repro:cpu verify manifests/smoke.json": "needs Docker; tools/image_check.sh "
                                                                                   "runs it",
    "docker run --rm --gpus all -e HF_TOKEN --user \"$(id -u):$(id -g)\" -v \"$PWD/cache:/cache\" -v "
    "\"$PWD/out:/out\" seam-repro:cuda replay manifests/paper.json --model meta-llama/Meta-Llama-3-8B-Instruct "
    "--out runs/l3": "needs Docker, a GPU and the network",
    "tools/gpu_check.sh gpu-check/": "needs an NVIDIA GPU (tests/test_gpu_check.py rehearses it on CPU)",
    "tools/gpu_check.sh --download-wheels wheels/": "needs the network",
    "SEAM_GPU_WHEELS=wheels/ tools/gpu_check.sh gpu-check/": "needs an NVIDIA GPU and the wheels above",
    "export SEAM_REPRO_SUITES=$PWD PYTHONPATH=$PWD":
        "sets the variables for the commands below it, which need the files docs/adding-a-dataset.md has you "
        "write; tests/test_new_dataset.py builds those files and runs these commands",
    "seam-repro sample config.json -o keywords.json --prompts-dir prompts/":
        "needs the suite, loader, template, config and prompt files of docs/adding-a-dataset.md "
        "(tests/test_new_dataset.py)",
    "seam-repro replay keywords.json --backend echo --out runs/keywords":
        "needs keywords.json from the command above (tests/test_new_dataset.py)",
    "seam-repro score runs/keywords": "needs runs/keywords from the command above (tests/test_new_dataset.py)",
    "seam-repro report runs/l3-8b --reference paper --out report-l3/": "needs runs/l3-8b from the 8B replay above",
}
"""Command (trailing comment left out, whitespace collapsed) -> why it is not run here."""

STAND_INS: dict[str, tuple[str, str]] = {
    "make demo": ("an install plus an embedded-model replay (minutes on CPU; .ci/run stage 3 replays it); the "
                  "echo backend writes the same run folder layout into runs/smoke", f"{ECHO_SMOKE} runs/smoke"),
    "seam-repro replay paper.frozen.json --model my-org/my-model@<commit> --out runs/mine":
        ("needs paper.frozen.json (network) and a Hub model; an echo replay of the smoke manifest gives the "
         "commands after it a run folder", f"{ECHO_SMOKE} runs/mine"),
    "seam-repro replay manifests/igcs-mini.json --out runs/igcs":
        ("an embedded-model replay (.ci/run stage 3 runs it with --limit 1); the echo backend here",
         "seam-repro replay manifests/igcs-mini.json --out runs/igcs --backend echo"),
    "seam-repro replay para.json --out runs/para-emb":
        ("an embedded-model replay of 36 prompts (minutes on CPU); a second echo model gives the sensitivity "
         "command after it a two-model run folder",
         "seam-repro replay para.json --out runs/para-emb --backend echo --name echo-b"),
}
"""Command -> (why it is not run as written, the command run in its place)."""


def _normal(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").split())


def readme_commands(text: str, name: str = "README.md") -> list[tuple[str, str]]:
    """(command, trailing comment) for every command of every shell block of one page (``name``, for
    messages) before its CLI reference."""
    text = text.split("<!-- cli-reference:start -->")[0]
    out = []
    for _, body in FENCE.findall(text):
        current = ""
        for line in body.splitlines():
            if not current and (not line.strip() or line.lstrip().startswith("#")):
                continue
            current = f"{current}\n{line}" if current else line
            if not current.endswith("\\"):
                match = COMMENT.search(current.splitlines()[-1])
                comment = match.group(1).strip() if match else ""
                command = current[: len(current) - len(match.group(0))] if match else current
                out.append((_normal(command), comment))
                current = ""
        assert not current, f"{name}: a shell block ends in a continued line: {current!r}"
    return out


def all_commands() -> list[tuple[str, str, str]]:
    """(page, command, trailing comment) of every page, in the order they are run."""
    return [(page.relative_to(REPO).as_posix(), command, comment) for page in pages()
            for command, comment in readme_commands(page.read_text("utf-8"), page.name)]


def test_pages_are_the_readme_and_the_docs() -> None:
    names = [p.relative_to(REPO).as_posix() for p in pages()]
    assert names[0] == "README.md" and "docs/models.md" in names and "docs/docker.md" in names, names
    ran_somewhere = {page for page, _, _ in all_commands()}
    assert {"README.md", "docs/models.md", "docs/running.md", "docs/data.md"} <= ran_somewhere, ran_somewhere


def test_every_excused_command_is_in_the_readme() -> None:
    commands = {c for _, c, _ in all_commands()}
    stale = sorted((set(SKIPPED) | set(STAND_INS)) - commands)
    assert not stale, f"listed here but in neither README.md nor docs/*.md (update SKIPPED/STAND_INS): {stale}"
    assert not set(SKIPPED) & set(STAND_INS)


def test_extraction_sees_continuations_comments_and_exit_codes() -> None:
    text = ("intro\n```bash\n# a comment line\nseam-repro a \\\n    --b c   # exit 3: why\n\nls  # 70.7\n```\n"
            "```text\nnot a command\n```\n<!-- cli-reference:start -->\n```bash\nignored\n```\n")
    assert readme_commands(text) == [("seam-repro a --b c", "exit 3: why"), ("ls", "70.7")]


@pytest.mark.slow(seconds=70)
def test_readme_commands_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifests").symlink_to(REPO / "manifests")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "seam-repro"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m seam_repro "$@"\n', "utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO),
           "SEAM_REPRO_CACHE": str(tmp_path / "cache")}
    env.pop("SEAM_REPRO_SEEDS", None)
    ran = 0
    for page, command, comment in all_commands():
        if command in SKIPPED:
            continue
        if command in STAND_INS:
            command, comment = STAND_INS[command][1], ""
        want = int(m.group(1)) if (m := re.match(r"exit (\d+)", comment)) else 0
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == want, (f"{page} command `{command}` exited {done.returncode}, expected {want}:\n"
                                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        if re.fullmatch(r"-?\d+(\.\d+)?", comment):
            assert comment in done.stdout, f"{page} command `{command}`: expected {comment} in {done.stdout!r}"
        ran += 1
    assert ran >= 10
