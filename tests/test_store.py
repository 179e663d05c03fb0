"""The store's migrations when several processes open a new store at once."""

import multiprocessing

from pagemind import Store


def _open(path, barrier, results):
    barrier.wait()  # every process migrates the same fresh file at the same moment
    try:
        store = Store(path)
        store.close()
        results.put("ok")
    except Exception as err:  # noqa: BLE001 - reported to the parent
        results.put(f"{type(err).__name__}: {err}")


def test_processes_opening_a_new_store_together_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(str(tmp_path / "new.db"), barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok"] * 4
    store = Store(tmp_path / "new.db")  # and the schema is complete once
    from pagemind.store.migrations import MIGRATIONS

    names = [r[0] for r in store._db.execute("SELECT name FROM _pagemind_migrations")]
    assert sorted(names) == sorted(fn.__name__ for fn in MIGRATIONS)
    store.close()
