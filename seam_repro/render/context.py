"""What a renderer needs to know about one (dataset, run): the dataset's spec, the recorded choices
and the prompt file they index. Rendering reads only these recorded choices, never a random
generator, and never looks a dataset up by name: the spec travels in the context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from seam_repro.specs import DatasetSpec


class RunContext(NamedTuple):
    """Choices of one (dataset, run), as frozen in the manifest, plus the prompt file content."""

    spec: DatasetSpec
    """The dataset's spec from its suite file: names the template and holds its options."""
    profile: str
    """``upstream`` (bit-exact with SEAM@6ad83f4, quirks kept) or ``seam-repro-1`` (quirks fixed)."""
    prompt_file: dict[str, Any]
    paraphrase_index: int
    demo_indices: tuple[int, ...]
    max_num_docs: int
    doc_order: tuple[int, ...]

    @property
    def dataset(self) -> str:
        return self.spec.name

    @property
    def suite(self) -> str:
        return self.spec.suite

    @property
    def paraphrase(self) -> dict[str, Any]:
        return self.prompt_file["prompts"][self.paraphrase_index]

    @property
    def instructions(self) -> str:
        return self.paraphrase["instructions"]

    @property
    def options(self) -> Mapping[str, Any]:
        """The dataset's ``template_options`` from its suite file (empty for SEAM's datasets); part of
        the shipped template, so not recorded in the manifest: every prompt's sha256 pins their effect."""
        return self.spec.template_options

    @property
    def upstream(self) -> bool:
        return self.profile == "upstream"

    def demos(self, key: str = "demonstrations") -> list[dict[str, Any]]:
        """The selected demonstrations in sampled order (fresh copies: renderers may not mutate)."""
        pool = self.prompt_file[key]
        return [dict(pool[i]) for i in self.demo_indices]
