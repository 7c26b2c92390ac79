from pathlib import Path

import pytest

from tests.helpers import SAMPLE_KB, make_workbench


@pytest.fixture(scope="package")
def sample_wb(tmp_path_factory, local_embedder, milvus):
    """The sample knowledge base in Milvus Lite with the real local embedder (read-only for tests)."""
    wb = make_workbench(Path(tmp_path_factory.mktemp("sample")), embedder=local_embedder)
    reports = wb.ingestor.ingest_paths([SAMPLE_KB])
    assert all(r.status == "added" for r in reports), reports
    yield wb
    wb.close()
