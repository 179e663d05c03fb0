"""`pagemind data get`: downloads from a local HTTP server (offline), checksums, cut connections, atomic placement.

The server is stdlib http.server on 127.0.0.1 in a thread; the archives are built here; the source table is a
YAML file in the test's directory (PAGEMIND_DATA_SOURCES for the CLI, ``parse_sources`` for the API).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import socket
import subprocess
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pagemind.cli.main import cli
from pagemind.errors import DatasetError
from pagemind.eval import load_dataset
from pagemind.eval.datasets import data_root
from pagemind.eval.sources import DownloadError, get, git_blob_id, load_sources, parse_sources

STAGED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ARTICLE = "\n\n".join(f"Paragraph {i}. " + " ".join(f"w{i}x{j}" for j in range(30)) for i in range(5))


class Server:
    """Serves ``files`` (URL path -> bytes); a path in ``cut`` gets half its body, then the connection closes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: set[str] = set()
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in outer.cut:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with Server() as s:
        yield s


def quality_rows() -> bytes:
    """Two lines of the official QuALITY layout (one article, two question writers)."""
    rows = [{"article_id": "20001", "set_unique_id": f"20001_{w}", "article": ARTICLE, "questions": [
        {"question": f"Question {w}{i}?", "options": ["a", "b", "c", "d"], "gold_label": 1 + i % 4,
         "question_unique_id": f"q{w}{i}", "difficult": i % 2} for i in range(3)]} for w in "XY"]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def quality_zip() -> bytes:
    """A release-like zip: the stripped files under a top folder, the HTML ones too, and macOS debris."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("QuALITY.v1.0.1/QuALITY.v1.0.1.htmlstripped.dev", quality_rows())
        z.writestr("QuALITY.v1.0.1/QuALITY.v1.0.1.dev", b"<html>not read</html>\n")
        z.writestr("__MACOSX/QuALITY.v1.0.1/._QuALITY.v1.0.1.htmlstripped.dev", b"junk")
    return out.getvalue()


def msc_tar() -> bytes:
    episodes = [{"personas": [[f"I have {k} cats and a big garden.", f"My favourite colour is shade {k}."], []],
                 "dialog": [{"text": "hi"}], "metadata": {"initial_data_id": f"test_{k}"},
                 "previous_dialogs": [{"dialog": [{"text": f"I have {k} cats."}, {"text": "Nice!"}]}]}
                for k in range(5)]
    body = "".join(json.dumps(e) + "\n" for e in episodes).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        info = tarfile.TarInfo("msc/msc_dialogue/session_2/test.txt")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def table(server: Server, **overrides: dict) -> dict:
    """A source table for the fixture files (served by ``server``), in the layout of sources.yaml."""
    server.files["/q/QuALITY.v1.0.1.zip"] = zipped = quality_zip()
    server.files["/m/msc.tar.gz"] = tarred = msc_tar()
    server.files["/k/kv-retrieval-75_keys.jsonl.gz"] = kv = gzip.compress(b'{"ordered_kv_records": '
                                                                         b'[["k1", "v1"], ["k2", "v2"]], '
                                                                         b'"key": "k2", "value": "v2"}\n')
    entries = {
        "quality": {"title": "QuALITY fixture", "homepage": "local", "licence": "test", "citation": "none",
                    "folder": "quality", "checksums": "computed in the test",
                    "files": [{"url": f"{server.base}/q/QuALITY.v1.0.1.zip", "sha256": sha(zipped),
                               "size": len(zipped), "unpack": "zip",
                               "members": {"QuALITY.v1.0.1.htmlstripped.dev": "QuALITY.v1.0.1.htmlstripped.dev"}}]},
        "msc": {"title": "MSC fixture", "folder": "msc", "checksums": "computed in the test",
                "files": [{"url": f"{server.base}/m/msc.tar.gz", "sha256": sha(tarred), "unpack": "tar",
                           "members": {"msc_dialogue/session_2/test.txt": "session_2/test.txt"}}]},
        "litm-kv": {"title": "KV fixture", "folder": "lost-in-the-middle-kv", "checksums": "computed in the test",
                    "files": [{"url": f"{server.base}/k/kv-retrieval-75_keys.jsonl.gz", "sha256": sha(kv)}]},
    }
    for name, change in overrides.items():
        entries[name] = {**entries[name], **change}
    return entries


def leftovers(root: Path) -> list[str]:
    """Every file under ``root`` (temporary ones included)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# --- the download itself ----------------------------------------------------------------------------
def test_get_puts_verified_files_where_the_loaders_read_them(server, tmp_path):
    sources = parse_sources(table(server), "test")
    for name in ("quality", "msc", "litm-kv"):
        fetched = get(sources[name], tmp_path)
        assert len(fetched) == 1 and fetched[0].checked_by
    assert leftovers(tmp_path) == ["lost-in-the-middle-kv/kv-retrieval-75_keys.jsonl.gz",
                                   "msc/session_2/test.txt", "quality/QuALITY.v1.0.1.htmlstripped.dev"]
    assert (tmp_path / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_bytes() == quality_rows()
    examples = load_dataset("quality", tmp_path)  # through the data root, as `pagemind eval quality` reads it
    assert [e.id for e in examples] == ["quality-qX0", "quality-qX1", "quality-qX2", "quality-qY0", "quality-qY1",
                                        "quality-qY2"]
    assert [e.gold for e in examples[:3]] == [0, 1, 2] and {e.document_id for e in examples} == {"quality-20001"}
    assert len(load_dataset("msc", tmp_path)) == 5
    [kv] = load_dataset("litm-kv", tmp_path)
    assert kv.references == ("v2",)


def test_a_checksum_mismatch_is_an_error_and_keeps_nothing(server, tmp_path):
    entries = table(server)
    wrong = {**entries["quality"]["files"][0], "sha256": "0" * 64}
    sources = parse_sources(table(server, quality={"files": [wrong]}), "test")
    with pytest.raises(DownloadError, match=r"checksum mismatch \(SHA-256 [0-9a-f]{64}, expected 0{64}\).*deleted"):
        get(sources["quality"], tmp_path)
    assert leftovers(tmp_path) == [] and not (tmp_path / "quality").exists()
    short = {**entries["quality"]["files"][0], "size": 10}
    with pytest.raises(DownloadError, match="bytes, expected 10"):
        get(parse_sources(table(server, quality={"files": [short]}), "test")["quality"], tmp_path)
    assert leftovers(tmp_path) == []


def test_the_git_blob_id_is_what_git_computes_and_is_checked(server, tmp_path):
    data = quality_zip()
    path = tmp_path / "f.zip"
    path.write_bytes(data)
    if shutil.which("git"):
        git = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True)
        assert git_blob_id(path) == git.stdout.strip()
    entries = table(server)
    by_blob = {k: v for k, v in entries["quality"]["files"][0].items() if k not in ("sha256", "size")}
    good = parse_sources(table(server, quality={"files": [{**by_blob, "git_blob": git_blob_id(path)}]}), "test")
    [fetched] = get(good["quality"], tmp_path / "ok")
    assert fetched.checked_by == "git blob id" and fetched.sha256 == sha(data)
    bad = parse_sources(table(server, quality={"files": [{**by_blob, "git_blob": "1" * 40}]}), "test")
    with pytest.raises(DownloadError, match="git blob id [0-9a-f]{40}, expected 1{40}"):
        get(bad["quality"], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_an_interrupted_download_keeps_nothing_and_the_next_get_succeeds(server, tmp_path):
    sources = parse_sources(table(server), "test")
    server.cut.add("/q/QuALITY.v1.0.1.zip")
    with pytest.raises(DownloadError, match="cut short"):
        get(sources["quality"], tmp_path)
    assert leftovers(tmp_path) == []  # no .part file, no half archive, no member
    server.cut.clear()
    get(sources["quality"], tmp_path)
    assert leftovers(tmp_path) == ["quality/QuALITY.v1.0.1.htmlstripped.dev"]
    assert len(load_dataset("quality", tmp_path)) == 6


def test_a_leftover_part_file_of_a_killed_run_is_replaced(server, tmp_path):
    sources = parse_sources(table(server), "test")
    stale = tmp_path / "quality" / ".QuALITY.v1.0.1.zip.part"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(quality_zip()[:100])
    get(sources["quality"], tmp_path)
    assert leftovers(tmp_path) == ["quality/QuALITY.v1.0.1.htmlstripped.dev"]


def test_files_already_present_are_not_downloaded_again_unless_forced(server, tmp_path):
    sources = parse_sources(table(server), "test")
    get(sources["quality"], tmp_path)
    assert server.requests == ["/q/QuALITY.v1.0.1.zip"]
    target = tmp_path / "quality" / "QuALITY.v1.0.1.htmlstripped.dev"
    target.write_bytes(b"edited by hand\n")
    assert get(sources["quality"], tmp_path) == [] and len(server.requests) == 1
    [again] = get(sources["quality"], tmp_path, force=True)
    assert len(server.requests) == 2 and again.written == (target,) and target.read_bytes() == quality_rows()


def test_a_file_without_a_checksum_needs_trust_first_download(server, tmp_path):
    entries = table(server)
    bare = {k: v for k, v in entries["litm-kv"]["files"][0].items() if k != "sha256"}
    sources = parse_sources(table(server, **{"litm-kv": {"files": [bare]}}), "test")
    expected = sha(server.files["/k/kv-retrieval-75_keys.jsonl.gz"])
    with pytest.raises(DownloadError, match=f"no checksum is recorded.*SHA-256 {expected}.*--trust-first-download"):
        get(sources["litm-kv"], tmp_path)
    assert leftovers(tmp_path) == []
    [kept] = get(sources["litm-kv"], tmp_path, trust_first_download=True)
    assert kept.checked_by == "" and kept.sha256 == expected
    assert leftovers(tmp_path) == ["lost-in-the-middle-kv/kv-retrieval-75_keys.jsonl.gz"]


def test_a_missing_archive_member_or_a_broken_archive_extracts_nothing(server, tmp_path):
    entries = table(server)
    zip_file = entries["quality"]["files"][0]
    missing = {**zip_file, "members": {"QuALITY.v1.0.1.htmlstripped.dev": "dev", "QuALITY.v1.0.1.htmlstripped.train":
                                       "train"}}
    with pytest.raises(DownloadError, match="the archive has no QuALITY.v1.0.1.htmlstripped.train"):
        get(parse_sources(table(server, quality={"files": [missing]}), "test")["quality"], tmp_path)
    assert leftovers(tmp_path) == []  # the member that was there was not written either
    server.files["/q/broken.zip"] = broken = b"PK not really a zip"
    not_zip = {**zip_file, "url": f"{server.base}/q/broken.zip", "sha256": sha(broken), "size": len(broken)}
    with pytest.raises(DownloadError, match="the archive cannot be read"):
        get(parse_sources(table(server, quality={"files": [not_zip]}), "test")["quality"], tmp_path)
    assert leftovers(tmp_path) == []


def test_server_errors_and_bad_tables_are_clear(server, tmp_path):
    entries = table(server)
    gone = {**entries["litm-kv"]["files"][0], "url": f"{server.base}/nothing.gz"}
    with pytest.raises(DownloadError, match="the server answered 404"):
        get(parse_sources(table(server, **{"litm-kv": {"files": [gone]}}), "test")["litm-kv"], tmp_path)
    for bad, message in ((("save", "../escape.txt"), "relative path inside"), (("sha256", "abc"), "64 lowercase"),
                         (("unpack", "rar"), "zip or tar"), (("colour", "red"), "unknown field")):
        changed = {**entries["litm-kv"]["files"][0], bad[0]: bad[1]}
        with pytest.raises(DatasetError, match=message):
            parse_sources(table(server, **{"litm-kv": {"files": [changed]}}), "test")


def test_a_group_of_files_from_one_place_is_fetched_and_checked_file_by_file(server, tmp_path):
    """``base`` + ``git_blobs``: the PDFs of the long-PDF sets, one line each."""
    bodies = {"a b.pdf": b"%PDF-1.4 first", "c.pdf": b"%PDF-1.4 second"}
    blobs = {}
    for name, body in bodies.items():
        server.files["/docs/" + name.replace(" ", "%20")] = body
        (tmp_path / "blob").write_bytes(body)
        blobs[name] = git_blob_id(tmp_path / "blob")
    group = {"base": f"{server.base}/docs/", "under": "documents", "git_blobs": blobs}
    entries = {"pdfs": {"title": "t", "folder": "pdfs", "files": [group]}}
    [source] = parse_sources(entries, "test").values()
    assert [f.save for f in source.files] == ["documents/a b.pdf", "documents/c.pdf"]
    fetched = get(source, tmp_path / "d")
    assert [f.checked_by for f in fetched] == ["git blob id"] * 2
    assert leftovers(tmp_path / "d") == ["pdfs/documents/a b.pdf", "pdfs/documents/c.pdf"]
    wrong = {**group, "git_blobs": {**blobs, "c.pdf": "2" * 40}}
    with pytest.raises(DownloadError, match="expected 2{40}"):
        get(parse_sources({"pdfs": {**entries["pdfs"], "files": [wrong]}}, "test")["pdfs"], tmp_path / "e")
    assert leftovers(tmp_path / "e") == ["pdfs/documents/a b.pdf"]  # the checked one stays; a rerun fetches the rest
    for bad, message in (({"base": "no-slash", "git_blobs": blobs}, "ending in /"),
                         ({"base": "http://x/", "git_blobs": {}}, "ending in /"),
                         ({**group, "sha256": "0" * 64}, "unknown field"),
                         ({**group, "under": "../up"}, "relative path inside")):
        with pytest.raises(DatasetError, match=message):
            parse_sources({"pdfs": {"title": "t", "files": [bad]}}, "test")


# --- the CLI ----------------------------------------------------------------------------------------
def test_cli_data_get_list_and_eval_datasets(server, tmp_path, monkeypatch):
    sources_file = tmp_path / "sources.yaml"
    sources_file.write_text(yaml.safe_dump(table(server)))
    monkeypatch.setenv("PAGEMIND_DATA_SOURCES", str(sources_file))
    monkeypatch.delenv("PAGEMIND_DATA", raising=False)
    root = data_root()
    assert root == tmp_path / "home" / "data"  # conftest's PAGEMIND_HOME: the user data directory
    runner = CliRunner()
    before = runner.invoke(cli, ["eval", "datasets"])
    assert before.exit_code == 0
    assert f"data root: {root} (the user data directory; it does not exist yet)" in before.stdout
    assert "  pagemind data get quality  # for quality, quality-long, needle" in before.stdout
    failed = runner.invoke(cli, ["eval", "quality", "-m", "full", "--llm", "fake"])
    assert failed.exit_code == 1 and "run `pagemind data get quality`" in failed.stderr

    result = runner.invoke(cli, ["data", "get", "quality"])
    assert result.exit_code == 0, result.output
    assert f"quality: ready in {root / 'quality'}" in result.stdout
    assert f"SHA-256 {sha(server.files['/q/QuALITY.v1.0.1.zip'])} (checked: SHA-256 and size)" in result.stderr
    assert leftovers(root) == ["quality/QuALITY.v1.0.1.htmlstripped.dev"]
    again = runner.invoke(cli, ["data", "get", "quality"])
    assert again.exit_code == 0 and "already in" in again.stdout and len(server.requests) == 1

    after = runner.invoke(cli, ["eval", "datasets"])
    lines = {line.split()[0]: line for line in after.stdout.splitlines()[1:] if line.strip()}
    assert "found" in lines["quality"] and "found" in lines["needle"] and "missing" in lines["msc"]
    assert "pagemind data get msc" in after.stdout and "data get quality" not in after.stdout
    listing = runner.invoke(cli, ["data", "list"])
    assert f"quality       installed in {root / 'quality'}" in listing.stdout
    assert "msc           not installed" in listing.stdout and "licence: test" in listing.stdout

    server.cut.add("/m/msc.tar.gz")
    cut = runner.invoke(cli, ["data", "get", "msc"])
    assert cut.exit_code == 1 and "cut short" in cut.stderr and not (root / "msc").exists()
    unknown = runner.invoke(cli, ["data", "get", "qualty"])
    assert unknown.exit_code == 1 and "no download source for qualty" in unknown.stderr


def test_cli_data_get_into_data_and_through_a_mirror_with_the_packaged_table(server, tmp_path, monkeypatch):
    """The packaged checksums of MTBench+ hold for the staged byte copies, served under the mirror's layout."""
    staged = STAGED / "mtbench-plus"
    if not (staged / "mtbenchplus.json").exists():
        pytest.skip("staged data absent (../shared/data)")
    source = load_sources({})["mtbench-plus"]
    for file in source.files:
        server.files["/" + file.url.split("://", 1)[1]] = (staged / file.save).read_bytes()
    monkeypatch.setenv("PAGEMIND_DATA_MIRROR", server.base + "/")
    result = CliRunner().invoke(cli, ["data", "get", "mtbench-plus", "--data", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert leftovers(tmp_path / "d") == ["mtbench-plus/mtbenchplus.json", "mtbench-plus/prompts.json"]
    assert len(load_dataset("mtbench-plus", tmp_path / "d")) == 54


def test_the_packaged_table_matches_the_staged_byte_copies():
    sources = load_sources({})
    assert {"quality", "qmsum", "narrativeqa", "govreport", "summscreen", "locomo", "msc", "mtbench-plus",
            "nested-kv", "litm-kv"} <= set(sources)
    unchecked = {"infbench-mc", "pageindex"}  # no digest could be found or computed when written
    pageindex, mmlb = sources["pageindex"], sources["mmlongbench-doc"]
    assert [f.save for f in pageindex.files if not f.checked_by] == ["questions.json"]  # its PDFs are checked
    pdfs = {f.save: f.git_blob for f in mmlb.files if f.save.startswith("documents/")}
    assert len(pdfs) == 134 and all(pdfs[f.save] == f.git_blob for f in pageindex.files[1:])
    assert len(pageindex.files) == 35 and all(f.url.endswith(f.save.removeprefix("documents/"))
                                              for f in pageindex.files)
    for source in sources.values():
        assert source.licence and source.citation and source.checksums and source.homepage
        if source.name in unchecked:  # says so, and keeps a download only with --trust-first-download
            assert "--trust-first-download" in source.checksums, source.name
        else:  # nothing needs --trust-first-download
            assert all(f.checked_by for f in source.files), source.name
        assert all(f.url.startswith(("https://", "http://parl.ai/")) for f in source.files)
    if not STAGED.exists():
        pytest.skip("staged data absent (../shared/data)")
    # the staged files that are byte copies of the upstream ones (their PROVENANCE.md says so; qmsum's are rebuilt)
    copies = [("govreport", "gov_report_summ.jsonl"), ("summscreen", "tv_show_summ.jsonl"),
              ("mtbench-plus", "mtbenchplus.json"), ("mtbench-plus", "prompts.json")]
    for name, saved in copies:
        source = sources[name]
        [file] = [f for f in source.files if f.save == saved]
        copy = STAGED / source.folder / saved
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == file.sha256, copy
        assert copy.stat().st_size == file.size and git_blob_id(copy) == file.git_blob
