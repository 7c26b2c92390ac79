"""The offline generator's templates (rag_core/evaluation/generate/questions.py), without a store: which sentences
an answer may quote, and the questions made from headings, sentences and terms, in Chinese and English."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_core.evaluation.generate.questions import (
    answer_sentences,
    clean_heading,
    heading_question,
    sentence_question,
    terms_question,
)


def rng() -> random.Random:
    return random.Random("test")


def test_answers_are_whole_sentences_of_the_chunk() -> None:
    content = ("### Expanding a PVC\n\n"
               "Expand by 50% of the current size, and record the change in the capacity ticket.\n"
               "Run the following command:\n"
               "```bash\nkubectl patch pvc data -p '{\"spec\": 1}'\n```\n"
               "| Alert | Condition | Pages? |\n|---|---|---|\n| `DiskSpaceLow` | less than 15% free. | no |\n"
               "If the volume is still full after that, then skip it with\n"
               "the flag described below.\n"
               "Never shrink a PVC: Kubernetes cannot do it, and the next")
    assert answer_sentences(content) == [
        "Expand by 50% of the current size, and record the change in the capacity ticket."]
    # the chunk's own first sentence is whole when the chunk is the document's first; in a later chunk one that
    # starts without a capital began in the previous chunk (the overlap cut into it)
    assert answer_sentences("the gateway retries twice. Retries stop after 30 seconds.", first_chunk=False) == [
        "Retries stop after 30 seconds."]
    assert answer_sentences("cGAS activates IRF3 in cells. It needs STING.", first_chunk=True)[0].startswith("cGAS")
    zh = ("滚动重启会逐个替换 Pod，不会中断服务：\n执行完成后，确认新的 Pod 都处于 Running 状态。\n"
          "告警规则 | 90% | 15 分钟")
    assert answer_sentences(zh) == ["执行完成后，确认新的 Pod 都处于 Running 状态。"]
    assert answer_sentences("Retries stop after 30 seconds (see “Timeouts”).") == [
        "Retries stop after 30 seconds (see “Timeouts”)."]


@pytest.mark.parametrize(("path", "lang", "question"), [
    (["Runbook: CPU Usage High", "Step 2: Find the Workload"], "en", "How do I find the workload?"),
    (["Runbook: Disk Space Low", "What You Must Not Delete"], "en", "What must you not delete?"),
    (["SuperBiz Incident Response Policy", "When a Postmortem Is Required"], "en", "When is a postmortem required?"),
    (["Order Service", "Latency Is High"], "en", "What should I do when latency is high?"),
    (["Order Service"], "en", "What is the Order Service?"),
    (["Runbook: Disk Space Low"], "en", "What does the Disk Space Low runbook cover?"),
    (["向量检索服务说明", "为什么同一个问题两次检索的结果顺序略有不同？"], "zh",
     "为什么同一个问题两次检索的结果顺序略有不同？"),
    (["值班制度", "为什么确认时限是 5 分钟"], "zh", "为什么确认时限是 5 分钟？"),
])
def test_a_heading_that_asks_or_names_a_task_becomes_its_question(path, lang, question) -> None:
    assert heading_question(path, lang, rng()) == question


def test_a_topic_heading_asks_what_the_document_says_of_it_or_its_rules() -> None:
    assert heading_question(["Payment Gateway", "Late Payments"], "en", rng()) in (
        "What does the Payment Gateway document say about late payments?",
        "What should I know about late payments in the Payment Gateway document?")
    assert heading_question(["Runbook: CPU Usage High", "Escalation"], "en", rng(),
                            "Declare an incident if CPU is not back below 85% within 30 minutes.") == (
        "What are the rules for escalation in the CPU Usage High runbook?")
    assert heading_question(["Runbook: Disk Space Low", "Expanding a PVC"], "en", rng()) in (
        "How do I go about expanding a PVC?", "What are the steps for expanding a PVC?")
    assert heading_question(["发布规范", "封网"], "zh", rng(), "封网期间禁止一切非紧急发布。") in (
        "封网有什么要求？", "关于封网，发布规范有哪些规定？")
    assert heading_question(["运行手册：MySQL 慢查询处理", "分析慢查询日志"], "zh", rng()) in (
        "如何分析慢查询日志？", "怎样分析慢查询日志？", "分析慢查询日志应该怎么做？")
    assert heading_question(["运行手册：内存泄漏排查"], "zh", rng()) in (
        "内存泄漏排查运行手册包括哪些内容？", "内存泄漏排查运行手册主要讲了什么？")
    assert heading_question([], "en", rng()) is None and heading_question(["**", "#"], "zh", rng()) is None


@pytest.mark.parametrize(("sentence", "lang", "question"), [
    ("If `df` reports the disk as full, a process is holding a deleted file open.",
     "en", "What happens if `df` reports the disk as full?"),
    ("If the relay falls behind, restart it and page the order team.", "en",
     "What should I do if the relay falls behind?"),
    ("The Communications Lead is responsible for internal updates and the status page.", "en",
     "What is the Communications Lead responsible for?"),
    ("Methylation of cytosines is an essential epigenetic modification.", "en",
     "What is methylation of cytosines?"),
    ("To expand a PVC, edit its storage request.", "en", "How do I expand a PVC?"),
    ("如果中文问题的召回效果明显差于英文，先确认 BM25 分析器是否使用了 jieba 分词。", "zh",
     "如果中文问题的召回效果明显差于英文，应该怎么办？"),
    ("批量上传几百个文档时，接入任务会排队执行。", "zh", "批量上传几百个文档时，会发生什么？"),
    ("`rows` 表示预计扫描的行数。", "zh", "`rows` 表示什么？"),
    ("分块器的默认大小是 800 个字符。", "zh", "分块器的默认大小是什么？"),
    ("李翰是一位台湾的插画家。", "zh", "李翰是谁？"),
])
def test_a_sentence_of_a_known_form_gives_the_question_it_answers(sentence, lang, question) -> None:
    assert sentence_question(sentence, lang) == question


@pytest.mark.parametrize(("sentence", "lang"), [
    ("This is the reason for the change.", "en"),  # points at text around it
    ("If `df` reports the disk as full but `du` cannot find the space under any of the mounts, it is held open.",
     "en"),  # a condition too long to ask without copying the answer
    ("We found that CX3CR1 signaling promoted survival.", "en"),
    ("When produced in the presence of APOBEC3G, the virus is non-infectious.", "en"),  # a clause without subject
    ("Check whether the CPU curve is a sudden step or a slow ramp.", "en"),  # an instruction, not a definition
    ("值班期间请不要离开有网络的地方超过半小时，如果要外出，请随身携带笔记本电脑。", "zh"),  # 半小时 is no "时，"
    ("因为朱夫人的母亲是孙休的姐姐，此事被后人诟病。", "zh"),
    ("Paul）是美国圣公会密歇根教区的主教座堂。", "zh"),  # a subject cut out of its brackets
    ("需要特别注意的是回滚前必须先备份数据。", "zh"),  # a cleft, not a definition of "需要特别注意的"
    ("交废料来的是附近的居民和垃圾收集员。", "zh"),
    (" ", "en"), ("**", "zh"),  # nothing to ask
])
def test_a_sentence_without_such_a_form_gives_none(sentence, lang) -> None:
    assert sentence_question(sentence, lang) is None


def test_terms_questions_name_the_terms_as_written_and_the_document() -> None:
    assert terms_question(["NorthPay", "wallet", "card"], ["Payment Gateway", "Routing"], "en", rng()) == (
        "What does the Payment Gateway document say about NorthPay, wallet and card?")
    assert terms_question(["Ca2", "AMPA"], [], "en", rng()) in ("What do we know about Ca2 and AMPA?",
                                                                "What can you tell me about Ca2 and AMPA?")
    assert terms_question(["荨麻", "纤维"], [], "zh", rng()) in ("关于荨麻和纤维，有哪些说明？",
                                                             "荨麻和纤维是怎么回事？")
    assert terms_question(["主动", "升级"], ["值班制度", "主动升级"], "zh", rng()) == (
        "值班制度中关于主动和升级有什么说明？")


def test_wording_is_chosen_by_the_seeded_generator() -> None:
    path = ["Payment Gateway", "Late Payments"]
    picks = {heading_question(path, "en", random.Random(f"offline:{seed}:k")) for seed in range(20)}
    assert len(picks) == 2  # both wordings occur over seeds
    assert all(heading_question(path, "en", random.Random("offline:7:k")) ==
               heading_question(path, "en", random.Random("offline:7:k")) for _ in range(3))


def test_clean_heading_drops_markup_and_numbering() -> None:
    assert clean_heading("## Step 3: **Free** the Space.") == "Free the Space"
    assert clean_heading("第三步：转储内存") == "转储内存"
    assert clean_heading("1.2 Overview") == "Overview" and clean_heading("5xx errors") == "5xx errors"


@given(st.lists(st.text(min_size=0, max_size=30), min_size=0, max_size=3), st.sampled_from(["en", "zh"]),
       st.text(max_size=80))
def test_every_heading_question_is_a_question(path, lang, answer) -> None:
    question = heading_question(path, lang, rng(), answer)
    assert question is None or question.endswith("？" if lang == "zh" else "?")


@given(st.text(min_size=1, max_size=120), st.sampled_from(["en", "zh"]))
def test_every_sentence_question_is_a_question(sentence, lang) -> None:
    question = sentence_question(sentence, lang)
    assert question is None or question.endswith("？" if lang == "zh" else "?")
