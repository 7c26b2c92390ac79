"""The offline generator's words: questions a person would type, made by templates from a chunk's heading path
and its sentences (Chinese and English), and the sentences an answer may quote.

Pure functions, no model: the same chunk, seed and knowledge base give the same question.

* `answer_sentences`: the chunk's quotable sentences (sampling.quotable_sentences) that end at a sentence end
  (。！？ or .!? before closing quotes or brackets): a line cut by the chunk's end, a caption ending in ":"
  or "：", a table row, a URL or an "Authors: ..." line is never an answer. The first sentence of a later
  chunk that starts with a lower-case letter is the tail of a sentence its overlap cut into, so it is left out.
* `heading_question`: from the heading path (the document's title, the chunk's own heading): a heading that
  is a question is asked as it is ("为什么确认时限是 5 分钟？"); a task ("Step 2: Find the Workload",
  "Expanding a PVC", "分析慢查询日志") becomes "How do I find the workload?", "How do I go about expanding a
  PVC?", "如何分析慢查询日志？"; a topic asks what the document says of it ("What should I know about rate
  limits in the Order Service document?", "发布规范中的封网是怎样的？"); a chunk right under the title asks
  what the document is ("What is the Payment Gateway?", "内存泄漏排查运行手册包括哪些内容？").
* `sentence_question`: from the sentence the answer quotes, by its kind: a condition ("If X, ..." -> "What
  happens if X?" / "What should I do if X?"; "如果X，……" -> "如果X，应该怎么办？"; "X时，……" -> "X时怎么办？"),
  a definition ("The X is responsible for ..." -> "What is the X responsible for?"; "X 表示……" -> "X 表示什么？";
  "X是……" -> "X是什么？"), an instruction or a rule under a heading ("Expand by 50% ..." under "Expanding a PVC"
  -> "How do I go about expanding a PVC?"; "……必须……" under "封网" -> "封网有什么要求？").
* `terms_question`: the chunk's most distinctive terms (as the text writes them) in a question, when neither
  of the others can be made ("What do we know about Ca2, AMPA and migration?", "关于荨麻、作汤和纤维，有哪些说明？").
  Its English wordings add no content word of their own: one ("known", "text") is matched by keyword search like a
  term of the chunk, and on corpora without headings (most of bench/testsets.py's items are of this kind) it moved
  the configurations' order away from the real labels'.

Where a form has several wordings, `rng` (seeded by the caller per chunk) picks one, so sets read less
uniform and stay reproducible. Clauses copied from the sentence are short (`MAX_CLAUSE`): a question that
repeats half its answer would only measure keyword search.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ...languages import is_chinese
from .sampling import quotable_sentences

MAX_CLAUSE = {"en": 10, "zh": 20}  # words of English, characters of Chinese copied from the answer's sentence
MAX_SUBJECT = {"en": 5, "zh": 14}  # a definition's subject: "What is X?" only for a short X

# A sentence ends at 。！？ or .!? (with any closing quotes, brackets or emphasis after it).
_SENTENCE_END = re.compile(r"[.!?。！？][\"'”’」』)）\]*_`]*$")
_MARKUP = re.compile(r"[`*_#>|]+")
_EMPHASIS = re.compile(r"\*\*")
_NUMBERING = re.compile(r"^(?:step\s+\d+\s*[:.：]|第\s*[一二三四五六七八九十\d]+\s*步\s*[:：.]?|\d+(?:\.\d+)+(?=\s)|"
                        r"\d+(?:\.\d+)*[.)、])\s*", re.IGNORECASE)
_TITLE_WORD = re.compile(r"[A-Z][a-z]+(?:-[A-Z]?[a-z]+)*(?:'s)?")
_ASIDE = re.compile(r"\s*[（(][^（）()]*[）)]")
_COLON = re.compile(r"\s*[:：]\s*")

# ------------------------------------------------------------------------------------------ English words
_EN_WH = ("how", "why", "when", "what", "where", "which", "who")
_EN_AUX = ("is", "are", "was", "were", "can", "could", "should", "must", "may", "will", "would", "does", "do", "did",
           "has", "have")
# Verbs that open an instruction ("Expand by 50% ...") or a task heading ("Find What Is Using the Space").
_EN_VERBS = frozenset("""
add apply ask avoid call cancel check choose clean clear configure confirm connect contact create declare delete
deploy disable do drain edit enable escalate expand find fix follow get give hand identify increase inspect install
keep kill look make mark monitor move notify open pause prune put raise read reduce remove replace reschedule reset
resize restart restore resume roll rotate run scale see send start stop suspend switch take tell try turn update
upgrade use verify wait write never always first don't
""".split())
# ... of which these also name things ("Change Freeze", "Review Process"): not taken as a task in a heading.
_EN_NOUN_TOO = frozenset("change check report record review list limit watch request set page free start stop "
                         "turn use".split())
_EN_NOT_GERUND = frozenset("thing something nothing anything everything spring string ring king morning evening "
                           "during ceiling".split())
_EN_PRONOUNS = frozenset("it this that these those there they we he she each every our its their here such "
                         "which who what one".split())
_EN_CONDITION = re.compile(r"^(If|When|Whenever|Once)\s+([^,;:]+?),\s+(\S.*)$")
_EN_TO = re.compile(r"^To\s+([^,;:]+?),\s+(\S.*)$")
_EN_DEFINITION = re.compile(r"^((?:The|A|An)\s+)?([^,;:()]+?)\s+(is|are)\s+(responsible\s+for|used\s+(?:to|for)|"
                            r"an?\b|the\b|one\s+of\b)")
_EN_POINTER = re.compile(r"\b(below|above|following|previous|next|same|other)\b", re.IGNORECASE)
_EN_CONTEXT = frozenset("this these those it its we our us i you here they".split())
_EN_RULE = re.compile(r"\b(must|never|always|at least|at most|no later than|within)\b", re.IGNORECASE)

# ------------------------------------------------------------------------------------------ Chinese words
_ZH_ASKS = ("为什么", "为何", "如何", "怎么", "怎样", "什么", "何时", "哪")
_ZH_VERBS = ("分析", "排查", "处理", "变更", "扩容", "缩容", "回滚", "切换", "配置", "部署", "升级", "清理", "重启",
             "定位", "查找", "查看", "确认", "检查", "使用", "创建", "删除", "申请", "提交", "执行", "设置", "优化",
             "恢复", "迁移", "修改", "添加", "关闭", "开启", "启用", "禁用", "更换", "重建", "接入", "报销", "评估",
             "预览", "导出", "导入", "搭建", "安装", "测试", "验证", "监控", "限流", "降级", "发布")
# A heading that starts with a verb but names a thing or a time ("发布流程", "发布后") is a topic, not a task.
_ZH_TOPIC_ENDS = ("流程", "规则", "清单", "窗口", "策略", "参数", "示例", "指标", "要求", "制度", "原则", "方式",
                  "设计", "架构", "说明", "概述", "结构", "规范", "单", "后", "前", "时", "中", "期间", "演练", "会议",
                  "方案", "计划", "报告", "记录", "问题", "原因", "结果", "方法", "模式", "后续")
_ZH_STEPS = ("使用", "用", "先", "再", "执行", "运行", "检查", "确认", "查看", "打开", "重启", "删除", "清理", "联系",
             "呼叫", "通过", "按照", "立即", "登录", "找出", "等待", "扩容", "回滚", "暂停", "在", "将", "把", "对")
_ZH_AND = re.compile("[与和及、]")  # "升级与后续": two topics, not a task
# A main clause that says what to do ("……，可以通过功能开关临时关闭……").
_ZH_ACTS = ("可以", "直接", "请", "立即", "马上", "尽快", "应", "要", "就", "分别", "优先")
_ZH_DO = re.compile("可以|请|立即|直接|马上|尽快")
_ZH_RULE = re.compile("必须|需要|应当|应该|禁止|不得|不允许|务必|不能|只能")
_ZH_PRONOUNS = ("这", "那", "它", "其", "此", "每", "该", "我", "你", "他", "她", "如果", "但", "而", "因此", "所以",
                "同时", "另外", "此外", "然后", "对于", "由于", "为了", "在", "当", "从", "因为", "本身", "其中",
                "以上", "以下", "上述", "下面", "前者", "后者")
_ZH_CONDITION = re.compile(r"^(如果|假如|若|一旦|当)(.+?)(时|的话)?[，,](.+)$")
_ZH_WHEN = re.compile(r"^([^，,。]{2,20}?)(?<![小按及同准临暂随平有])时[，,](.+)$")
_ZH_DEFINITION = re.compile(r"^([^，,；;。：:]+?)(是指|指的是|表示|意为|意味着|是)(.+)$")
# A subject ending so is no definition's: "……的是" is a cleft ("需要特别注意的是……"), "但是", "于是", "还是"...
_ZH_NOT_COPULA = ("的", "但", "于", "还", "总", "就", "都", "也", "正", "而", "可", "只", "要", "凡", "若", "不", "倒",
                  "算", "更", "特别", "或")
_ZH_PERSON = re.compile(r"^(?:一位|一名|一个|一個)?[^，,。]{0,12}(?:家|人|员|者|手|师|王|帝|官|长|生)")


# ------------------------------------------------------------------------------------------ answers
def ends_sentence(sentence: str) -> bool:
    """Whether `sentence` ends at a sentence end (。！？ or .!?, closing quotes and brackets after it allowed)."""
    return bool(_SENTENCE_END.search(sentence.rstrip()))


def answer_sentences(content: str, *, first_chunk: bool = True) -> list[str]:
    """The sentences of a chunk an answer may quote, in chunk order (see the module docstring)."""
    return [s for s in quotable_sentences(content) if ends_sentence(s) and "://" not in s and " | " not in s
            and not _continues(s, content, first_chunk)]


def _continues(sentence: str, content: str, first_chunk: bool) -> bool:
    """Whether the sentence is the tail of one begun earlier: it opens a later chunk without a capital or a
    Chinese character (the chunk's overlap began inside it), or it starts in lower case on a line of its own after
    a line that did not end a sentence; a sentence with an odd number of backticks was cut inside inline code."""
    if sentence.count("`") % 2:
        return True
    before = content[:content.find(sentence)].rstrip()
    if not before:
        return not first_chunk and not (sentence[0].isupper() or is_chinese(sentence[0]))
    return sentence[0].islower() and not (ends_sentence(before) or before.endswith((":", "：", ";", "；")))


# ------------------------------------------------------------------------------------------ headings
def clean_heading(heading: str) -> str:
    """A heading without markup, numbering ("Step 2:", "第三步：", "1.2") or trailing punctuation."""
    text = " ".join(_MARKUP.sub(" ", heading).split())
    return _NUMBERING.sub("", text).strip(" .:;：；,，") or text.strip(" .:;：；,，")


def _casual(phrase: str) -> str:
    """A Title Case heading as a person types it in a question: "Find What Is Using the Space" -> "find what is
    using the space". Acronyms and names with inner capitals (PVC, NorthPay) keep theirs."""
    return " ".join(w.lower() if _TITLE_WORD.fullmatch(w) else w for w in phrase.split())


def _subject(title: str, lang: str) -> str:
    """The document, as a question names it: "Runbook: Disk Space Low" -> "the Disk Space Low runbook",
    "运行手册：内存泄漏排查" -> "内存泄漏排查运行手册", "Order Service" -> "the Order Service document"."""
    title = _ASIDE.sub("", title).strip() or title
    parts = _COLON.split(title, maxsplit=1)
    if len(parts) == 2 and parts[0] and parts[1]:
        kind, name = parts
        return f"{name}{kind}" if lang == "zh" else f"the {name} {kind.lower()}"
    return title if lang == "zh" else f"the {title} document"


def _the(title: str) -> str:
    return title if title.split()[0].lower() in ("the", "a", "an") else f"the {title}"


def heading_question(path: Sequence[str], lang: str, rng: random.Random, answer: str = "") -> str | None:
    """A question from the chunk's heading path (outermost first), or None when it has no heading. A topic whose
    `answer` (the sentence that will answer it) is a rule or an instruction is asked for its rules or what to do
    ("What are the rules for X in Y?", "封网有什么要求？", "What should I do about X?")."""
    path = [h for h in (clean_heading(p) for p in path) if h]
    if not path:
        return None
    own = path[-1]
    asked = _asked_heading(own, lang)
    if asked is not None:
        return asked
    if len(path) == 1:
        return _title_question(own, lang, rng)
    task = _task_question(own, lang, rng)
    if task is not None:
        return task
    subject = _subject(path[0], lang)
    if lang == "zh":
        if _ZH_RULE.search(answer):
            return rng.choice((f"{own}有什么要求？", f"关于{own}，{subject}有哪些规定？"))
        if answer.startswith(_ZH_STEPS):
            return f"{own}应该怎么处理？"
    else:
        if _EN_RULE.search(answer):
            return f"What are the rules for {_casual(own)} in {subject}?"
        if answer.split()[:1] and answer.split()[0].lower().strip(",") in _EN_VERBS:
            return f"What should I do about {_casual(own)}?"
    return _topic_question(own, subject, lang, rng)


def _asked_heading(heading: str, lang: str) -> str | None:
    """A heading that already asks: as it is, as a question ("When a Postmortem Is Required" -> "When is a
    postmortem required?")."""
    if heading.endswith(("?", "？")):
        return heading[:-1].rstrip() + ("？" if lang == "zh" else "?")
    if lang == "zh":
        return heading + "？" if heading.startswith(_ZH_ASKS) else None
    words = heading.split()
    if words[0].lower() not in _EN_WH or len(words) < 2:
        return None
    if words[0].lower() == "how" and len(words) >= 3 and words[-1].lower() in ("works", "work"):
        return f"How does {_casual(' '.join(words[1:-1]))} work?"
    aux = next((i for i, w in enumerate(words) if i > 1 and w.lower() in _EN_AUX), None)
    if aux is None:
        return None  # "How Chunking Works" was handled; "When Things Break" is a topic
    rest = words[aux + 1:]
    return f"{words[0].capitalize()} {words[aux].lower()} {_casual(' '.join(words[1:aux]))}" + (
        f" {_casual(' '.join(rest))}?" if rest else "?")


def _title_question(title: str, lang: str, rng: random.Random) -> str:
    """A chunk right under the document's title: what is the document about?"""
    if lang == "zh":
        subject = _subject(title, lang)
        return rng.choice((f"{subject}包括哪些内容？", f"{subject}主要讲了什么？"))
    if _COLON.search(title):
        return f"What does {_subject(title, lang)} cover?"
    if len(title.split()) <= 5:
        return f"What is {_the(title)}?"
    return f"What do we know about {_casual(title)}?"


def _task_question(heading: str, lang: str, rng: random.Random) -> str | None:
    """A heading naming something to do: how to do it."""
    if lang == "zh":
        if heading.startswith(_ZH_VERBS) and not heading.endswith(_ZH_TOPIC_ENDS) and not _ZH_AND.search(heading):
            return rng.choice((f"如何{heading}？", f"怎样{heading}？", f"{heading}应该怎么做？"))
        return None
    first = heading.split()[0].lower()
    if len(heading.split()) >= 3 and heading.split()[1].lower() in ("is", "are"):  # "Latency Is High": a state
        return f"What should I do when {_casual(heading)}?"
    if first in _EN_VERBS and first not in _EN_NOUN_TOO and len(heading.split()) >= 2:
        return f"How do I {_casual(heading)}?"
    words = heading.lower().split()
    if first.endswith("ing") and len(first) >= 5 and first not in _EN_NOT_GERUND and words[1:2] != ["and"]:
        return rng.choice((f"How do I go about {_casual(heading)}?", f"What are the steps for {_casual(heading)}?"))
    return None


def _topic_question(heading: str, subject: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        return rng.choice((f"{subject}中的{heading}是怎样的？", f"关于{heading}，{subject}是怎么说的？"))
    topic = _casual(heading)
    return rng.choice((f"What does {subject} say about {topic}?", f"What should I know about {topic} in {subject}?"))


# ------------------------------------------------------------------------------------------ sentences
def sentence_question(sentence: str, lang: str) -> str | None:
    """A question the sentence answers by itself, from its form (a condition, a purpose, a definition), or None
    when it has none of these."""
    text = " ".join(_EMPHASIS.sub("", sentence).split())
    if not text:
        return None
    return _zh_sentence(text) if lang == "zh" else _en_sentence(text)


def _en_sentence(text: str) -> str | None:
    words = text.split()
    first = words[0].lower().strip(",")
    if m := _EN_CONDITION.match(text):
        conj, clause, rest = m.group(1).lower(), m.group(2), m.group(3)
        if len(clause.split()) <= MAX_CLAUSE["en"] and _en_clause(clause):
            does = rest.split()[0].lower().strip(",") in _EN_VERBS
            return f"What should I do {conj} {clause}?" if does else f"What happens {conj} {clause}?"
    if m := _EN_TO.match(text):
        purpose = m.group(1)
        if len(purpose.split()) <= MAX_CLAUSE["en"] and _en_clause(purpose):
            return f"How do I {purpose}?"
    if (m := _EN_DEFINITION.match(text)) and first not in _EN_PRONOUNS and first not in _EN_VERBS:
        article, thing, verb, what = m.group(1) or "", m.group(2), m.group(3), m.group(4).split()[0].lower()
        if len(thing.split()) <= MAX_SUBJECT["en"] and _en_clause(thing):
            name = f"{article.lower()}{thing}" if article else _casual(thing)
            if what == "responsible":
                return f"What {verb} {name} responsible for?"
            if what == "used":
                return f"What {verb} {name} used for?"
            return f"What {verb} {name}?"
    return None


def _en_clause(clause: str) -> bool:
    """A clause worth asking about: words with a subject of their own ("when produced in ..." has none), not a code
    fragment or a number alone, and nothing that points at the text around it ("this", "we", "below")."""
    words = [w.lower().strip(",.") for w in clause.split()]
    return (bool(re.search(r"[A-Za-z]{3,}", clause)) and clause.count("`") % 2 == 0 and bool(words)
            and not (len(words[0]) > 4 and words[0].endswith(("ed", "ing")))
            and not set(words) & _EN_CONTEXT and not _EN_POINTER.search(clause))


def _zh_sentence(text: str) -> str | None:
    if m := _ZH_CONDITION.match(text):
        conj, clause, rest = m.group(1), m.group(2).strip(), m.group(4).strip()
        if 2 <= len(clause) <= MAX_CLAUSE["zh"]:
            if rest.startswith("说明"):
                return f"{conj}{clause}，说明什么？" if conj != "当" else f"{clause}时，说明什么？"
            if conj == "当":
                return f"{clause}时应该怎么办？"
            return f"{conj}{clause}，应该怎么办？" if _zh_acts(rest) else f"{conj}{clause}，会怎么样？"
    if (m := _ZH_WHEN.match(text)) and not text.startswith(_ZH_PRONOUNS):
        return f"{m.group(1)}时应该怎么办？" if _zh_acts(m.group(2).strip()) else f"{m.group(1)}时，会发生什么？"
    if (m := _ZH_DEFINITION.match(text)) and not text.startswith(_ZH_PRONOUNS):
        thing, verb, rest = _ASIDE.sub("", m.group(1)).lstrip(), m.group(2), m.group(3)
        if (2 <= len(thing.strip()) <= MAX_SUBJECT["zh"] and not thing.endswith(_ZH_NOT_COPULA) and _balanced(thing)
                and not rest.startswith(("否", "非")) and re.search("[\u3400-\u9fffA-Za-z]", thing)):
            if verb == "是":
                return f"{thing}是谁？" if _ZH_PERSON.match(rest) and len(thing) <= 8 else f"{thing.rstrip()}是什么？"
            return f"{thing}{'指的是' if verb in ('是指', '指的是') else verb}什么？"
    return None


def _zh_acts(clause: str) -> bool:
    """Whether a main clause says what to do ("……，可以在告警应用上点击“转交”"), not what happens."""
    return clause.startswith((*_ZH_STEPS, *_ZH_ACTS)) or bool(_ZH_RULE.search(clause) or _ZH_DO.search(clause))


def _balanced(text: str) -> bool:
    """Whether the brackets and quotes of `text` close (a subject cut out of "（英语：Paul）是……" does not)."""
    return all(text.count(a) == text.count(b) for a, b in ("（）", "()", "“”", "「」", "《》"))


# ------------------------------------------------------------------------------------------ terms
def terms_question(shown: Sequence[str], path: Sequence[str], lang: str, rng: random.Random) -> str:
    """A question on the chunk's distinctive terms (as the text writes them)."""
    own = [clean_heading(p) for p in path if clean_heading(p)]
    if lang == "zh":
        listed = "、".join(shown[:-1]) + "和" + shown[-1] if len(shown) > 1 else shown[0]
        if own:
            return f"{_subject(own[0], 'zh')}中关于{listed}有什么说明？"
        return rng.choice((f"关于{listed}，有哪些说明？", f"{listed}是怎么回事？"))
    listed = ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]
    if own:
        return f"What does {_subject(own[0], 'en')} say about {listed}?"
    return rng.choice((f"What do we know about {listed}?", f"What can you tell me about {listed}?"))


# ------------------------------------------------------------------------------------------ follow-ups
# A follow-up asks about one sentence of the chunk by what it holds, and refers back to the first question's topic
# ("it", "that", 它, 那 ... 呢) without naming it: (form, what marks such a sentence, English and Chinese wordings),
# the more specific forms first.
_COMMAND = re.compile(r"`[a-z][\w.-]*(?:\s[^`]+)`")
_ACTION = re.compile("^(?:" + "|".join(sorted(_EN_VERBS - _EN_NOUN_TOO - {"never", "always", "don't", "first"},
                                              key=len, reverse=True)) + r")\b|^(?:"
                     + "|".join(s for s in _ZH_STEPS if len(s) > 1 or s in "先再") + ")", re.IGNORECASE)
_TIME = re.compile(r"\d+\s*(?:seconds?|minutes?|hours?|days?|weeks?|months?|ms|s|min)\b|"
                   r"\d+\s*(?:秒|分钟|小时|天|周|个月)", re.IGNORECASE)
_NUMBER_UNIT = re.compile(r"\d+(?:\.\d+)?\s*(?:%|percent\b|GB\b|MB\b|rows\b|million\b|行|万|亿|个百分点)",
                          re.IGNORECASE)
_RULE = re.compile(r"\b(?:must|never|always|at least|at most|no later than)\b|必须|禁止|不得|不允许|务必|只能|应当",
                   re.IGNORECASE)
_FOLLOW_UPS: tuple[tuple[str, re.Pattern[str], tuple[str, ...], tuple[str, ...]], ...] = (
    ("default", re.compile(r"\bdefaults?\b|默认", re.IGNORECASE),
     ("What is its default value?", "What is the default for it?"), ("它的默认值是多少？", "那默认是怎样的呢？")),
    ("command", _COMMAND, ("Which command do I run for that?", "What command shows it?"),
     ("那用什么命令呢？", "用哪个命令可以查看它？")),
    ("check", re.compile(r"\b(?:check(?:s|ed|ing)?|verif(?:y|ies|ied)|inspect\w*|confirm\w*)\b|检查|查看",
                         re.IGNORECASE),
     ("How do I check it?", "How can I confirm that?"), ("怎么检查它？", "那怎么确认呢？")),
    ("time", _TIME,
     ("How long is that?", "Is there a time limit on that?"), ("那要多久呢？", "它的时限是多久？")),
    ("number", _NUMBER_UNIT, ("What are the thresholds for that?", "What numbers apply to it?"),
     ("那具体的阈值是多少？", "那具体的数字是多少？")),
    ("reason", re.compile(r"\b(?:because|so that|otherwise|to avoid|to prevent)\b|因为|否则|以免|避免|为了|防止",
                          re.IGNORECASE),
     ("Why is it done that way?", "What is the reason for it?"), ("为什么要这样做？", "这样做的原因是什么？")),
    ("rule", _RULE, ("Are there any rules for that?", "What must I keep in mind about it?"),
     ("那有什么要求呢？", "这个有什么规定？")),
    ("action", _ACTION, ("What should I do about it?", "What do I do in that case?"),
     ("那应该怎么处理？", "遇到这种情况该怎么办？")),
)
_FOLLOW_UP_ANY = (("Can you tell me more about that?", "What else should I know about it?"),
                  ("那具体是怎样的呢？", "那还有什么要注意的呢？"))
# What a first question already asks, so its follow-up does not ask it again.
_ASKS_ACTION = re.compile(r"^(?:how do i|what are the steps|what should i do)|如何|怎样|怎么做|怎么处理|怎么办",
                          re.IGNORECASE)
_ASKS_RULE = re.compile(r"\b(?:rules?|must|never)\b|要求|规定|必须|不能", re.IGNORECASE)
_ASKS_TIME = re.compile(r"\b(?:how long|when)\b|多久|时限|什么时候|何时", re.IGNORECASE)


def follow_up_question(sentences: Sequence[str], first: str, lang: str, rng: random.Random,
                       answered: str = "") -> tuple[str, str]:
    """(a follow-up to the question `first`, the sentence of `sentences` that answers it). The follow-up asks what
    the first form of `_FOLLOW_UPS` that one of the sentences holds asks (a default, a command, a check, a time, a
    number, a reason, a rule, an action), preferring a sentence other than `answered` (the one answering `first`);
    a form the first question already asks is skipped. With none, it asks for more about it."""
    skip = {"action"} if _ASKS_ACTION.search(first) else set()
    skip |= {"rule"} if _ASKS_RULE.search(first) else set()
    skip |= {"time"} if _ASKS_TIME.search(first) else set()
    ordered = [s for s in sentences if s != answered] + [s for s in sentences if s == answered]
    for form, mark, english, chinese in _FOLLOW_UPS:
        if form in skip:
            continue
        found = next((s for s in ordered if mark.search(" ".join(_EMPHASIS.sub("", s).split()))), None)
        if found is not None:
            return rng.choice(chinese if lang == "zh" else english), found
    english, chinese = _FOLLOW_UP_ANY
    return rng.choice(chinese if lang == "zh" else english), ordered[0]
