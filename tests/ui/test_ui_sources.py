"""The knowledge base page's Sources section (issue 38), in AppTest: an admin of every knowledge base adds a folder
source and syncs it (its documents indexed, the sync audited), the knowledge base's own admin cannot add a folder of
this machine's files, the schedule is changed after the source was added, a reader sees the sources and their last
sync with the actions disabled."""

from __future__ import annotations

from pathlib import Path

from rag_core.access.records import ALL, Role
from rag_core.bootstrap import Workbench, build_source_book
from tests.ui.test_ui_access import DEFAULT, KB_PAGE, on_page, required, start, store, user  # noqa: F401 (fixtures)


def add_folder(at, folder: Path, name: str):
    at.selectbox(key="kb.source_type").select("folder")
    at.text_input(key="kb.source_location").input(str(folder))
    at.text_input(key="kb.source_name").input(name)
    at.number_input(key="kb.source_every").set_value(30)
    at.button[[b.label for b in at.button].index("Add the source")].click().run()
    assert not at.exception, at.exception
    return at


def test_add_and_sync_a_folder_source_and_who_may_do_what(fresh_kb: Workbench, required,  # noqa: F811
                                                           tmp_path: Path) -> None:
    folder = tmp_path / "runbooks"
    folder.mkdir()
    for name in ("disk.md", "cpu.md"):
        (folder / name).write_text(f"# {name}\n\nWhat to do about {name[:-3]}.\n", encoding="utf-8")

    kb_admin = add_folder(on_page(start(user(required, "kim", **{DEFAULT: Role.ADMIN})), KB_PAGE), folder, "rb")
    assert "needs the admin role on every knowledge base" in " ".join(str(e.value) for e in kb_admin.error)

    at = add_folder(on_page(start(user(required, "ann", **{ALL: Role.ADMIN})), KB_PAGE), folder, "rb")
    assert [s.value for s in at.selectbox if s.key == "kb.source"] == ["rb"]
    assert fresh_kb.settings and build_source_book(fresh_kb.settings).get("rb").every == 30  # synced by serve
    at.button(key="kb.source_sync").click().run()
    assert not at.exception, at.exception
    assert "2 added" in " ".join(str(s.value) for s in at.success)
    assert {d.doc_id for d in fresh_kb.store.list_documents()} == {"rb/disk.md", "rb/cpu.md"}
    assert [e.action for e in required.audit(action="sources.")] == ["sources.sync", "sources.add"]  # newest first

    at.number_input(key="kb.source_every.rb").set_value(60).run()  # the schedule changed after it was added
    assert not at.exception, at.exception
    assert build_source_book(fresh_kb.settings).get("rb").every == 60
    assert required.audit(action="sources.")[0].action == "sources.set"

    reader = on_page(start(user(required, "bob", **{DEFAULT: Role.READER})), KB_PAGE)
    assert reader.button(key="kb.source_sync").disabled and reader.button(key="kb.source_remove").disabled
    assert not [t for t in reader.text_input if t.key == "kb.source_location"]  # no add form
    assert reader.number_input(key="kb.source_every.rb").disabled
