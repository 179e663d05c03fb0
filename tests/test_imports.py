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


# Start-up (issue 15): what `pagemind --help`, `pagemind methods` and a cached `pagemind ask` never need. Optional
# extras, numpy, the evaluation harness and the agent are imported by the commands and readers that use them.
EXTRAS = ("numpy", "scipy", "matplotlib", "onnxruntime", "tree_sitter", "llama_cpp", "faiss", "fastapi", "uvicorn",
          "starlette", "mcp", "psycopg", "psycopg_pool", "pgvector", "opentelemetry", "torch", "transformers")
NOT_AT_START = EXTRAS + ("httpx", "jinja2", "yaml", "tqdm", "asyncio", "pagemind.eval", "pagemind.agent",
                         "pagemind.retrieval.index", "pagemind.retrieval.embed", "pagemind.cli.agent",
                         "pagemind.cli.eval", "pagemind.cli.data", "pagemind.cli.models")


def loaded(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (modules, by full name) are in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(set(sys.modules) & {set(names)!r})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("code", ["import pagemind", "import pagemind.cli.main"])
def test_importing_pagemind_or_its_cli_loads_nothing_heavy(code):
    assert loaded(code, NOT_AT_START) == []


def test_the_library_reads_entry_points_only_when_methods_are_listed():
    assert loaded("import pagemind", ("importlib.metadata",)) == []
    assert loaded("from pagemind.methods import registry\nregistry.names()", ("importlib.metadata",)) == [
        "importlib.metadata"]


def test_help_and_methods_load_nothing_heavy_and_list_every_command():
    code = ("from pagemind.cli.main import cli\n"
            "for args in (['--help'], ['methods'], ['ask', '--help']):\n"
            "    cli(args, standalone_mode=False)")
    assert loaded(code, NOT_AT_START) == []
    from click.testing import CliRunner

    from pagemind.cli.main import cli

    listed = CliRunner().invoke(cli, ["--help"]).output
    assert all(f"  {name} " in listed for name in cli.commands)


def test_an_answer_loads_no_extra_nor_the_harness(tmp_path):
    """The cached-answer path end to end (scripted backend): the answer needs prompts, not numpy or the agent."""
    code = ("from pagemind import ScriptedLLM\n"
            "from pagemind.cli.main import cli\n"
            "fake = ScriptedLLM(default='Answer: the keeper')\n"
            f"args = ['ask', '--sample', 'Who finds the map?', '--store', {str(tmp_path / 's.db')!r}]\n"
            "cli(args, obj={'backend': fake}, standalone_mode=False)\n"
            "cli(args, obj={'backend': fake}, standalone_mode=False)\n"
            "assert len(fake.history) == 1, fake.history  # the second answer came from the cache")
    assert loaded(code, EXTRAS + ("pagemind.eval", "pagemind.agent", "pagemind.retrieval.index",
                                  "pagemind.cli.agent", "pagemind.cli.eval")) == []


def test_lazy_commands_load_when_used_and_each_resolves_to_its_command():
    code = ("from pagemind.cli.main import cli\n"
            "cli(['models', '--help'], standalone_mode=False)")
    assert loaded(code, ("pagemind.cli.models", "pagemind.cli.agent")) == ["pagemind.cli.models"]
    import click

    from pagemind.cli.lazy import LazyCommand, lazy
    from pagemind.cli.main import cli

    for name in list(cli.commands):
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command) and not isinstance(command, LazyCommand)
        assert command.name == name and command.short_help
    with pytest.raises(TypeError, match="not the click command"):
        lazy("model", ".models:models").load()


def test_loopback_http_skips_the_ca_bundle_and_anything_else_verifies():
    import ssl

    from pagemind.llm.openai import OpenAICompatible

    local = OpenAICompatible("m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(local._verify, ssl.SSLContext)  # no CA loaded: a TLS connection would fail, never pass
    assert local._verify.verify_mode == ssl.CERT_REQUIRED and local._verify.check_hostname
    assert local._verify.cert_store_stats()["x509_ca"] == 0
    for url in ("https://127.0.0.1:9/v1", "http://gpu-box.example:8000/v1", "https://api.openai.com/v1"):
        assert OpenAICompatible("m", base_url=url, api_key="k")._verify is True


# --- no import cycles (issue 22 item 5) ------------------------------------------------------------------------
def import_graph(root):
    """Which of pagemind's modules each module imports, read statically (ast) from the sources under ``root``.

    Every import counts, also one inside a function: a function-level import defers the loading, not the
    dependency, and the known cycles (``lookup`` <-> ``hierarchy``, ``openai`` <-> ``servers``, ``app`` <-> ``agents``,
    ``datasets`` <-> ``sets_*``) were all made of them. Imports under ``if TYPE_CHECKING:`` do not count: they never
    run, and an annotation naming a type of another module makes no run-time dependency. ``from pkg import name``
    depends on ``pkg.name`` when that is a module, else on ``pkg`` (its ``__init__``, also a module's own package:
    a package that loads its module which reads a name back from the package is a cycle too)."""
    import ast
    from pathlib import Path

    root = Path(root)
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)

    def type_checking(node):
        test = node.test
        return isinstance(node, ast.If) and ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
                                             or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))

    graph = {}
    for name, (path, package) in modules.items():
        here = name.split(".") if package else name.split(".")[:-1]
        found = set()
        stack = list(ast.parse(path.read_text(encoding="utf-8")).body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and type_checking(node):
                stack.extend(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                found.update(subs)
                if len(subs) < len(node.names):
                    found.add(base)
            stack.extend(ast.iter_child_nodes(node))
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def cycles(graph):
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_among_pagemind_modules():
    from pathlib import Path

    import pagemind

    graph = import_graph(Path(pagemind.__file__).parent)
    assert len(graph) > 100 and "pagemind.methods.readagent.lookup" in graph
    found = cycles(graph)
    assert found == [], "\n".join(" <-> ".join(group) + "\n   " + "; ".join(
        f"{m} -> {', '.join(sorted(graph[m] & set(group)))}" for m in group) for group in found)


def test_the_cycle_check_sees_a_cycle_made_by_a_function_level_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .b import thing\n")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import b\n")
    (package / "sub" / "b.py").write_text("def thing():\n    from ..a import x\n    return x\n")
    graph = import_graph(package)
    assert graph["pkg.sub.b"] == {"pkg.a"} and graph["pkg.a"] == set()  # TYPE_CHECKING imports do not count
    (package / "a.py").write_text("def f():\n    from .sub.b import thing\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.sub.b"]]


# --- packages in layers (issue 48): no package loop, no arrow upward --------------------------------------------
# pagemind's packages and top-level modules, lowest first: each may import only from the layers below its own. What
# comes after the model's reply (`answering`) sits below the methods that produce the reply; the service (`api`)
# above the methods and the agent; the surfaces (`server`, `cli`) above the service; the package's own facade last.
LAYERS = (
    ("errors", "hashing", "processes", "citations", "version"),
    ("declare", "limits"),
    ("prompts", "config"),
    ("text",),
    ("llm",),
    ("store", "telemetry"),
    ("steps", "users", "leases", "retrieval"),
    ("library", "runs", "answering"),
    ("conversation", "methods"),
    ("agent",),
    ("api",),
    ("eval", "integrations"),
    ("server",),
    ("cli",),
    ("pagemind", "__main__"),
)


def package_graph(graph):
    """The module graph folded into pagemind's packages and top-level modules (``pagemind.methods.rag`` ->
    ``methods``, ``pagemind.api`` -> ``api``, the package's own ``__init__`` -> ``pagemind``)."""
    def unit(module):
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    out = {}
    for module, imported in graph.items():
        out.setdefault(unit(module), set()).update(unit(m) for m in imported if unit(m) != unit(module))
    return out


def test_packages_import_only_downward_and_form_no_loop():
    from pathlib import Path

    import pagemind

    packages = package_graph(import_graph(Path(pagemind.__file__).parent))
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    assert set(packages) == set(layer), f"placed in no layer: {sorted(set(packages) - set(layer))}; gone: " \
                                        f"{sorted(set(layer) - set(packages))}"
    upward = sorted(f"{a} -> {b}" for a, imported in packages.items() for b in imported if layer[b] >= layer[a])
    assert upward == [] and cycles(packages) == []
    assert "answering" in packages["methods"] and "methods" not in packages["answering"]


def test_the_layer_check_sees_an_upward_arrow(tmp_path):
    package = tmp_path / "pagemind"
    (package / "methods").mkdir(parents=True)
    (package / "answering").mkdir()
    for init in (package, package / "methods", package / "answering"):
        (init / "__init__.py").write_text("")
    (package / "methods" / "base.py").write_text("from ..answering import finish\n")
    (package / "answering" / "finish.py").write_text("def f():\n    from ..methods.base import x\n")
    packages = package_graph(import_graph(package))
    assert packages["answering"] == {"methods"} and cycles(packages) == [["answering", "methods"]]
