"""The rewrite stage's two rewriters (ports.QueryRewriter): a follow-up question asked in a conversation becomes the
standalone question that is searched.

**Offline** (`OfflineRewriter`, no model; deterministic, so a reader can follow it). A question is a *follow-up* when
it is short (at most `SHORT_WORDS` English words or `SHORT_CJK` Chinese characters) and either refers back (a pronoun
or demonstrative: it, this, that, they, 它, 这个, 那个, 该, 其 ...; or an elliptical opener: "what about", "and",
"how about", 那, 还有, a question ending in 呢) with at most `FEW_TOPIC_TERMS` topic terms of its own, or has no topic
term at all ("Which command shows it?": *command* and *show* are question words, not a topic). Then it borrows the
topic terms of the previous question (itself rewritten first when it was a follow-up; as written there, capitals kept)
and, when it has no topic term of its own, the heading paths (else titles) of the evidence the previous answer cited,
added in brackets after it: "Which command shows it? (free disk space; Disk Full Runbook > Diagnosis)". A follow-up
that names a topic of its own ("And the inodes?", "那 Go 服务呢？") asks what that answer did not cover, so it borrows
the earlier question's topic only: the cited headings would pull the search back to the earlier answer. Anything else
is kept as asked, so a question that switches topic carries nothing over.

What it cannot do: resolve a reference to anything but the previous question and answer ("the second one you
mentioned"), understand a question that is long and still refers back, or replace a term rather than add to it
("what about the payment gateway?" after an order-service question searches both). A model does those.

**Model** (`ModelRewriter`): the chat model rewrites, at temperature 0, asked in the question's language, within
`rag.rewrite-deadline`; the rewrite is checked against the conversation (`added_facts`): a number, code or name in
it that the conversation never said, or one of the question's that it lost, rejects it and the original is searched.
A failure (an error, the deadline) also searches the original; the outcome says which, and the lookup warns.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import RagError, RetrievalError
from ..languages import CJK, CJK_CLASS, language_of
from ..ports import ChatModel
from ..records import ConversationTurn, Rewrite
from ..words import cut, ordered_terms

SHORT_WORDS = 14
SHORT_CJK = 30
FEW_TOPIC_TERMS = 3
MAX_BORROWED_TERMS = 8
MAX_HEADINGS = 2
MAX_TRANSCRIPT_CHARS = 6000  # of earlier messages the model is shown (the latest kept)

# Words that ask rather than name a topic: a follow-up made only of these has no topic of its own.
_QUESTION_WORDS = frozenset("""
command commands step steps way ways long time times default defaults value values mean means meaning happen happens
happened work works working first next last else other others check checks show shows showing see run runs fix fixes
owner owns own thing things example examples detail details more again long often many much take takes taking
start starts stop stops limit limits why when which who apply applies instead too also still then exactly set
config configure configured configuration option options setting settings enough right wrong ok okay case cases
best safe safely happen later earlier before after same different difference explain explained say says said
""".split())
_QUESTION_WORDS_ZH = frozenset("""
命令 步骤 多久 默认 意思 处理 然后 接下来 还有 第一步 下一步 其他 其它 详细 具体 例子 负责 多少 时间 需要 应该 查看 检查
执行 运行 解决 办法 方法 原因 为什么 区别 不同 一样 之后 之前 以后 以前 谁 哪里 哪儿 多长时间 多长 怎么样 情况 配置 设置
说明 解释 可以 能否 是否 适用 默认值 上限 下限 限制 正在 就是 其中 一个 之一 还是 哪个
""".split())
_REFERENCES_EN = frozenset("it its it's this that these those they them their theirs same such".split())
_OPENERS_EN = ("what about", "how about", "and ", "and what", "what if", "also ", "then ")
_REFERENCES_ZH = frozenset("它 它们 这个 那个 这些 那些 这种 那种 该 其 此 上述 其中 这里 那里 这样 那样".split())
_OPENERS_ZH = ("那", "那么", "还有", "另外", "如果")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")

# What a rewrite must not invent and must keep: numbers, error codes and identifiers (anything with a digit, an
# underscore, a dot or a dash inside, or a capital after its first letter: HighCPUUsageCritical, P1, /var/lib/etcd,
# 90%, ORDER_TIMEOUT, qwen-plus), and capitalised names.
_FACT = re.compile(r"[A-Za-z0-9_/.%:-]*\d[A-Za-z0-9_/.%:-]*|[A-Za-z][a-z0-9]*[A-Z_][A-Za-z0-9_]*|"
                   r"[A-Za-z0-9]+(?:[_.-][A-Za-z0-9]+)+|/[A-Za-z0-9_./*-]+")
_NAME = re.compile(r"(?<![.!?。！？]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def is_follow_up(question: str) -> bool:
    """Whether the offline rewrite treats `question` as a follow-up (see the module docstring)."""
    text = question.strip()
    cjk = len(_CJK_CHAR.findall(text))
    words = len(_EN_WORD.findall(text))
    if cjk > SHORT_CJK or words > SHORT_WORDS or (cjk == 0 and words == 0):
        return False
    topic = topic_terms(text)
    if not topic:
        return True
    return _refers_back(text) and len(topic) <= FEW_TOPIC_TERMS


def topic_terms(text: str) -> list[str]:
    """The content terms of `text` that name a topic, in order: not question words ("command", "default", "多久")."""
    return [t for t in ordered_terms(text) if t not in _QUESTION_WORDS and t not in _QUESTION_WORDS_ZH
            and t.rstrip("s") not in _QUESTION_WORDS]


def _refers_back(text: str) -> bool:
    lower = text.lower().strip()
    if any(lower.startswith(o) for o in _OPENERS_EN) or any(text.startswith(o) for o in _OPENERS_ZH):
        return True
    if re.sub(r"[\s?？。!！]+$", "", text).endswith("呢"):
        return True
    if any(w.lower() in _REFERENCES_EN for w in _EN_WORD.findall(text)):
        return True
    if _CJK_RUN.search(text):  # 它 and the references of two characters wherever they are (jieba cuts 它会 as one word)
        return (any(w in text for w in _REFERENCES_ZH if len(w) > 1 or w == "它")
                or any(w in _REFERENCES_ZH for span in _CJK_RUN.findall(text) for w in cut(span)))
    return False


def _user_questions(history: Sequence[ConversationTurn]) -> list[int]:
    return [i for i, turn in enumerate(history) if turn.role == "user" and turn.content.strip()]


def _surface(term: str, text: str) -> str:
    """`term` as `text` writes it (terms are lower-cased: HighCPUUsage, not highcpuusage)."""
    found = re.search(re.escape(term), text, re.I)
    return found.group(0) if found else term


class OfflineRewriter:
    """The deterministic rewrite (module docstring)."""

    name = "offline"

    def rewrite(self, question: str, history: Sequence[ConversationTurn]) -> Rewrite:
        question = question.strip()
        asked = _user_questions(history)
        if not asked:
            return Rewrite(question, question, "kept", self.name, "no earlier question", turns=len(history))
        if not is_follow_up(question):
            return Rewrite(question, question, "kept", self.name, "it stands alone", turns=len(history))
        last = asked[-1]
        previous = self.rewrite(history[last].content, history[:last]).searched  # a follow-up of a follow-up
        own = set(ordered_terms(question))
        borrowed = [_surface(t, previous) for t in topic_terms(previous) if t not in own][:MAX_BORROWED_TERMS]
        answer = next((t for t in history[last + 1:] if t.role == "assistant"), None)
        # A follow-up with a topic of its own ("And the inodes?") asks what the earlier answer did not cover: the
        # headings it cited would pull the search back to that answer (bench/conversations.py measured it).
        cited = answer.cited if answer is not None and not topic_terms(question) else ()
        headings = [h for h in dict.fromkeys(cited) if h.strip()][:MAX_HEADINGS]
        if not borrowed and not headings:
            return Rewrite(question, question, "kept", self.name, "the earlier question has no topic to borrow",
                           turns=len(history))
        zh = language_of(question) == CJK
        words = " ".join(borrowed)
        parts = [p for p in (words, *headings) if p]
        searched = f"{question}（{'；'.join(parts)}）" if zh else f"{question} ({'; '.join(parts)})"
        return Rewrite(question, searched, "rewritten", self.name, "a short follow-up: borrowed the earlier question's "
                       "topic" + (" and the headings its answer cited" if headings else ""),
                       tuple(borrowed) + tuple(headings), len(history))


SYSTEM_EN = ("You rewrite the last question of a conversation as one standalone search query. Resolve what it refers "
             "to (it, this, that, the same ...) from the earlier messages. Keep every name, number, command and error "
             "code exactly as written. Add nothing the conversation does not say. If the question already stands "
             "alone, return it unchanged. Reply with the rewritten question only, in the question's language.")
SYSTEM_ZH = ("你负责把对话中的最后一个问题改写成一个可以独立检索的问题。"
             "根据前面的对话补全“它、这个、那个、上述”等指代的内容。"
             "所有名称、数字、命令和错误码必须原样保留，不要添加对话中没有的信息。如果问题本身已经完整，原样返回。"
             "只回复改写后的问题，使用问题本身的语言。")


def rewrite_messages(question: str, history: Sequence[ConversationTurn]) -> list[dict[str, str]]:
    """What the model is asked: the instructions and the conversation, in the question's language."""
    zh = language_of(question) == CJK
    lines = [f"{'用户' if zh else 'User'}: {t.content.strip()}" if t.role == "user"
             else f"{'助手' if zh else 'Assistant'}: {t.content.strip()}" for t in history if t.content.strip()]
    transcript = "\n".join(lines)[-MAX_TRANSCRIPT_CHARS:]
    ask = (f"对话：\n{transcript}\n\n最后的问题：{question}\n\n改写后的问题：" if zh else
           f"Conversation:\n{transcript}\n\nLast question: {question}\n\nStandalone question:")
    return [{"role": "system", "content": SYSTEM_ZH if zh else SYSTEM_EN}, {"role": "user", "content": ask}]


def facts(text: str) -> set[str]:
    """The numbers, codes, identifiers and capitalised names of `text` (what a rewrite must neither invent nor
    lose)."""
    found = {m.strip(".:-").rstrip("/").lower() for m in _FACT.findall(text)}
    found |= {m.lower() for m in _NAME.findall(text)}
    return {f for f in found if f}


def added_facts(rewritten: str, question: str, history: Sequence[ConversationTurn]) -> tuple[list[str], list[str]]:
    """(facts of the rewrite the conversation never said, facts of the question the rewrite lost)."""
    said = " ".join([question, *(t.content for t in history)]).lower()
    added = sorted(f for f in facts(rewritten) if f not in said)
    lost = sorted(f for f in facts(question) if f not in rewritten.lower())
    return added, lost


def _reply_text(text: str) -> str:
    """The question out of a model's reply: its first non-empty line, without a label or quotes around it."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    line = re.sub(r"^(?:standalone question|rewritten question|question|改写后的问题|问题)\s*[:：]\s*", "", line,
                  flags=re.I)
    return line.strip().strip("\"'“”「」`").strip()


class ModelRewriter:
    """The chat model rewrites (module docstring). `deadline`: seconds the rewrite may take in all
    (rag.rewrite-deadline)."""

    def __init__(self, model: ChatModel, *, deadline: float = 8.0, model_name: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self.deadline = deadline
        self._name = model_name or model.describe()
        self._clock = clock

    @property
    def name(self) -> str:
        return self._name

    def rewrite(self, question: str, history: Sequence[ConversationTurn]) -> Rewrite:
        question = question.strip()
        n = len(history)
        if not _user_questions(history):
            return Rewrite(question, question, "kept", self.name, "no earlier question", turns=n)
        until = self._clock() + self.deadline
        try:
            stream = self.model.stream(rewrite_messages(question, history), (), 1, until, temperature=0.0)
            try:
                while True:
                    next(stream)
            except StopIteration as stop:
                reply = stop.value
            finally:
                stream.close()
        except RagError as exc:
            return Rewrite(question, question, "model_failed", self.name, str(exc), turns=n)
        text = _reply_text(getattr(reply, "content", "") or "")
        if not text:
            return Rewrite(question, question, "model_failed", self.name, "the model's reply was empty", turns=n)
        if len(text) > max(4 * len(question), 400):
            return Rewrite(question, question, "model_rejected", self.name,
                           f"has {len(text)} characters, far more than a question", turns=n)
        added, lost = added_facts(text, question, history)
        if added or lost:
            why = "; ".join(p for p in (f"adds {', '.join(added)}, which the conversation does not say" if added
                                        else "", f"loses {', '.join(lost)}" if lost else "") if p)
            return Rewrite(question, question, "model_rejected", self.name, f"{why} (it wrote: {text})", turns=n)
        if text == question:
            return Rewrite(question, question, "kept", self.name, "the model kept it as asked", turns=n)
        return Rewrite(question, text, "rewritten", self.name, "", turns=n)


def parse_history(items: Iterable[Any], where: str = "history") -> tuple[ConversationTurn, ...]:
    """Earlier messages from what a surface was given: {"role", "content"} objects (an OpenAI message's content
    may be a list of text parts), or "role: content" lines. Other roles (system, tool) are skipped; a message
    with no text is skipped. A wrong shape is a RetrievalError naming the item."""
    turns: list[ConversationTurn] = []
    for i, item in enumerate(items, start=1):
        if isinstance(item, ConversationTurn):
            turns.append(item)
            continue
        if isinstance(item, str):
            head, sep, text = item.partition(":")
            if not sep or head.strip().lower() not in ("user", "assistant", "system", "tool"):
                raise RetrievalError(f"{where}, turn {i}: write it as \"user: ...\" or \"assistant: ...\".")
            item = {"role": head.strip().lower(), "content": text.strip()}
        if not isinstance(item, Mapping):
            raise RetrievalError(f"{where}, turn {i}: expected an object with role and content.")
        role = item.get("role")
        if role not in ("user", "assistant", "system", "tool", "developer"):
            raise RetrievalError(f"{where}, turn {i}: role must be user or assistant (got {role!r}).")
        content = message_text(item.get("content")).strip()
        if content and role == "user":
            turns.append(ConversationTurn("user", content))
        elif content and role == "assistant":
            turns.append(ConversationTurn("assistant", content))
    return tuple(turns)


def message_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


def read_history_file(text: str, where: str) -> tuple[ConversationTurn, ...]:
    """A `--history FILE`: JSON lines ({"role", "content"}) or "role: content" lines (a line that starts with
    neither continues the message before it)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].lstrip().startswith("{"):
        items = []
        for n, line in enumerate(lines, start=1):
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RetrievalError(f"{where}, line {n}: not JSON ({exc.msg}).") from None
        return parse_history(items, where)
    messages: list[str] = []
    for line in lines:
        head = line.partition(":")[0].strip().lower()
        if head in ("user", "assistant", "system", "tool") or not messages:
            messages.append(line)
        else:
            messages[-1] += "\n" + line
    return parse_history(messages, where)
