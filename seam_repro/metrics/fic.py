"""FuseReviews (fusion in context) faithfulness, coverage and F1, computed as PyPI
``fic-evaluation`` 0.1.0 does (``HighlightsFaithfulnessEvaluator``, ``HighlightsCoverageEvaluator``),
combined as upstream SEAM ``scripts/evaluation/statistical_analysis.py`` does
(``scipy.stats.hmean`` per instance), reported x100.

* Faithfulness: each spaCy sentence of the prediction is a hypothesis, the concatenated highlights
  the premise, in flan-t5's zero-shot NLI prompt. Greedy decoding for as many steps as the longest
  of the tokenizations of "Entailment"/"Contradiction"/"Neutral"; the sentence score is the product
  over step i of softmax(step-i logits)[i-th token of "Entailment"]. Steps after a sequence emitted
  EOS are fed the pad token, as HF ``generate`` does for finished rows of a batch (upstream would
  raise IndexError when a whole batch finished early; we return the value a longer batch would
  have given). Instance score = mean over sentences.
* Coverage: input ``"{alignment} <extra_id_4> {prediction}"`` per review-side alignment, first
  decoder step, softmax probability of the first token of ``"yes"``; mean over alignments.
* Both run in float32 (the fic-evaluation default under transformers 4.34); attention masks are
  derived from pad ids, as ``generate`` did for upstream's bare ``input_ids``.

Models come from ``data/metric_versions.json`` (id + revision), overridable with
``SEAM_REPRO_FIC_{FAITHFULNESS,COVERAGE}_{MODEL,REVISION}`` (a local directory works as MODEL).
spaCy ``en_core_web_sm`` is not on PyPI: when it is not installed the splitter falls back to
``spacy.blank("en")`` + ``sentencizer`` and the metric version says so (not parity).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seam_repro.errors import MissingDataError, PrerequisiteError

PINS_FILE = Path(__file__).resolve().parents[1] / "data" / "metric_versions.json"
INSTALL_HINT = "pip install 'seam-repro[inference]' spacy"
_NLI_TEMPLATE = (
    "### Instruction: Read the following and determine if the hypothesis can be inferred from the premise. \n"
    " Options: Entailment, Contradiction, or Neutral \n\n ### Input: \n Premise: {premise}\n"
    " Hypothesis: {hypothesis} \n\n ### Response (choose only one of the options from above):"
)
SUMMARY_DELIM = "<extra_id_4>"


def nli_prompt(premise: str, hypothesis: str) -> str:
    """fic-evaluation's ``get_prompt``: its indented f-string, stripped, runs of spaces collapsed
    (also inside premise and hypothesis)."""
    return re.sub(" +", " ", _NLI_TEMPLATE.format(premise=premise, hypothesis=hypothesis).strip())


@dataclass(frozen=True)
class ModelPin:
    id: str
    revision: str | None
    max_length: int | None = None


def load_pins(path: Path = PINS_FILE) -> tuple[ModelPin, ModelPin]:
    """(faithfulness, coverage) pins from the data file, with environment overrides applied."""
    fic = json.loads(path.read_text(encoding="utf-8"))["fic"]
    pins = []
    for key, env in (("faithfulness_model", "FAITHFULNESS"), ("coverage_model", "COVERAGE")):
        entry = fic[key]
        model_id = os.environ.get(f"SEAM_REPRO_FIC_{env}_MODEL") or entry["id"]
        revision = (os.environ.get(f"SEAM_REPRO_FIC_{env}_REVISION")
                    or (entry["revision"] if model_id == entry["id"] else None))
        pins.append(ModelPin(model_id, revision, entry.get("max_length")))
    return pins[0], pins[1]


def _hub_cache() -> Path:
    """The Hugging Face hub cache as the environment names it now (huggingface_hub reads it once, at import)."""
    env = os.environ
    if cache := env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(cache).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def check_available(pins: tuple[ModelPin, ModelPin], allow_download: bool = False) -> None:
    """Raise when the FIC models cannot be loaded, decided without importing torch, transformers or
    spaCy (seconds of start-up that scoring a run without them should not pay).

    Only what is certain is decided here: a missing package, or a pinned Hub model absent from the
    local cache when nothing may be downloaded. Everything else is left to ``_load``'s errors."""
    from importlib.util import find_spec

    missing = [name for name in ("torch", "transformers", "spacy", "huggingface_hub") if find_spec(name) is None]
    if missing:
        raise PrerequisiteError(f"FIC scoring needs {', '.join(missing)}; run: {INSTALL_HINT}")
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    if allow_download and not offline:
        return
    from huggingface_hub import try_to_load_from_cache

    for pin, role in zip(pins, ("faithfulness", "coverage"), strict=True):
        if Path(pin.id).is_dir() or pin.revision is None:  # a local folder, or _load's "unpinned" error
            continue
        if not isinstance(try_to_load_from_cache(pin.id, "config.json", cache_dir=_hub_cache(), revision=pin.revision), str):
            how = "offline" if allow_download else "pass --fic-download to fetch it"
            raise MissingDataError(f"FIC {role} model {pin.id}@{pin.revision} is not available "
                                   f"(not in the local cache; {how})")


def _load(pin: ModelPin, role: str, allow_download: bool = False, **tok_kwargs: Any) -> tuple[Any, Any]:
    """Tokenizer and seq2seq model for one pin; clear errors when offline or unpinned.

    Without ``allow_download`` only the local Hugging Face cache is read: flan-t5-xxl is ~45 GB, so
    fetching it is an explicit choice (``--fic-download``), never a side effect of scoring.
    """
    try:
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    except ImportError as exc:
        raise PrerequisiteError(f"FIC {role} scoring needs torch and transformers ({exc}); run: {INSTALL_HINT}") from exc
    local = Path(pin.id).is_dir()
    if not local and pin.revision is None:
        raise MissingDataError(
            f"FIC {role} model {pin.id} has no pinned revision in {PINS_FILE.name}; "
            f"set SEAM_REPRO_FIC_{role.upper()}_REVISION=<40-hex commit> after checking it on the Hub"
        )
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    kwargs: dict[str, Any] = {} if local else {"revision": pin.revision}
    if offline or (not local and not allow_download):
        kwargs["local_files_only"] = True
    try:
        tokenizer = AutoTokenizer.from_pretrained(pin.id, **kwargs, **tok_kwargs)
        model = AutoModelForSeq2SeqLM.from_pretrained(pin.id, dtype=torch.float32, **kwargs)
    except Exception as exc:  # hub/network/file errors come in many classes; all mean "not available"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MissingDataError(
            f"FIC {role} model {pin.id}@{pin.revision or 'local'} is not available "
            f"({'offline or not cached' if allow_download else 'not in the local cache; pass --fic-download to fetch it'}): "
            f"{first_line}"
        ) from exc
    if torch.cuda.is_available():  # flan-t5-xxl is impractical on CPU
        model = model.to("cuda")
    model.eval()
    return tokenizer, model


def sentence_splitter() -> tuple[Any, str]:
    """spaCy pipeline used to split predictions and its name (recorded in the metric version)."""
    try:
        import spacy
    except ImportError as exc:
        raise PrerequisiteError(f"FIC faithfulness needs spaCy; run: {INSTALL_HINT}") from exc
    try:
        nlp = spacy.load("en_core_web_sm")
        return nlp, f"en_core_web_sm-{nlp.meta.get('version', '?')}"
    except OSError:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp, f"spacy-{spacy.__version__}-blank-en-sentencizer"


@dataclass(frozen=True)
class FicResult:
    faithfulness: float | None
    coverage: float | None
    f1: float | None
    reason: str | None = None

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"faithfulness": self.faithfulness, "coverage": self.coverage}
        if self.reason:
            out["reason"] = self.reason
        return out


def hmean_100(faithfulness: float, coverage: float) -> float:
    """Upstream's combination: ``scipy.stats.hmean([faithfulness, coverage])``, x100."""
    from scipy.stats import hmean

    return float(hmean([faithfulness, coverage])) * 100


def _mean(values: list[float]) -> float:
    """Mean in float32, as fic-evaluation's ``torch.mean`` of the per-item scores."""
    import torch

    return float(torch.mean(torch.tensor(values, dtype=torch.float32)))


class FicScorer:
    """Holds both models and the splitter; ``score`` gives one instance's FicResult."""

    def __init__(self, faith: tuple[Any, Any], cover: tuple[Any, Any], splitter: tuple[Any, str],
                 pins: tuple[ModelPin, ModelPin] | None = None, batch_size: int = 5):
        self.faith_tok, self.faith_model = faith
        self.cov_tok, self.cov_model = cover
        self.nlp, self.splitter_name = splitter
        self.pins = pins
        self.batch_size = batch_size
        words = ("Entailment", "Contradiction", "Neutral")
        encoded = [self.faith_tok.encode(w, add_special_tokens=False) for w in words]
        self.entailment_ids: list[int] = list(encoded[0])
        self.n_steps = max(len(e) for e in encoded)
        self.yes_id: int = self.cov_tok.encode("yes")[0]
        self._cache: dict[tuple[str, str, tuple[str, ...]], FicResult] = {}

    @classmethod
    def from_pins(cls, pins: tuple[ModelPin, ModelPin] | None = None, allow_download: bool = False) -> FicScorer:
        """Load the pinned models (raises PrerequisiteError / MissingDataError when unavailable)."""
        pins = pins or load_pins()
        check_available(pins, allow_download)
        splitter = sentence_splitter()
        faith = _load(pins[0], "faithfulness", allow_download)
        cover = _load(pins[1], "coverage", allow_download, model_max_length=pins[1].max_length or 800, use_fast=True)
        return cls(faith, cover, splitter, pins)

    def version(self) -> str:
        from importlib.metadata import version as pkg_version

        names = [f"{p.id}@{p.revision or 'local'}" for p in self.pins] if self.pins else ["in-memory", "in-memory"]
        return (f"fic_f1/fic-evaluation-0.1.0-port/faith={names[0]}/cov={names[1]}/split={self.splitter_name}"
                f"/fp32/transformers=={pkg_version('transformers')}")

    def _encode(self, tokenizer: Any, model: Any, texts: list[str]) -> tuple[Any, Any]:
        ids = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")["input_ids"].to(model.device)
        return ids, (ids != tokenizer.pad_token_id).long()

    def _greedy_step_probs(self, texts: list[str]) -> list[Any]:
        """Softmax distributions of ``n_steps`` greedy decoding steps for each text (list of
        [batch, vocab] float32 tensors), finished rows continuing on the pad token."""
        import torch

        model, cfg = self.faith_model, self.faith_model.config
        ids, mask = self._encode(self.faith_tok, model, texts)
        with torch.no_grad():
            enc = model.get_encoder()(input_ids=ids, attention_mask=mask)
            dec = torch.full((ids.shape[0], 1), cfg.decoder_start_token_id, dtype=torch.long, device=ids.device)
            finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
            steps = []
            for _ in range(self.n_steps):
                logits = model(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=dec).logits[:, -1, :]
                steps.append(torch.softmax(logits.float(), dim=1).cpu())
                nxt = torch.where(finished, torch.full_like(finished, cfg.pad_token_id, dtype=torch.long),
                                  logits.argmax(dim=-1))
                finished |= nxt == cfg.eos_token_id
                dec = torch.cat([dec, nxt[:, None]], dim=1)
        return steps

    def sentence_entailment(self, premise: str, sentences: list[str]) -> list[float]:
        """Product of the "Entailment" token probabilities for each hypothesis sentence."""
        import torch

        out: list[float] = []
        prompts = [nli_prompt(premise, s) for s in sentences]
        for start in range(0, len(prompts), self.batch_size):
            steps = self._greedy_step_probs(prompts[start : start + self.batch_size])
            prod = torch.prod(torch.stack([steps[i][:, t] for i, t in enumerate(self.entailment_ids)]), dim=0)
            out.extend(float(v) for v in prod)
        return out

    def alignment_yes(self, prediction: str, alignments: list[str]) -> list[float]:
        """P("yes") at the first decoder step for each ``alignment <extra_id_4> prediction``."""
        import torch

        model = self.cov_model
        ids, mask = self._encode(self.cov_tok, model, [f"{a} {SUMMARY_DELIM} {prediction}" for a in alignments])
        start = torch.full((ids.shape[0], 1), model.config.decoder_start_token_id, dtype=torch.long, device=ids.device)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=start).logits[:, -1, :]
        return [float(v) for v in torch.softmax(logits.float(), dim=1)[:, self.yes_id].cpu()]

    def score(self, prediction: str, target: dict[str, Any]) -> FicResult:
        """One instance. An empty prediction scores 0 (nothing fused); missing gold alignments
        give null with a reason."""
        highlights, alignments = str(target["highlights_concat"]), [str(a) for a in target["review_side_alignments"]]
        key = (prediction, highlights, tuple(alignments))
        if key in self._cache:
            return self._cache[key]
        if not alignments:
            result = FicResult(None, None, None, "gold has no review-side alignments")
        elif prediction.strip() == "":
            result = FicResult(0.0, 0.0, 0.0, "empty response")
        else:
            sentences = [s.text for s in self.nlp(prediction).sents]
            faith = _mean(self.sentence_entailment(highlights, sentences)) if sentences else None
            cov = _mean(self.alignment_yes(prediction, alignments))
            if faith is None:
                result = FicResult(faith, cov, 0.0, "no sentence in response")
            else:
                result = FicResult(faith, cov, hmean_100(faith, cov))
        self._cache[key] = result
        return result
