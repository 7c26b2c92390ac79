"""The prompts of test-set generation, in one place, in Chinese and English; `PROMPT_VERSION` is recorded
with every set made with them (change it whenever a prompt changes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .sampling import SampledChunk

PROMPT_VERSION = "testset-gen-2"  # 2: FOLLOW_UP added (QUESTION, UNANSWERABLE and CHECK as in 1)
PASSAGE_CHARS = 3000  # a chunk is at most a few thousand characters; the cut only guards the request
TOPIC_CHARS = 400  # of each excerpt that shows the model what the documents are about

QUESTION = {
    "en": """\
You write evaluation questions for a search system over a team's documents. You get one passage of them.
Write one question that a user of these documents would really ask and that this passage answers.

Rules:
- Write the question in English.
- Ask about a fact, number, step, condition or reason the passage states. The question must make sense on its \
own, without the passage: name the system, alert, service or policy it is about; never say "the passage" or \
"the text".
- Use your own words: do not copy sentences of the passage into the question.
- The answer is copied from the passage verbatim: one exact, contiguous piece of it (a phrase or one sentence, at \
most 200 characters), with the passage's own characters, punctuation and formatting.
- Reply with only this JSON object and nothing else: {"question": "...", "answer": "..."}
""",
    "zh": """\
你为一个检索系统编写评测问题，检索对象是一个团队的文档。下面给你其中的一段原文。
请写一个这些文档的使用者真的会问、并且这段原文能够回答的问题。

规则：
- 问题用中文写。
- 问原文中陈述的事实、数字、步骤、条件或原因。问题要能脱离原文单独成立：写明它涉及的系统、告警、服务或制度，\
不要说“这段原文”“文中”。
- 用你自己的话提问，不要把原文的句子照抄进问题。
- 答案从原文中逐字复制：原文中连续的一段（一个短语或一句话，不超过 200 个字符），字符、标点和格式都与原文完全一致。
- 只回复下面这个 JSON 对象，不要任何其他内容：{"question": "...", "answer": "..."}
""",
}

FOLLOW_UP = {
    "en": """\
You write evaluation questions for a search system over a team's documents. You get one passage of them.
Write two questions a user of these documents would really ask one after the other in a chat, both answered by this \
passage: a first question, and a follow-up that only makes sense after it.

Rules:
- Write both questions in English.
- The first question must make sense on its own: name the system, alert, service or policy it is about; never say \
"the passage" or "the text".
- The follow-up asks about something else the passage states (a number, a step, a condition, a reason, a command) \
and refers back to the first question with a pronoun or by leaving its subject out ("How long does it take?", \
"Which command shows it?"). It must not repeat the name or the key words of the first question: asked alone, it \
cannot be answered. Keep it short: at most 12 words.
- Use your own words: do not copy sentences of the passage into the questions.
- The answer is the answer to the follow-up, copied from the passage verbatim: one exact, contiguous piece of it (a \
phrase or one sentence, at most 200 characters), with the passage's own characters, punctuation and formatting.
- Reply with only this JSON object and nothing else: {"question": "...", "follow_up": "...", "answer": "..."}
""",
    "zh": """\
你为一个检索系统编写评测问题，检索对象是一个团队的文档。下面给你其中的一段原文。
请写两个这些文档的使用者在对话中真的会先后问出的问题，都能由这段原文回答：第一个问题，以及只有接在它后面才说得通的追问。

规则：
- 两个问题都用中文写。
- 第一个问题要能单独成立：写明它涉及的系统、告警、服务或制度，不要说“这段原文”“文中”。
- 追问问的是原文中陈述的另一件事（数字、步骤、条件、原因、命令），用代词或省略主语的方式承接第一个问题\
（“它要多久？”“那用什么命令查看呢？”）。追问不能重复第一个问题中的名称和关键词：单独问它，是回答不了的。\
追问要简短，不超过 25 个字。
- 用你自己的话提问，不要把原文的句子照抄进问题。
- 答案是追问的答案，从原文中逐字复制：原文中连续的一段（一个短语或一句话，不超过 200 个字符），\
字符、标点和格式都与原文完全一致。
- 只回复下面这个 JSON 对象，不要任何其他内容：{"question": "...", "follow_up": "...", "answer": "..."}
""",
}

UNANSWERABLE = {
    "en": """\
You write evaluation questions for a search system over a team's documents. You get a few excerpts of them.
Write one question that a user of these documents could plausibly ask about the same subject (the same systems, \
services, alerts or policies), but that none of the excerpts answers and that such documents would probably not \
cover.

Rules:
- Write the question in English; it must make sense on its own, without the excerpts.
- Reply with only this JSON object and nothing else: {"question": "..."}
""",
    "zh": """\
你为一个检索系统编写评测问题，检索对象是一个团队的文档。下面给你其中的几段摘录。
请写一个这些文档的使用者可能会问的、与摘录主题相同（同样的系统、服务、告警或制度）的问题，但任何一段摘录都回答不了它，\
这类文档很可能也没有涉及。

规则：
- 问题用中文写，要能脱离摘录单独成立。
- 只回复下面这个 JSON 对象，不要任何其他内容：{"question": "..."}
""",
}

CHECK = {
    "en": """\
You check whether a knowledge base answers a question. You get the question and the passages a search of the \
knowledge base returned for it.
Does any passage answer the question, fully or in its essentials? If it does, quote the sentence that answers \
it, verbatim.
Reply with only this JSON object and nothing else: {"answered": true or false, "quote": "the sentence, or an \
empty string"}
""",
    "zh": """\
你判断一个知识库能否回答某个问题。下面给你问题，以及检索这个知识库得到的段落。
是否有任何一段完整地或在要点上回答了这个问题？如果有，逐字引用回答它的那句话。
只回复下面这个 JSON 对象，不要任何其他内容：{"answered": true 或 false, "quote": "那句话，没有则为空字符串"}
""",
}

CORRECTION = {
    "en": "That was not the JSON object asked for: {problem}. Reply again with only the JSON object.",
    "zh": "这不是所要求的 JSON 对象：{problem}。请重新回复，只包含这个 JSON 对象。",
}

_LABELS = {"en": ("Document", "Section", "Passage", "Excerpt", "Question", "Passages returned"),
           "zh": ("文档", "章节", "原文", "摘录", "问题", "检索到的段落")}


def question_messages(chunk: SampledChunk, lang: str) -> list[dict[str, Any]]:
    doc, section, passage, *_ = _LABELS[lang]
    head = f"{doc}: {chunk.doc_id}\n" + (f"{section}: {' > '.join(chunk.heading_path)}\n" if chunk.heading_path else "")
    return [{"role": "system", "content": QUESTION[lang]},
            {"role": "user", "content": f"{head}\n{passage}:\n<<<\n{chunk.content[:PASSAGE_CHARS]}\n>>>"}]


def follow_up_messages(chunk: SampledChunk, lang: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": FOLLOW_UP[lang]}, question_messages(chunk, lang)[1]]


def unanswerable_messages(context: Sequence[SampledChunk], lang: str) -> list[dict[str, Any]]:
    doc, _, _, excerpt, *_ = _LABELS[lang]
    parts = [f"{excerpt} {n} ({doc}: {c.doc_id}):\n<<<\n{c.content[:TOPIC_CHARS]}\n>>>"
             for n, c in enumerate(context, start=1)]
    return [{"role": "system", "content": UNANSWERABLE[lang]}, {"role": "user", "content": "\n\n".join(parts)}]


def check_messages(question: str, passages: Sequence[tuple[str, str]], lang: str) -> list[dict[str, Any]]:
    """`passages`: (evidence key, content) as the lookup returned them."""
    *_, asked, returned = _LABELS[lang]
    body = "\n\n".join(f"[{key}]\n<<<\n{content[:PASSAGE_CHARS]}\n>>>" for key, content in passages) or "(none)"
    return [{"role": "system", "content": CHECK[lang]},
            {"role": "user", "content": f"{asked}: {question}\n\n{returned}:\n{body}"}]


def correction(lang: str) -> Callable[[str], str]:
    return lambda problem: CORRECTION[lang].format(problem=problem)

