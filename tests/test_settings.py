"""Settings declared once (pagemind.config.Settings): the chain argument > flag > env > config file > default, each
value checked by its declared type and choices, and the CLI's model and store flags generated from the
declarations (a setting that declares a flag has it on every command; one that does not is config/env only)."""

from __future__ import annotations

from dataclasses import fields

import pytest
from click.testing import CliRunner

from pagemind.cli.main import cli
from pagemind.config import Settings, resolve_settings
from pagemind.errors import ConfigError


def test_the_chain_and_every_declared_type_and_choice(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("n_ctx: 2048\nslots: 2\nembedded: process\nrecord_runs: false\n")
    env = {"PAGEMIND_HOME": str(home), "PAGEMIND_N_CTX": "4096", "PAGEMIND_SERVER_IDLE": "1.5"}
    got = resolve_settings(env, n_ctx=8192, concurrency=None)
    assert (got.n_ctx, got.slots, got.embedded, got.record_runs, got.server_idle, got.concurrency) == \
        (8192, 2, "process", False, 1.5, 8)  # argument > env > config > default; None is "not given"
    assert resolve_settings(env).n_ctx == 4096
    specs = {s.name: s for s in Settings.specs()}
    assert set(specs) == {f.name for f in fields(Settings)}
    assert (specs["n_ctx"].type, specs["timeout"].type, specs["cache"].type, specs["threads"].type) == \
        (int, float, bool, int)
    for name, bad in (("n_ctx", "many"), ("server_idle", "soon"), ("embedded", "gpu"), ("server_kind", "tgi")):
        with pytest.raises(ConfigError, match=f"setting option {name} "):
            resolve_settings({"PAGEMIND_HOME": str(home), f"PAGEMIND_{name.upper()}": bad})
    with pytest.raises(ConfigError, match="unknown setting"):
        resolve_settings(env, n_ctxx=1)


def test_the_model_and_store_flags_are_generated_from_the_declarations():
    shown = CliRunner().invoke(cli, ["ask", "--help"]).output
    flagged = [s for s in Settings.specs() if s.flag]
    assert {s.name for s in flagged} >= {"llm", "base_url", "store", "n_ctx", "server_kind", "cache"}
    for spec in flagged:
        assert spec.flag in shown, spec.flag
    for name in ("prompt_cache_mb", "server_idle", "record_runs", "native_tools", "timeout"):  # config and env only
        assert next(s for s in Settings.specs() if s.name == name).flag is None
        assert "--" + name.replace("_", "-") not in shown, name
    assert "[auto|vllm|sglang|llama.cpp|llama-cpp-python|ollama|openai]" in shown  # the declared choices


def test_every_command_s_setting_flags_come_from_the_declarations():
    """Issue 48: `models info`, `models serve`, `logs` and `users` write no setting flag by hand: each flag, its
    choices and its help are the declared setting's (a rename or a help for one command aside)."""
    from pagemind.config import Settings

    specs = {s.name: s for s in Settings.specs()}
    runner = CliRunner()
    info = runner.invoke(cli, ["models", "info", "--help"]).output
    assert "[auto|vllm|sglang|llama.cpp|llama-cpp-python|ollama|openai]" in info  # the declared choices
    assert specs["base_url"].help.split(" (")[0] in " ".join(info.split())
    serve = " ".join(runner.invoke(cli, ["models", "serve", "--help"]).output.split())
    assert "--slots INTEGER" in serve and "--idle FLOAT" in serve and specs["slots"].help.split(":")[0] in serve
    for command in (["logs", "--help"], ["users", "--help"]):
        shown = " ".join(runner.invoke(cli, command).output.split())
        assert "--store TEXT" in shown and specs["store"].help.split(" [")[0] in shown
    bad = runner.invoke(cli, ["models", "serve", "--slots", "0"])
    assert bad.exit_code != 0 and "slots" in bad.output and "at least 1" in bad.output
    assert Settings.json_schema()["properties"]["embedded"]["enum"] == ["auto", "server", "process"]
