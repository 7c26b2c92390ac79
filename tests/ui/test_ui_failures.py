"""Failures page (AppTest): 👎 turns newest first, filtered by date, opened in the debugger with their query and
parameters, and added to a named test set with the chunk they should have found."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

from rag_core.config import load_settings
from rag_core.evaluation.testsets import load_test_set, saved_sets_dir
from rag_core.feedback import FILE_NAME, Lookup, TurnRecord, TurnStore
from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/failures.py"
QUESTION = "How do I free disk space on a full node? (failures page)"


def _seed() -> TurnStore:
    settings = load_settings()
    store = TurnStore(settings.data_dir / FILE_NAME)
    params = {"retrieve_k": 7, "return_n": 3, "max_chunks_per_document": 1, "search_mode": "bm25"}
    for rating, question in ((1, "a good answer (failures page)"), (-1, QUESTION)):
        turn = store.add(TurnRecord(os.urandom(8).hex(), question, "Delete the order service logs.", ("biz",),
                                    (Lookup("free disk space", params, ("product/order_service.md#chunk-0",),
                                            candidates=("product/order_service.md#chunk-0",
                                                        "runbooks/disk_full.md#chunk-1")),),
                                    ("product/order_service.md#chunk-0",), (), "", "offline", 0.2,
                                    os.urandom(16).hex(), user_name="ann"))
        store.rate(rating, "wrong runbook" if rating < 0 else "", trace_id=turn.trace_id)
    return store


def test_failures_open_in_the_debugger_and_become_test_items(kb) -> None:
    _seed()
    at = app_at(PAGE)
    table = at.dataframe[0].value
    assert QUESTION in list(table["question"]) and "a good answer (failures page)" not in list(table["question"])
    assert table["question"].iloc[0] == QUESTION  # newest first
    (link,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "debugger" in p.proto.page]
    assert link["q"] == ["free disk space"] and link["retrieve_k"] == ["7"] and link["mode"] == ["bm25"]
    assert link["kb"] == ["biz"]
    assert "wrong runbook" in texts(at)
    assert table["asked by"].iloc[0] == "ann" and "ann" in at.selectbox(key="fail.user").options

    at.selectbox(key="fail.expected").set_value("runbooks/disk_full.md#chunk-1")
    at.text_area(key="fail.answer").set_value("Clean up old logs under /var/log.")
    at.text_input(key="fail.new_set").set_value("from-failures")
    next(b for b in at.button if b.label == "Add to the test set").click().run()
    assert not at.exception, at.exception
    assert "Added to test set **from-failures**" in texts(at, "success")
    (item,) = load_test_set(saved_sets_dir(load_settings()), "from-failures").items
    assert (item.query, item.relevant, item.source, item.answers) == (
        QUESTION, ("runbooks/disk_full.md",), "runbooks/disk_full.md#chunk-1", ("Clean up old logs under /var/log.",))
    why = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "retrieved" in p.proto.label]
    assert why and why[0]["expect"] == ["runbooks/disk_full.md"] and why[0]["answer"] == [item.answers[0]]
    _evaluate(kb, "from-failures")


def _evaluate(kb, name: str) -> None:
    """What `eval NAME` and `eval answers NAME --offline` run, on the page's knowledge base."""
    from rag_core.bootstrap import build_agent, factories
    from rag_core.evaluation.answers import score_answers
    from rag_core.evaluation.runner import Grid, run_evaluation
    from rag_core.evaluation.testsets import load_set

    settings = kb.settings
    eval_set = load_set(name, live=True, saved=saved_sets_dir(settings))
    run = run_evaluation(eval_set, Grid.from_settings(settings), settings, factories=factories(),
                         knowledge_bases=[kb]).to_dict()
    (query,) = run["points"][0]["queries"]
    assert (run["set"], query["query"], query["relevant"]) == (name, QUESTION, ["runbooks/disk_full.md"])
    answers = score_answers(build_agent(kb, record=False), load_test_set(saved_sets_dir(settings), name))
    assert answers.summary["items"] == 1 and answers.items[0]["query"] == QUESTION


def test_a_date_range_without_failures_says_so(kb) -> None:
    _seed()
    at = app_at(PAGE)
    long_ago = datetime.now(UTC).date() - timedelta(days=400)
    at.date_input(key="fail.dates").set_value((long_ago, long_ago + timedelta(days=1))).run()
    assert not at.exception, at.exception
    assert "No 👎 answers here" in texts(at, "info")


def test_the_knowledge_base_filter_keeps_that_knowledge_bases_failures(kb) -> None:
    _seed()
    store = TurnStore(load_settings().data_dir / FILE_NAME)
    other = store.add(TurnRecord(os.urandom(8).hex(), "asked of another knowledge base (failures page)", "no",
                                 ("elsewhere",), trace_id=os.urandom(16).hex()))
    store.rate(-1, trace_id=other.trace_id)
    at = app_at(PAGE)
    assert other.question in list(at.dataframe[0].value["question"])
    at.selectbox(key="fail.kb").set_value(kb.settings.kb_name).run()
    assert not at.exception, at.exception
    questions = list(at.dataframe[0].value["question"])
    assert QUESTION in questions and other.question not in questions


def test_choosing_new_enables_the_name_at_once_and_the_item_lands_in_the_named_set(kb) -> None:
    """With a saved set, "(new)" used to be chosen inside the form: the name field stayed disabled until a submit,
    so the item went into a set called "failures"."""
    from rag_core.evaluation.testsets import TestItem, list_test_sets, save_test_set

    _seed()
    root = saved_sets_dir(load_settings())
    save_test_set(root, "already-there", [TestItem(id="x", query="q", relevant=("runbooks/cpu_high.md",))])
    at = app_at(PAGE)
    _pick_seeded(at)
    assert at.selectbox(key="fail.set").value != "(new)" and at.text_input(key="fail.new_set").disabled
    at.selectbox(key="fail.set").set_value("(new)").run()
    assert not at.exception, at.exception
    assert not at.text_input(key="fail.new_set").disabled  # at once, before anything is submitted
    at.text_input(key="fail.new_set").set_value("named-at-once")
    at.selectbox(key="fail.expected").set_value("runbooks/disk_full.md#chunk-1")
    at.button(key="fail.add").click().run()
    assert not at.exception, at.exception
    assert "Added to test set **named-at-once**" in texts(at, "success")
    (item,) = load_test_set(root, "named-at-once").items
    assert item.relevant == ("runbooks/disk_full.md",)
    assert "failures" not in {s.name for s in list_test_sets(root)}


def test_picking_another_failure_starts_its_item_from_its_own_question(kb) -> None:
    _seed()
    store = TurnStore(load_settings().data_dir / FILE_NAME)
    other = store.add(TurnRecord(os.urandom(8).hex(), "a second failed question (failures page)", "no", ("biz",),
                                 trace_id=os.urandom(16).hex()))
    store.rate(-1, trace_id=other.trace_id)
    at = app_at(PAGE)
    assert at.text_input(key="fail.question").value == other.question  # newest first
    at.text_area(key="fail.answer").set_value("an answer for the second question").run()
    _pick_seeded(at)
    assert at.text_input(key="fail.question").value == QUESTION
    assert at.text_area(key="fail.answer").value == ""


def _pick_seeded(at) -> None:
    """Pick a failure `_seed` made (other tests add failures of their own to the shared store)."""
    picked = next(i for i, label in enumerate(at.selectbox(key="fail.pick").options) if QUESTION[:40] in label)
    at.selectbox(key="fail.pick").set_value(picked).run()
    assert not at.exception, at.exception


def _follow(at, link: dict[str, list[str]], page: str = "pages/debugger.py"):
    """Click a page link: the URL becomes the link's (a page switch in this session)."""
    for name in list(at.query_params):
        del at.query_params[name]
    for name, values in link.items():
        at.query_params[name] = values[0]
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_a_failure_opens_its_lookup_in_the_debugger_not_the_compare_mode_left_there(kb) -> None:
    """The debugger's controls keep their values across pages (bound to the URL, persist_state="session"): a link
    that left compare out reopened compare mode with the earlier B, an earlier filter and expected document."""
    _seed()
    at = app_at("pages/debugger.py", q="disk usage")
    at.text_input(key="filter").set_value("folder=product/").run()
    at.text_input(key="answer").set_value("an answer typed earlier").run()
    at.toggle(key="compare").set_value(True).run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    _pick_seeded(at)
    (link,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "debugger" in p.proto.page]
    assert "compare" not in link and link["replay"] == ["1"]
    _follow(at, link)
    assert at.text_input(key="q").value == "free disk space" and at.slider(key="retrieve_k").value == 7
    assert at.toggle(key="compare").value is False and "kb_b" not in at.query_params
    assert at.text_input(key="filter").value == "" and at.text_input(key="answer").value == ""
    assert "replay" not in at.query_params  # the marker is used once: the next rerun is the person's own
    at.slider(key="return_n").set_value(2).run()
    assert not at.exception, at.exception
    assert at.slider(key="return_n").value == 2 and at.text_input(key="q").value == "free disk space"


def test_why_wasnt_it_retrieved_carries_the_chunk_and_the_right_answer(kb) -> None:
    """A failure whose document is in the evidence but whose answer is not: the debugger must check the answer too,
    or its panel says the document is in the evidence."""
    _seed()
    at = app_at(PAGE)
    _pick_seeded(at)
    at.selectbox(key="fail.expected").set_value("runbooks/disk_full.md#chunk-1")
    at.text_area(key="fail.answer").set_value("Clean up old logs under /var/log.").run()
    assert not at.exception, at.exception
    (why,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "retrieved" in p.proto.label]
    assert (why["expect"], why["expect_chunk"], why["answer"], why["replay"]) == (
        ["runbooks/disk_full.md"], ["1"], ["Clean up old logs under /var/log."], ["1"])
    _follow(at, why)
    assert at.selectbox(key="expect").value == "runbooks/disk_full.md"
    assert at.number_input(key="expect_chunk").value == 1
    assert at.text_input(key="answer").value == "Clean up old logs under /var/log."


def test_the_success_line_links_to_the_evaluation_page_with_the_set_and_knowledge_base_chosen(kb) -> None:
    """The success line used to send the person to the command line (`python -m rag_core eval ... --live`): it links
    to the Evaluation page, which opens with the saved set and the failure's knowledge base chosen; the command stays
    as a secondary hint."""
    _seed()
    at = app_at("pages/evaluation.py")  # visited before: its widgets had values of their own
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    _pick_seeded(at)
    at.selectbox(key="fail.set").set_value("(new)").run()
    at.text_input(key="fail.new_set").set_value("linked-set")
    at.selectbox(key="fail.expected").set_value("runbooks/disk_full.md#chunk-1")
    at.button(key="fail.add").click().run()
    assert not at.exception, at.exception
    assert texts(at, "success") == "Added to test set **linked-set**."  # no command in the success line
    (link,) = [p for p in at.get("page_link") if "evaluation" in p.proto.page]
    assert link.proto.label == "Run linked-set on the Evaluation page"
    assert "python -m rag_core eval" in texts(at, "caption") and "--live" in texts(at, "caption")
    _follow(at, {}, "pages/evaluation.py")
    assert at.radio(key="eval_source").value == "Saved test set"
    assert at.selectbox(key="eval_saved_set").value == "linked-set"
    assert at.multiselect(key="eval_saved_kbs").value == ["biz"]


def test_a_failed_follow_up_opens_in_the_debugger_with_the_turns_before_it(kb) -> None:
    """The turns store keeps each turn's session and place in it: the turns asked before a 👎 follow-up go to the
    debugger's "Previous turns" box (a failed turn is left out, as the agent left it out); a turn whose earlier
    turns are no longer kept opens with the box empty."""
    store = TurnStore(load_settings().data_dir / FILE_NAME)
    session = os.urandom(8).hex()
    params = {"retrieve_k": 7, "return_n": 3, "max_chunks_per_document": 1, "search_mode": "hybrid"}
    asked = [("How do I free disk space on a full node?", "Clean the journal [disk_full.md#chunk-1]", None),
             ("And the order service?", "", "the chat model failed"),
             ("What is the first step? (a follow-up)", "Delete the order service logs.", None)]
    for question, answer, error in asked:
        turn = store.add(TurnRecord(session, question, answer, ("biz",), (Lookup(question, params, ()),),
                                    trace_id=os.urandom(16).hex(), error=error))
    store.rate(-1, "lost the topic", trace_id=turn.trace_id)
    at = app_at(PAGE)
    picked = next(i for i, label in enumerate(at.selectbox(key="fail.pick").options) if "(a follow-up)" in label)
    at.selectbox(key="fail.pick").set_value(picked).run()
    (link,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "debugger" in p.proto.page]
    assert link["history"] == ["user: How do I free disk space on a full node?\n"
                               "assistant: Clean the journal [disk_full.md#chunk-1]"]
    expected = at.selectbox(key="fail.expected")
    expected.set_value(expected.options[0]).run()
    (why,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "retrieved" in p.proto.label]
    assert why["history"] == link["history"]
    _follow(at, link)
    assert at.text_area(key="history").value == link["history"][0]
    assert "**Asked:** What is the first step? (a follow-up)" in texts(at)

    _seed()  # a turn with nothing before it in its session
    at = app_at(PAGE)
    _pick_seeded(at)
    (link,) = [parse_qs(p.proto.query_string) for p in at.get("page_link") if "debugger" in p.proto.page]
    assert "history" not in link
