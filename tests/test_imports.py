"""Importing pagemind stays light: heavy optional modules are imported where they are used, never on import."""

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "matplotlib", "onnxruntime", "tree_sitter")


def loaded_after(code: str) -> list[str]:
    """The heavy top-level modules present in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return [m for m in json.loads(out.splitlines()[-1]) if m in HEAVY]


def test_import_retrieval_loads_no_heavy_module():
    assert loaded_after("import pagemind.retrieval") == []


def test_code_names_load_lazily_and_still_load_nothing_heavy():
    code = ("import pagemind.retrieval as r\n"
            "assert r.rank_code.__module__ == 'pagemind.retrieval.fragrel.code_rank'\n"
            "assert r.CodeRepository is __import__('pagemind.retrieval.fragrel', fromlist=['x']).CodeRepository\n"
            "try:\n    r.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no error')")
    assert loaded_after(code) == []  # scipy and tree-sitter are imported inside the functions that use them


def test_the_probe_sees_a_heavy_import():
    pytest.importorskip("scipy")
    code = "from pagemind.retrieval.fragrel.relations import causal_geometric\ncausal_geometric([1.0, 2.0], .5, True)"
    assert loaded_after(code) == ["scipy"]
