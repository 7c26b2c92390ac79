"""Fixtures shared by every test package, and the unit run. Keep this small: packages add their own conftest.py.

`pytest --unit` (`make test-unit`, the edit-run loop) runs the quick tests that need neither Milvus nor a browser:
it leaves out the tests marked `e2e`, `milvus` and `slow` (OCR, decompression bombs, property tests: seconds each,
and CPU that the loop is better without; `make test` runs them). A test is marked `milvus` when it, or a fixture it
uses, requests the `milvus` fixture below (every fixture that opens Milvus does), or by hand (`@pytest.mark.milvus`,
`pytestmark`) when it opens Milvus itself (make_workbench, an AppTest of a page, a CLI that indexes). A test left
unmarked that starts Milvus Lite anyway fails in the unit run (rag_core.store.lite.internals.FORBID_ENV), in this
process and in the processes it starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from rag_core.embedding.local import TEST_CACHE_ENV, LocalUSEEmbedder
from rag_core.store.lite.internals import FORBID_ENV

# Milvus Lite: each test's throw-away database is opened by the test process itself (exclusive mode),
# including CLI subprocesses, which inherit this; no store host is started per temporary database.
# Settings built with `env={}` still get the users' default (shared, through a store host): the tests of
# that mode ask for it, and the hosts this session started are stopped at its end.
os.environ.setdefault("RAG_MILVUS_LITE_MODE", "exclusive")
# A subprocess that does go through a store host (`--set milvus.lite-mode=shared`) leaves none running: its host
# stops when its last client leaves (tests that need a host to outlive a command set milvus.host-idle).
os.environ.setdefault("RAG_MILVUS_HOST_IDLE", "0")

# Property tests are bounded by their number of examples, not by seconds: no deadline per example, and no "data
# generation is too slow" health check, both of which a loaded machine trips (a test's own settings add to this).
hypothesis_settings.register_profile("workbench", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("workbench")


@pytest.fixture(scope="session", autouse=True)
def _stop_store_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    from rag_core.store.lite.host_client import stop_all_under, stop_started

    stop_started()
    stop_all_under(tmp_path_factory.getbasetemp())  # also those started by the tests' subprocesses


@pytest.fixture(scope="session")
def local_embedder() -> LocalUSEEmbedder:
    """The real bundled embedder, loaded once per test session (~0.7 s)."""
    return LocalUSEEmbedder()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--unit", action="store_true",
                     help="only the quick tests that use neither Milvus nor a browser (make test-unit): not those "
                          "marked milvus, e2e or slow; a test that starts Milvus Lite fails")


_EMBEDDING_CACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--unit"):
        os.environ[FORBID_ENV] = "1"  # inherited by the CLIs and servers the tests start
    # The local embedder's vectors, kept by text for this session (rag_core.embedding.local.TEST_CACHE_ENV): the
    # sample knowledge base and the other corpora are embedded once, then read back by every fixture, CLI and app
    # server (xdist's workers and the processes the tests start inherit the folder). tests/embedding opts out.
    if not os.environ.get(TEST_CACHE_ENV):
        os.environ[TEST_CACHE_ENV] = tempfile.mkdtemp(prefix="rag-test-embeddings-")
        config.stash[_EMBEDDING_CACHE] = os.environ[TEST_CACHE_ENV]


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_EMBEDDING_CACHE, None)
    if folder:  # the process that made it (with xdist, the controller, after its workers)
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(TEST_CACHE_ENV, None)



UNIT_LEAVES_OUT = ("milvus", "e2e", "slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "milvus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.milvus)
    if config.getoption("--unit"):
        kept = [i for i in items if not any(i.get_closest_marker(m) for m in UNIT_LEAVES_OUT)]
        if len(kept) < len(items):
            kept_ids = set(map(id, kept))
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept_ids])
            items[:] = kept


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the session's real-browser tests (tests/e2e/conftest.py: Debian's, never
    `playwright install`); each test opens a context of its own."""
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, _chromium_or_skip

    _chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    # An assertion (`expect(...)`) waits as long as the tests' actions do (their contexts' default timeout), not
    # Playwright's 5 s: a rerun of a page on a loaded machine can take longer than that.
    expect.set_options(timeout=30_000)

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# The real-browser tests: one xdist work unit (pytest_xdist_make_scheduler), sent first.
BROWSER_FILES = ("tests/e2e/", "tests/store/lite/test_host_app.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (make test) with the real-browser test files as one unit, given to a worker first: one
    Chromium and one seeded app server per run instead of one per worker, and the slowest unit does not start
    last (xdist orders the other files by their number of tests, so files of a few long tests came last)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BrowserFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "real-browser tests" if scope.startswith(BROWSER_FILES) else scope

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001
            if "real-browser tests" in self.workqueue:
                self.workqueue.move_to_end("real-browser tests", last=False)
            super()._assign_work_unit(node)

    return BrowserFirst(config, log)


@pytest.fixture(scope="session")
def milvus() -> None:
    """Nothing to set up: requesting it says "this opens Milvus". Fixtures that open Milvus Lite (or a Milvus
    server) request it, so their tests get the `milvus` marker and stay out of `pytest --unit`."""


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    """A real PostgreSQL for this session (this xdist worker), from Debian's package (tests/postgres.py); stopped
    at the end even when a test fails. Fails, never skips, when PostgreSQL is not installed."""
    from tests.postgres import PostgresServer

    try:
        server = PostgresServer()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server) -> str:  # noqa: ANN001
    """The session's server, as a URL of its `postgres` database (make a database of your own: `postgres_db`)."""
    return postgres_server.url


@pytest.fixture
def postgres_db(postgres_server) -> Iterator[str]:  # noqa: ANN001
    """A new, empty database on the session's PostgreSQL for this test, dropped after it."""
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop_database(url)
