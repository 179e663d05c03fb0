"""Synthetic key-value sets: MemGPT's nested key-value retrieval and Lost in the Middle's key-value retrieval.

* nested-kv: the staged ``nested_kv_instances.jsonl`` (one line per ordering, with ``value_overrides``) on top of
  the first line of ``kv-retrieval-140_keys.jsonl``; or MemGPT's upstream folder
  (``random_orderings_100_samples_140_indices_<L>_levels.jsonl``, each line a JSON list of record indices, plus
  ``kv-retrieval-140_keys.jsonl[.gz]``), built the way ``nested_kv.py`` does: the value of key ``i_j`` becomes
  key ``i_(j+1)``. ``levels`` = lookups in total (1 = a plain lookup; the paper's "nesting level" is levels - 1).
  Correct when the last UUID of the reply is the final value.
* litm-kv: ``kv-retrieval-<75|140>_keys.jsonl[.gz]``; ``gold_index`` moves the gold pair to that position (the
  paper's --gold-index); correct when the reply contains the value (case-insensitive), as in the paper.

The document is the pairs as a JSON object (what the full-context baseline reads); MemGPT gets each pair as an
archival passage ``Key-value pair: key = K, value = V`` (nested_kv.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DatasetError
from ..prompts import get_prompt
from .datasets import QUALITY_PRESETS, DatasetSpec, Example, field_of, find_file, open_text, read_rows


def kv_json(pairs: list[tuple[str, str]]) -> str:
    """The pairs as Lost in the Middle formats them: a JSON object, one ``"key": "value"`` per line."""
    return "{" + ",\n ".join(f'"{k}": "{v}"' for k, v in pairs) + "}"


def kv_passages(pairs: list[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(f"Key-value pair: key = {k}, value = {v}" for k, v in pairs)


def kv_question(key: str, nested: bool) -> str:
    return get_prompt("eval", "kv.question").render(key=key, nested=nested)


def _records(row: dict, where: str) -> list[tuple[str, str]]:
    records = field_of(row, "ordered_kv_records", where, list)
    if not all(isinstance(r, list) and len(r) == 2 for r in records):
        raise DatasetError(f"{where}: ordered_kv_records must be [key, value] pairs")
    return [(str(k), str(v)) for k, v in records]


def _base_pairs(path: Path, base: str) -> list[tuple[str, str]]:
    folder = path if path.is_dir() else path.parent
    candidates = [Path(base)] if base else [folder, folder.parent / "lost-in-the-middle-kv"]
    for candidate in candidates:
        try:
            file = find_file(candidate, "kv-retrieval-140_keys.jsonl")
        except DatasetError:
            continue
        for where, row in read_rows(file):
            return _records(row, where)
    raise DatasetError(f"nested-kv needs kv-retrieval-140_keys.jsonl (lost-in-the-middle-kv) beside {folder}; "
                       "pass -p base=PATH")


def nested_instance(pairs: list[tuple[str, str]], positions: list[int], where: str) -> dict:
    """MemGPT's construction: follow ``positions``, each key's value overwritten with the next key."""
    if not positions or any(not isinstance(p, int) or not 0 <= p < len(pairs) for p in positions):
        raise DatasetError(f"{where}: key positions must be indices into the {len(pairs)} pairs")
    keys = [pairs[p][0] for p in positions]
    overrides = [[keys[j], keys[j + 1]] for j in range(len(keys) - 1)]
    values = dict(pairs) | dict(overrides)
    return {"query_key": keys[0], "answer": values[keys[-1]], "value_overrides": overrides,
            "levels": len(positions), "key_positions": positions}


def load_nested_kv(path: Path, *, levels: tuple[int, ...] = (1, 2, 3, 4), seeds: int = 100,
                   base: str = "") -> list[Example]:
    """MemGPT nested key-value retrieval (accuracy); ``levels`` = total lookups per question; ``seeds``: the first
    N instances of each level (the paper's run.sh used seeds 0-10)."""
    pairs = _base_pairs(path, base)
    instances: list[tuple[str, dict]] = []
    orderings = sorted(path.glob("random_orderings_*_levels.jsonl")) if path.is_dir() else []
    if orderings:
        for file in orderings:
            for n, line in enumerate(open_text(file).splitlines()):
                if line.strip():
                    where = f"{file}, line {n + 1}"
                    try:
                        positions = json.loads(line)
                    except json.JSONDecodeError:
                        raise DatasetError(f"{where}: not valid JSON") from None
                    inst = nested_instance(pairs, positions, where) | {"seed": n}
                    instances.append((f"nested_kv-L{inst['levels']}-s{n}", inst))
    else:
        file = find_file(path, "nested_kv_instances.jsonl")
        for n, (where, row) in enumerate(read_rows(file), 1):
            inst = {k: row.get(k)
                    for k in ("query_key", "answer", "value_overrides", "levels", "key_positions", "seed")}
            field_of(row, "query_key", where), field_of(row, "answer", where), field_of(row, "levels", where, int)
            instances.append((str(row.get("id") or f"nested_kv-{n}"), inst))
    examples = []
    for id_, inst in instances:
        if inst["levels"] not in levels or (inst.get("seed") or 0) >= seeds:
            continue
        overrides = dict(inst["value_overrides"] or [])
        instance_pairs = [(k, overrides.get(k, v)) for k, v in pairs]
        chain = [inst["query_key"]] + [v for _, v in inst["value_overrides"] or []] + [inst["answer"]]
        examples.append(Example(
            id=id_, dataset="nested-kv", task="kv", question=kv_question(inst["query_key"], nested=True),
            document_id=id_, document="JSON data:\n" + kv_json(instance_pairs), references=(inst["answer"],),
            passages=kv_passages(instance_pairs),
            meta={"levels": inst["levels"], "seed": inst.get("seed"), "key": inst["query_key"], "chain": chain,
                  "match": "last-uuid"}))
    return examples


def load_litm_kv(path: Path, *, keys: int = 75, gold_index: int = -1) -> list[Example]:
    """Lost in the Middle key-value retrieval (accuracy); ``gold_index`` >= 0 moves the gold pair there."""
    file = find_file(path, f"kv-retrieval-{keys}_keys.jsonl")
    examples = []
    for n, (where, row) in enumerate(read_rows(file), 1):  # n: the row's place (its line in JSON lines)
        pairs = _records(row, where)
        key, value = field_of(row, "key", where), field_of(row, "value", where)
        if dict(pairs).get(key) != value:
            raise DatasetError(f"{where}: key {key} is not paired with the gold value")
        if gold_index >= 0:
            pairs = [p for p in pairs if p[0] != key]
            pairs.insert(min(gold_index, len(pairs)), (key, value))
        position = [k for k, _ in pairs].index(key)
        examples.append(Example(
            id=f"litm-kv{keys}-{n}", dataset="litm-kv", task="kv", question=kv_question(key, nested=False),
            document_id=f"litm-kv{keys}-{n}", document="JSON data:\n" + kv_json(pairs), references=(value,),
            passages=kv_passages(pairs), meta={"key": key, "gold_position": position, "match": "contains"}))
    return examples


SPECS = (
    DatasetSpec("nested-kv", load_nested_kv, "memgpt-nested-kv/nested_kv_instances.jsonl",
                "MemGPT nested key-value retrieval over 140 UUID pairs (accuracy)", "accuracy", QUALITY_PRESETS,
                "Packer et al., 2023", widening=("seeds",)),
    DatasetSpec("litm-kv", load_litm_kv, "lost-in-the-middle-kv",
                "Lost in the Middle key-value retrieval, 75 or 140 UUID pairs (accuracy)", "accuracy", QUALITY_PRESETS,
                "Liu et al., TACL 2024"),
)
