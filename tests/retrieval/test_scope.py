"""Scoped search: metadata filters parsed and resolved alike everywhere (pure), then on Milvus Lite through the four
surfaces (CLI options, the HTTP API on a real uvicorn, the debugger's lookup, the agent's tool), which must agree;
tags (which land in the chunk rows' labels Milvus filters on), front matter, a filter matching nothing, unknown
keys and injection-shaped values."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rag_core.agent.kb_tool import knowledge_base_tool
from rag_core.cli import build_parser
from rag_core.cli.options import lookup_overrides
from rag_core.errors import RagError, RetrievalError
from rag_core.kb.tags import metadata, tag
from rag_core.records import StoredDocument
from rag_core.retrieval.scope import Scope, document_labels, front_matter, parse_scope, resolve, split_terms
from rag_core.service.app import create_app
from tests.helpers import SAMPLE_KB, make_workbench
from tests.service import live
from ui.lookup import cached_lookup


def doc(doc_id: str, ext: str = "md", at: str = "2026-12-01T10:00:00+00:00", chunks: int = 3) -> StoredDocument:
    return StoredDocument(doc_id, doc_id.rpartition("/")[2], ext, 10, chunks, "h", "v", at)


DOCS = [doc("runbooks/cpu.md"), doc("runbooks/db/slow.md"), doc("runbooks2/x.md"), doc("top.txt", "txt"),
        doc("product/order.md", at="2026-11-30T09:00:00+00:00")]


def ids(scope: Scope, labels=None) -> list[str]:
    return list(resolve(scope, DOCS, labels or {}).doc_ids)


def test_folder_is_a_prefix_one_key_or_different_keys_and():
    assert ids(parse_scope(["folder=runbooks/"])) == ["runbooks/cpu.md", "runbooks/db/slow.md"]  # not runbooks2
    assert ids(parse_scope(["folder=runbooks"])) == ["runbooks/cpu.md", "runbooks/db/slow.md"]
    assert ids(parse_scope(["folder="])) == ["top.txt"]  # the top folder only
    assert ids(parse_scope(["type=txt", "type=.MD", "folder=product/"])) == ["product/order.md"]
    assert ids(parse_scope(["ingested=2026-11"])) == ["product/order.md"]
    labels = {"runbooks/cpu.md": {"team": ("sre",)}, "top.txt": {"team": ("dba", "sre")}}
    assert ids(parse_scope(["team=sre"]), labels) == ["runbooks/cpu.md", "top.txt"]
    assert ids(parse_scope(["team=sre", "type=txt"]), labels) == ["top.txt"]
    resolution = resolve(parse_scope(["team=nobody"]), DOCS, labels)
    assert resolution.doc_ids == () and resolution.removed == 5 and resolution.chunks_removed == 15
    assert "The filter team=nobody matches no document (of 5): nothing was searched." in resolution.warning


@pytest.mark.parametrize(("items", "message"), [
    (["folder"], "Filter 'folder' is not key=value"),
    (["=x"], "Filter '=x' is not key=value"),
    (['x" or id != "=1'], "is not key=value"),
    (["owner=me"], "Unknown filter key 'owner'. Known keys: folder, type, ingested, team."),
    (["ingested=2026-1"], "Filter ingested=2026-1: give a year, month, day, hour or minute of the ingest time"),
])
def test_a_malformed_filter_or_an_unknown_key_is_one_line_listing_the_known_keys(items, message):
    with pytest.raises(RagError, match=message.replace("(", r"\(").replace(".", r"\.")):
        resolve(parse_scope(items), DOCS, {"top.txt": {"team": ("sre",)}})


def test_front_matter_fields_are_read_as_text():
    text = "---\nservice: order\nowners: [ana, 'bo b']\ntags:\n  - a\n  - b\nnested: {x: 1}\nfolder: no\n---\n# T\n"
    assert front_matter(text) == {"service": ("order",), "owners": ("ana", "bo b"), "tags": ("a", "b")}
    assert front_matter("# no front matter\nservice: x\n") == {}


# ------------------------------------------------------------------------------------------- on Milvus Lite
QUERY = "disk space cleanup"
INJECTION = 'x" or doc_id != "'


@pytest.fixture(scope="module")
def wb(tmp_path_factory, local_embedder, milvus):
    folder = tmp_path_factory.mktemp("scope-src")
    (folder / "runbooks").mkdir()
    for name in ("cpu_high.md", "disk_full.md"):
        (folder / "runbooks" / name).write_bytes((SAMPLE_KB / "runbooks" / name).read_bytes())
    (folder / "product").mkdir()
    (folder / "product" / "order_service.md").write_text(
        "---\nservice: order\nteam: payments\n---\n" + (SAMPLE_KB / "product" / "order_service.md").read_text())
    workbench = make_workbench(Path(tmp_path_factory.mktemp("scope-kb")), local_embedder)
    assert all(r.status == "added" for r in workbench.ingestor.ingest_paths([folder]))
    yield workbench
    workbench.close()


@pytest.fixture(scope="module")
def api(wb):
    server = live.start(create_app(wb, token="", env={}))
    yield server
    server.stop()


def evidence_of(data) -> list[str]:
    return [e["evidence_key"] for e in data["evidence"]]


def surfaces(wb, api, filters: list[str]) -> tuple[dict, dict]:
    """The same filter through the CLI's options, the HTTP API, the debugger's lookup and the agent's tool: their
    evidence must agree. Returns the CLI's and the API's answers."""
    args = build_parser().parse_args(["search", QUERY, *(f"--filter={f}" for f in filters)])
    cli = wb.retriever.lookup(QUERY, **lookup_overrides(args, wb.settings)).to_dict()
    http = httpx.get(f"{api.url}/v1/search", params=[("query", QUERY), *(("filter", f) for f in filters)],
                     timeout=60).json()
    debugger, _ = cached_lookup(wb.retriever, QUERY, wb.retriever.params(scope=parse_scope(" ".join(filters).split())),
                                {})
    tool = knowledge_base_tool(wb.retriever, filter_keys=("folder", "team")).fn(QUERY, filter=filters)
    assert evidence_of(cli) == evidence_of(http) == evidence_of(debugger.to_dict())
    assert [r["document_id"] for r in tool.data["results"]] == [p.document_id for p in debugger.projection.items]
    return cli, http


@pytest.mark.milvus
def test_cli_api_debugger_and_agent_give_the_same_result_for_the_same_filter(wb, api):
    tag(wb.store, "runbooks/disk_full.md", ["team=sre", "tier=1"])
    assert metadata(wb.store)["product/order_service.md"]["service"] == ["order"]  # from the front matter
    filters = ["folder=runbooks/", "team=sre", "team=payments"]
    cli, http = surfaces(wb, api, filters)
    assert {k.partition("#")[0] for k in evidence_of(cli)} == {"runbooks/disk_full.md"}  # folder AND team
    assert cli["scope"] == http["scope"] == {"filter": {"folder": ["runbooks/"], "team": ["sre", "payments"]},
                                              "documents": 3, "matched": 1, "removed": 2,
                                              "chunks_removed": cli["scope"]["chunks_removed"]}
    assert cli["scope"]["chunks_removed"] > 0 and cli["params"]["filter"] == http["params"]["filter"]
    # a tag moved through the API lands in the chunk rows Milvus filters: every surface follows at once
    for doc_id, team in (("runbooks/disk_full.md", []), ("runbooks/cpu_high.md", ["sre"])):
        answer = httpx.post(f"{api.url}/v1/documents/{doc_id}/tags", json={"tags": {"team": team}}, timeout=60)
        assert answer.status_code == 200
    assert all("team=sre" in c.labels for c in wb.store.get_chunks("runbooks/cpu_high.md"))
    assert not any("team=sre" in c.labels for c in wb.store.get_chunks("runbooks/disk_full.md"))
    cli, http = surfaces(wb, api, filters)
    assert {k.partition("#")[0] for k in evidence_of(cli)} == {"runbooks/cpu_high.md"}
    assert cli["scope"]["matched"] == http["scope"]["matched"] == 1
    tag(wb.store, "runbooks/cpu_high.md", ["team="])


@pytest.mark.milvus
def test_a_filter_matching_nothing_warns_and_searches_nothing(wb, api):
    result = wb.retriever.lookup(QUERY, scope=parse_scope([f"folder={INJECTION}"]))
    assert not result.traces and "matches no document (of 3): nothing was searched" in result.warnings[0]
    http = httpx.get(f"{api.url}/v1/search", params={"query": QUERY, "filter": f"team={INJECTION}"}, timeout=60)
    assert http.status_code == 200 and http.json()["raw_hits"] == [] and http.json()["warnings"]


@pytest.mark.milvus
def test_injection_shaped_tags_and_doc_ids_stay_literals(wb):
    tag(wb.store, "product/order_service.md", [f"team={INJECTION}"])
    result = wb.retriever.lookup(QUERY, scope=parse_scope([f"team={INJECTION}"]))
    assert {t.doc_id for t in result.traces} == {"product/order_service.md"}
    # the labels filter the scope becomes is escaped by the store: a quote-laden value is one literal, matching the
    # rows carrying exactly it, and nothing rather than everything otherwise
    assert {h.metadata["doc_id"] for h in wb.store.search_bm25("order", 10, {"labels": [f"team={INJECTION}"]})} == {
        "product/order_service.md"}
    for value in (INJECTION[:-1], 'x" or 1==1 or "', "x\\", 'x"]) or (["', "payments\\"):
        assert wb.store.search_bm25("disk order", 10, {"labels": [f"team={value}"]}) == []
    assert wb.store.search_bm25("disk", 10, {"doc_id": [INJECTION]}) == []
    tag(wb.store, "product/order_service.md", ["team="])


@pytest.mark.milvus
def test_unknown_keys_and_bad_tags_are_clear_errors_on_every_surface(wb, api):
    with pytest.raises(RagError, match="Unknown filter key 'owner'. Known keys: folder, type, ingested, service"):
        wb.retriever.lookup(QUERY, scope=parse_scope(["owner=me"]))
    answer = httpx.get(f"{api.url}/v1/search", params={"query": QUERY, "filter": "owner=me"}, timeout=60)
    assert answer.status_code == 400 and "Known keys: folder, type, ingested" in answer.text
    answer = httpx.get(f"{api.url}/v1/search", params={"query": QUERY, "filter": "nonsense"}, timeout=60)
    assert answer.status_code == 400 and "is not key=value" in answer.text
    tool = knowledge_base_tool(wb.retriever, filter_keys=("folder",)).fn(QUERY, filter=["team=sre"])
    assert "Unknown filter key 'team'. Known keys: folder." in str(tool.data)
    answer = httpx.post(f"{api.url}/v1/documents/runbooks/cpu_high.md/tags", json={"tags": {"folder": ["x"]}},
                        timeout=60)
    assert answer.status_code == 400 and "is built in" in answer.text
    answer = httpx.post(f"{api.url}/v1/documents/runbooks/cpu_high.md/tags", json={"tags": {"owner": ["ana"]}},
                        timeout=60)
    assert answer.status_code == 200 and answer.json()["metadata"]["owner"] == ["ana"]
    assert httpx.get(f"{api.url}/v1/metadata", timeout=60).json()["keys"][:3] == ["folder", "type", "ingested"]
    assert httpx.post(f"{api.url}/v1/documents/nope.md/tags", json={"tags": {"a": ["b"]}},
                      timeout=60).status_code == 404


def test_a_value_holding_spaces_is_given_in_quotes_and_an_open_quote_is_one_clear_error() -> None:
    assert split_terms('folder=runbooks/  team="site reliability" type=md') == [
        "folder=runbooks/", "team=site reliability", "type=md"]
    assert parse_scope(split_terms('team="site reliability"')) == parse_scope(["team=site reliability"])
    with pytest.raises(RetrievalError, match=r"^Filter 'team=\"site': No closing quotation; quote a value holding "
                                             r"spaces, e\.g\. team=\"site reliability\"\.$"):
        split_terms('team="site')


def test_a_scope_asks_for_the_labels_a_documents_rows_carry():
    at = "2026-12-01T10:20:30+00:00"
    labels = document_labels("runbooks/db/slow.md", "MD", at, {"team": ("sre",), "type": ("x",)})
    assert labels[:3] == ("folder=runbooks", "folder=runbooks/db", "type=md")
    cuts = [f"ingested={at[:n]}" for n in (4, 7, 10, 13, 16, 19, 25)]
    assert [x for x in labels if x.startswith("ingested=")] == cuts
    assert "team=sre" in labels
    assert "type=x" not in labels and document_labels("top.txt", "txt", "")[0] == "folder="
    assert parse_scope(["folder=/runbooks/db/", "type=.MD", "team=a=b"]).labels() == [
        "folder=runbooks/db", "team=a=b", "type=md"]
