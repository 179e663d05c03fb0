import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test touches the real user directory, config or model cache."""
    monkeypatch.setenv("PAGEMIND_HOME", str(tmp_path / "home"))
    for name in ("PAGEMIND_LLM", "PAGEMIND_STORE", "PAGEMIND_CONCURRENCY", "PAGEMIND_CACHE", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path
