"""A real PostgreSQL with pgvector for the tests: one server per test session from the ``pgserver`` wheel (it
bundles PostgreSQL 16 and pgvector; nothing is downloaded), one fresh database per test.

Use it by importing the fixtures into a test module: ``from pg import pg_server, pg_url  # noqa: F401``."""

import itertools
import shutil
import tempfile
import time
from pathlib import Path

import pytest

_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """The server (skipped when pgserver is not installed: ``pip install 'pagemind[test]'``)."""
    try:
        import pgserver
    except ImportError:
        pytest.skip("Postgres tests need the pgserver package (pip install 'pagemind[test]')")
    pytest.importorskip("psycopg", reason="Postgres tests need psycopg (pip install 'pagemind[postgres]')")
    started = time.perf_counter()
    # not under pytest's own temporary directory: as root, pgserver runs the server as another user, who must be
    # able to reach the data directory
    home = Path(tempfile.mkdtemp(prefix="pagemind-pg-"))
    home.chmod(0o755)
    server = pgserver.get_server(home, cleanup_mode="stop")
    server.started_in = time.perf_counter() - started
    from pagemind.store.postgres import PostgresStore

    PostgresStore(new_database(server, "pagemind_template")).close()  # migrated once; each test copies it
    yield server
    server.cleanup()
    shutil.rmtree(home, ignore_errors=True)


def _url(server, name):
    base, _, query = server.get_uri().partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


def new_database(server, name: str | None = None, template: str | None = None) -> str:
    """A new database on the server (empty, or a copy of ``template``); its URL."""
    import psycopg

    name = name or f"t{next(_numbers)}_{int(time.time() * 1000) % 100000}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    return _url(server, name)


def drop_database(server, url: str) -> None:
    import psycopg

    name = url.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(pg_server):
    """The URL of a fresh database with pagemind's schema, dropped after the test."""
    url = new_database(pg_server, template="pagemind_template")
    yield url
    drop_database(pg_server, url)


@pytest.fixture
def pg_empty_url(pg_server):
    """The URL of a fresh empty database (nothing migrated), dropped after the test."""
    url = new_database(pg_server)
    yield url
    drop_database(pg_server, url)
