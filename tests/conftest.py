import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def in_process_model(tmp_path_factory):
    """The embedded model runs in the test's process, from the first fixture on (module-scoped fixtures open models
    before any function-scoped fixture runs); the shared llama-server's tests in test_managed.py opt in, each with
    its own run directory, so no test starts or finds a server of the user's."""
    saved = {name: os.environ.get(name) for name in ("PAGEMIND_EMBEDDED", "PAGEMIND_RUN_DIR")}
    os.environ["PAGEMIND_EMBEDDED"] = "process"
    os.environ["PAGEMIND_RUN_DIR"] = str(tmp_path_factory.mktemp("run"))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test touches the real user directory, config or model cache, nor the user's shared model servers."""
    monkeypatch.setenv("PAGEMIND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PAGEMIND_EMBEDDED", "process")
    monkeypatch.setenv("PAGEMIND_RUN_DIR", str(tmp_path / "run"))
    for name in ("PAGEMIND_LLM", "PAGEMIND_STORE", "PAGEMIND_CONCURRENCY", "PAGEMIND_CACHE", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture(scope="session")
def tiny_backend(in_process_model):
    """The embedded SmolLM2-135M, loaded once for the whole run: every module's session shares its weights."""
    from pagemind.config import resolve_settings
    from pagemind.llm.registry import open_backend

    backend = open_backend(resolve_settings(llm="local:smollm2-135m", n_ctx=4096))
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, tiny_backend):
    """A session on the tiny model (one per test module, each with its own store): exercises every path in
    seconds."""
    from pagemind import Pagemind

    home = tmp_path_factory.mktemp("pm")
    tiny_backend.forget_prompts()  # each module starts cold, as with a model of its own
    with Pagemind(tiny_backend, store=home / "s.db", n_ctx=4096, concurrency=1) as pm:
        yield pm


# The quick lane (`python -m pytest -m "not slow"`, for development; .ci/run runs everything): what needs a real
# model, a real server process, Postgres or a browser is slow.
SLOW_FIXTURES = {"tiny_model", "pg_server", "pg_url", "pg_empty_url"}
SLOW_MODULES = {"test_schemathesis", "test_viewer", "test_replicas", "test_server_integration",
                "test_serve_integration", "test_managed", "test_letta", "test_mcp", "test_openai_endpoint",
                "test_integrations"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if item.get_closest_marker("integration") or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) \
                or module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
