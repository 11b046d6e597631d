"""``seam-repro metric``: score one prediction with any metric of any suite, or list them all."""

from __future__ import annotations

import json
from pathlib import Path

import click

from seam_repro.errors import InputError


def _read_arg(value: str, what: str) -> str:
    """``@PATH`` reads a UTF-8 file, ``@@text`` is the literal ``@text``, anything else is literal."""
    if value.startswith("@@"):
        return value[1:]
    if not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(path, f"{what} file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(path, f"{what} cannot be read: {exc.strerror}") from None


def _read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"source document is not UTF-8 text (byte {exc.start})") from None


@click.command(epilog="""\b
Examples:
  seam-repro metric --list
  seam-repro metric zeroscrolls_exp_similarity "So 40% are positive." "50%"
  seam-repro metric zeroscrolls_f1 "The Eiffel Tower" "eiffel tower" "la tour eiffel"
  seam-repro metric igcs_token_f1 @answer.txt '["a source sentence."]' --source doc0.txt --source doc1.txt
  seam-repro metric musique_corrected @out.txt '{"is_answerable": true, "answer_content": "Paris"}' "Paris, France"
\b
PREDICTION and REFERENCE are literal text; @PATH reads a UTF-8 file, @@x is the literal "@x";
put -- before the first argument that starts with "-".""")
@click.argument("name", required=False)
@click.argument("prediction", required=False)
@click.argument("references", nargs=-1)
@click.option("--source", "sources", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Source document for IGCS metrics (repeat, in document order).")
@click.option("--list", "list_metrics", is_flag=True, help="List every metric of every suite and exit.")
def metric(name: str | None, prediction: str | None, references: tuple[str, ...], sources: tuple[Path, ...],
           list_metrics: bool) -> None:
    """Score PREDICTION against REFERENCE(s) with metric NAME; prints one JSON object."""
    from seam_repro.metrics import registry as reg

    if list_metrics:
        for spec in sorted(reg.METRICS.values(), key=lambda s: (s.suite, s.name)):
            reason = spec.available()
            status = "" if reason is None else f"  [unavailable: {reason}]"
            click.echo(f"{spec.name}\t{spec.suite}\t{spec.summary}. REFERENCE: {spec.reference_form}{status}")
        return
    if name is None or prediction is None:
        raise click.UsageError("give NAME PREDICTION REFERENCE [REFERENCE...] or --list")
    reg.get(name)  # unknown names fail before any file is read
    pred = _read_arg(prediction, "prediction")
    refs = [_read_arg(r, f"reference {i}") for i, r in enumerate(references)]
    docs = [_read_source(p) for p in sources]
    result = reg.compute(name, pred, refs, docs or None)
    click.echo(json.dumps(result, ensure_ascii=False, allow_nan=False))
