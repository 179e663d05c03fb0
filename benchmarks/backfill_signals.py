"""(al) A signal added after a run, written into its kept records: ``later`` and ``has_later`` (whether the document
speaks of all the question asks after the last passage an answer cites, and whether that could be told:
:func:`pagemind.answering.support.later_mentions`, as :func:`pagemind.answering.signals.signals` records them), and
(bd) ``unwritten`` and ``has_unwritten`` (whether the question asks of a name the document never writes:
:func:`pagemind.answering.support.unwritten`) for runs recorded before pagemind recorded them, so ``calibrate.py``
can fit on them without a model run. (am) With ``--prior``, also a multiple-choice answer's ``lift`` and
``has_prior`` (its option's probability read, less its probability when the question and options are asked with no
text: :func:`pagemind.methods.reply.prior`, the product's own call, one short call each to the run's model — the
embedded default unless ``--llm`` says; a run made with another model is refused). A record's ``usage`` stays the
run's: the prior's call is not added to it.

    python benchmarks/backfill_signals.py RUN_DIR ... [--data DIR] [--check] [--prior [--llm SPEC]]

Each run's examples are loaded again as its ``config.json`` says (dataset, data folder, params; with their
unanswerable variants where the run asked them), and each answer's ``later`` is computed by the product's own
function (``unwritten``'s from the question and the document's text alone) from the answer's stored citations, its
example's question and its document's text — the values the answer would have recorded. Records that hold them
already are left as they are (``--check`` compares them instead and writes nothing); an answer whose example or
document cannot be found again gets none (counted).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from common import DATA

if TYPE_CHECKING:
    from pagemind.eval.datasets import Example
    from pagemind.llm.client import LLM
    from pagemind.methods.options import ReaderOptions


def documents(config: dict, data: Path, wanted: set[str] | None = None) -> dict[str, tuple[Example, str]]:
    """The example and the text of each example id of the run's dataset (and its variants); given ``wanted`` (example
    ids), of those and their variants only (a LoCoMo variant costs a support check of every sentence)."""
    from pagemind.eval.memgpt import document_of
    from pagemind.eval.sets import load_dataset
    from pagemind.eval.unanswerable import with_variants
    from pagemind.text import Document

    folder = config.get("data")  # as the run recorded it: "../shared/data/msc", "../shared/data", "DATA" or none
    parts = Path(folder).parts if folder else ()
    where = None if folder is None else data.joinpath(*parts[parts.index("data") + 1:]) if "data" in parts else data
    examples = load_dataset(config["dataset"], where, config.get("params") or {})
    if wanted is not None:
        examples = [e for e in examples if e.id in wanted]
    if config.get("unanswerable"):
        examples, _ = with_variants(examples)
    out = {}
    for e in examples:
        source = document_of(e)
        if isinstance(source, Document):  # a library's citations point into its members: not read here
            out[e.id] = (e, source.text)
    return out


def options_of(llm: LLM, config: dict, method: str) -> ReaderOptions:
    """The options a run's reader answered with: its method's options as the run recorded them, resolved by the
    reader itself (no grammar where the backend enforces none)."""
    from pagemind import Store
    from pagemind.methods import registry

    given = dict(config.get("method_options", {}).get(method) or {})
    reader = registry.get(method)
    return reader(llm, Store(":memory:"), reader.Options.create(given.pop("preset", None), **given)).options


def unread(llm: LLM, options: ReaderOptions, record: dict, example: Example) -> dict[str, float]:
    """``lift`` and ``has_prior`` of a multiple-choice record, as the answer would have recorded them."""
    from pagemind.llm.usage import Trace
    from pagemind.methods.reply import prior

    question = example.as_question()
    chosen = record.get("choice")  # None where the answer abstained (then none is recorded: 0 with its flag 0)
    read = (record.get("signals") or {}).get("probability")
    if (not question.is_choice or chosen not in question.letters or options.prior == "off"
            or not (record.get("signals") or {}).get("has_probability")):
        return {"lift": 0.0, "has_prior": 0.0}
    share = prior(llm, question, options.prompt_set, options.constrained, question.letters.index(chosen), Trace())
    if share is None or read is None:
        return {"lift": 0.0, "has_prior": 0.0}
    return {"lift": round(float(read) - share, 6), "has_prior": 1.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=DATA, help="the folder holding the staged sets")
    parser.add_argument("--check", action="store_true", help="compare recorded values; write nothing")
    parser.add_argument("--prior", action="store_true",
                        help="also multiple-choice answers' lift (one short call of the model each)")
    parser.add_argument("--llm", default=None, help="the model the runs were made with (default: the embedded one)")
    args = parser.parse_args()
    llm = None
    if args.prior:
        from pagemind import Pagemind

        llm = Pagemind(args.llm).llm
    from pagemind.answering.support import asked_cited, later_mentions, unwritten
    from pagemind.citations import Citation
    from pagemind.eval.unanswerable import SUFFIX

    for run in args.runs:
        config = json.loads((run / "config.json").read_text())
        if llm is not None and config.get("model") not in (None, llm.model_identity):
            raise SystemExit(f"{run}: made with {config.get('model')}, not {llm.model_identity}: give it as --llm")
        lines = (run / "examples.jsonl").read_text().splitlines()
        asked = {json.loads(line)["example_id"].removesuffix(SUFFIX) for line in lines if line.strip()}
        texts = documents(config, args.data, asked)
        options: dict[str, ReaderOptions] = {}  # each method's, resolved once a run
        out, added, lost, differ, fired, named = [], 0, 0, 0, 0, 0
        for line in lines:
            record = json.loads(line) if line.strip() else None
            signals = (record or {}).get("signals")
            if not record or not signals:
                out.append(line)
                continue
            found = texts.get(record["example_id"])
            if found is None:
                lost += 1
                out.append(line)
                continue
            example, text = found
            question = example.question
            cited = [Citation(c["document"], c["unit"], c.get("index"), c["start"], c["end"], c["quote"],
                              c.get("found_by", "text")) for c in record.get("citations") or []]
            count = later_mentions(question, text, cited)
            absent = unwritten(question, text)
            share = asked_cited(question, cited, text)
            values = {"later": float(bool(count)), "has_later": float(count is not None),
                      "unwritten": float(bool(absent)), "has_unwritten": float(absent is not None),
                      "asked": round(share or 0.0, 6), "has_asked": float(share is not None)}
            if llm is not None and record.get("kind") == "choice":
                method = record["method"]
                if method not in options:
                    options[method] = options_of(llm, config, method)
                values.update(unread(llm, options[method], record, example))
            fired += bool(count)
            named += bool(absent)
            differ += any(k in signals and signals[k] != v for k, v in values.items())  # recorded stays as recorded
            if all(k in signals for k in values):
                out.append(line)
                continue
            added += 1
            record["signals"] = {**values, **signals}
            out.append(json.dumps(record))
        if not args.check and added:
            (run / "examples.jsonl").write_text("\n".join(out) + "\n")
        print(f"{run}: {added} added, {fired} with later mentions, {named} asking of a name the document never "
              f"writes, {lost} whose document was not found, {differ} recorded values that differ")


if __name__ == "__main__":
    main()
