"""Scoring the agent's answers on a test set, not only the retrieval.

The agent is passed in (built by the entry point with the chat page's loop, tools and settings, or offline);
each item's question is one turn of `Agent.run(question, Session())`, folded by `AssistantTurn.from_events`
as the chat page and `/api/chat` fold it. A follow-up item is asked in the session of its `history`: an earlier
question with its answer is put in the session as it is, one without (a generated follow-up's first question) is
asked of the agent first, unscored, so the follow-up comes after the agent's own answer, as in a chat. Per item,
and as means over the items they apply to:

* `answer_found`: a gold answer occurs in the agent's answer as a contiguous run of tokens
  (`textmatch.match_tokens`: NFKC, lower case, Chinese by characters, English by words; punctuation, Markdown
  and the `[evidence key]` citations do not count). `f1`: SQuAD's token-level F1 of the answer against the
  gold answer (the best of several). Both on items that should be answered and have a gold answer.
* `citations_valid`: every evidence key the answer cites was among the evidence the agent received this turn
  (on answers that cite anything; `cites` is the share of answered items that cite at all).
* `citation_support`: a gold answer lies (as tokens, as above) in one of the cited chunks, read whole.
* `refused`: the answer says the knowledge base does not answer the question (`REFUSAL_PATTERNS`, phrases
  in English and Chinese, looked for outside quotations: a heuristic, and recorded as such). `refusals` is
  its share on the items that should not be answerable (the right behaviour); `false_refusals` on the others.
* `faithfulness`, only with a judge model (`ports.ChatModel`, passed in; any OpenAI-compatible): the
  answer's sentences (`agent.offline.sentences`: prose, list items and table rows; no headings or code) are
  judged, all at once, against the cited evidence: "supported", "unsupported" or "no_claim" (a sentence
  that states nothing to check, such as a framing line). Faithfulness = supported / (supported +
  unsupported). The judge's prompt and every raw reply are saved with the run; a reply that is not the
  verdicts asked for is asked again, then recorded as a failure (that item has no figure). Without a judge the
  metric is absent (None) and the run says why: never a zero or a guess.

A turn that ends in an error is recorded with its message and scored as an empty answer (found nothing,
cited nothing), and counted in `errors`. Runs are saved like retrieval runs (`results.save_run`: run.json,
summary.csv, queries.csv) under `<data-dir>/eval/answers/`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..agent.offline import sentences
from ..agent.session import Session, Turn
from ..agent.turn import AssistantTurn
from ..config import Settings
from ..errors import EvaluationError
from ..languages import CJK, language_of
from ..ports import ChatModel
from . import metrics as m
from .datasets import choose_queries
from .modelcalls import JsonAsker
from .results import read_run_json, save_run
from .runner import EvalProgress
from .testsets import TestItem, TestSet
from .textmatch import contains_tokens, match_tokens, token_f1

RUN_KIND = "answers"
JUDGE_PROMPT_VERSION = "judge-1"
VERDICTS = ("supported", "unsupported", "no_claim")
NO_JUDGE = ("no judge model configured (eval.judge-model): faithfulness is not measured; the other figures do "
            "not need one")

REFUSAL_PATTERNS = (
    r"\b(?:does|do|did)\s*(?:not|n't)\s+(?:seem to\s+)?(?:cover|contain|mention|include|say|describe|answer|"
    r"address|specify|document)\b",
    r"\bno (?:information|mention|details?|documentation|results?|relevant)\b",
    r"\b(?:not|nothing) (?:found|covered|mentioned|documented|described)\b",
    r"\bhas nothing (?:that matches|about|on)\b",
    r"\b(?:could|can)(?:\s*not|n't) (?:find|answer)\b",
    r"\bunable to (?:find|answer)\b",
    r"\bnot (?:in|part of|covered by) the knowledge base\b",
    r"没有找到",
    r"未找到",
    r"找不到",
    r"没有(?:提到|提及|涉及|覆盖|包含|相关|说明|记载)",
    r"未(?:提到|提及|涉及|覆盖|包含|说明|记载)",
    r"无相关",
    r"无法回答",
    r"知识库中?没有",
)
_REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.I)
# What the answer quotes is the documents' words, not the agent's: "实在找不到合适的位置" in a quote is no refusal.
_QUOTED = re.compile(r"“[^”]*”|\"[^\"\n]*\"|「[^」]*」|^\s*>.*$", re.M)
_CITATION = re.compile(r"[\[【][^\[\]【】\n]{0,400}?(?:#chunk-\d+(?:\.\.\d+)?|vector:\S+|content:[0-9a-f]{16})"
                       r"[^\[\]【】\n]{0,400}?[\]】]")

JUDGE = {
    "en": """\
You judge whether an answer is faithful to its evidence. You get the evidence passages the answer cites and \
the answer's sentences, numbered.
For each sentence, say whether the evidence supports it: "supported" (the evidence states it or directly implies \
it), "unsupported" (it states something the evidence does not support, or contradicts), or "no_claim" (it states \
nothing to check, e.g. a framing line or a pointer to the sources). Judge by the evidence only, not by what you \
know.
Reply with only this JSON object and nothing else: {"verdicts": [{"sentence": 1, "verdict": "supported"}, ...]} \
with one entry for every sentence.
""",
    "zh": """\
你判断一个回答是否忠实于它的依据。下面给你回答所引用的依据段落，以及回答的各个句子（已编号）。
对每个句子判断依据是否支持它："supported"（依据陈述了它或直接蕴含它）、"unsupported"（它陈述了依据不支持或与依据矛盾的内容）、\
"no_claim"（它没有需要核对的内容，例如引导语或对出处的说明）。只根据依据判断，不要根据你自己的知识。
只回复下面这个 JSON 对象，不要任何其他内容：{"verdicts": [{"sentence": 1, "verdict": "supported"}, ...]}，每个句子一项。
""",
}
JUDGE_CORRECTION = {
    "en": "That was not the verdicts asked for: {problem}. Reply again with only the JSON object.",
    "zh": "这不是所要求的判断结果：{problem}。请重新回复，只包含这个 JSON 对象。",
}

AnswerProgress = Callable[[EvalProgress], None]  # stage "answering" (items)


@dataclass
class AnswerRun:
    """One scoring of the agent's answers: per-item records, the summary, and how it was run."""

    set_name: str
    set_info: Mapping[str, Any]
    config: dict[str, Any]
    started_at: str
    seconds: float
    items: list[dict[str, Any]]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": RUN_KIND, "set": self.set_name, "set_info": dict(self.set_info), "config": self.config,
                "started_at": self.started_at, "seconds": round(self.seconds, 3), "summary": self.summary,
                "warnings": self.warnings, "items": self.items}

    # what results.save_run writes as summary.csv and queries.csv
    def summary_rows(self) -> list[dict[str, Any]]:
        return [self.summary]

    def query_rows(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in item.items() if k not in ("judge", "evidence")} for item in self.items]


# ------------------------------------------------------------------------------------------ text
def answer_text(text: str) -> str:
    """The answer without its `[evidence key]` citations (they are scored as citations, not as words)."""
    return _CITATION.sub(" ", text or "")


def refuses(text: str) -> bool:
    """Whether the answer, outside what it quotes, says the knowledge base does not answer the question."""
    return bool(_REFUSAL.search(_QUOTED.sub(" ", answer_text(text))))


def found_in(text: str, answers: Sequence[str]) -> bool:
    tokens = match_tokens(answer_text(text))
    return any(contains_tokens(tokens, match_tokens(a)) for a in answers)


def best_f1(text: str, answers: Sequence[str]) -> float:
    tokens = match_tokens(answer_text(text))
    return max((token_f1(tokens, match_tokens(a)) for a in answers), default=0.0)


# ------------------------------------------------------------------------------------------ scoring
def score_answers(agent: Any, test_set: TestSet | Sequence[TestItem], *, judge: ChatModel | None = None,
                  sample: int | None = None, seed: int | None = None, set_name: str | None = None,
                  progress: AnswerProgress | None = None, judge_retries: int = 2, judge_deadline: float = 120.0,
                  clock: Callable[[], float] = time.monotonic) -> AnswerRun:
    """Run `agent` (an `Agent`: `run(question, session)` yields its events) on every item of the set that is not
    dropped (or a seeded `sample` of them) and score each answer (see the module docstring)."""
    if isinstance(test_set, TestSet):
        name, items, meta = set_name or test_set.name, test_set.active, dict(test_set.meta)
    else:
        name, items, meta = set_name or "items", tuple(i for i in test_set if i.active), {}
    if not items:
        raise EvaluationError(f"The test set {name!r} has no items to ask (every item is dropped, or it is empty).")
    chosen, subset = choose_queries(list(items), sample=sample, seed=seed)
    started, started_at = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
    report = progress or (lambda _: None)
    asker = JsonAsker(judge, retries=judge_retries, deadline=judge_deadline, clock=clock) if judge else None
    records: list[dict[str, Any]] = []
    report(EvalProgress("answering", 0, len(chosen), agent.describe()))
    for n, item in enumerate(chosen, start=1):
        records.append(_score_item(agent, item, asker))
        report(EvalProgress("answering", n, len(chosen), f"item {item.id}"))
    summary = summarize(records, judged=asker is not None)
    warnings = []
    if summary["errors"]:
        first = next(r["error"] for r in records if r["error"])
        warnings.append(f"{summary['errors']} of {len(records)} turns ended in an error (scored as empty answers); "
                        f"first: {first}")
    if asker is not None and summary["judge_failures"]:
        warnings.append(f"The judge gave no usable verdicts on {summary['judge_failures']} items: they have no "
                        "faithfulness figure (their raw replies are saved with the run).")
    if meta.get("generator") == "offline":
        warnings.append("This set was generated offline (questions made of the documents' own words): compare "
                        "configurations with it, do not read its figures as absolute quality.")
    config = {"agent": agent.describe(), "mode": agent.mode, "refusal_rule": "any of REFUSAL_PATTERNS "
              "(rag_core.evaluation.answers), English and Chinese phrases; a heuristic",
              "judge": None if judge is None else {"model": judge.describe(), "prompt_version": JUDGE_PROMPT_VERSION,
                                                   "prompt": JUDGE, "correction": JUDGE_CORRECTION},
              "faithfulness": "judged" if judge is not None else NO_JUDGE}
    info = {"items": len(items), "queries": subset, "meta": meta}
    return AnswerRun(name, info, config, started_at, time.perf_counter() - started, records, summary, warnings)


def _session(agent: Any, item: TestItem) -> Session:
    """The conversation an item is asked in: its earlier turns (see the module docstring); empty for most."""
    session = Session()
    turns = list(item.history)
    for n, turn in enumerate(turns):
        if turn.role != "user":
            continue
        answer = turns[n + 1] if n + 1 < len(turns) and turns[n + 1].role == "assistant" else None
        if answer is not None:
            session.add(Turn(turn.content, answer.content))
        else:
            for _ in agent.run(turn.content, session):  # the agent answers it, unscored; its turn joins the session
                pass
    return session


def _score_item(agent: Any, item: TestItem, asker: JsonAsker | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    turn = AssistantTurn.from_events(agent.run(item.query, _session(agent, item)))
    seconds = time.perf_counter() - t0
    text = turn.text if turn.error is None else ""
    received = [p["document_id"] for s in turn.tools() for p in (s.lookup or {}).get("projection", [])]
    evidence = turn.evidence()
    cited = list(turn.citations) + list(turn.unverified)
    scored = item.should_answer and bool(item.answers)
    cited_text = [evidence[k]["content"] for k in turn.citations if k in evidence]
    record: dict[str, Any] = {
        "id": item.id, "query": item.query, "should_answer": item.should_answer, "gold": list(item.answers),
        "relevant": list(item.relevant), "source": item.source, "answer": turn.text, "error": turn.error,
        "citations": list(turn.citations), "unverified_citations": list(turn.unverified),
        "evidence_keys": list(dict.fromkeys(received)),
        "answer_found": found_in(text, item.answers) if scored else None,
        "f1": round(best_f1(text, item.answers), 6) if scored else None,
        "cites": bool(cited),
        "citations_valid": (not turn.unverified) if cited else None,
        "citation_support": any(found_in(c, item.answers) for c in cited_text) if scored else None,
        "refused": refuses(text),
        "seconds": round(seconds, 3),
    }
    if asker is not None:
        record.update(_judge(asker, text, [(k, evidence[k]["content"]) for k in turn.citations if k in evidence]))
    return record


def _judge(asker: JsonAsker, text: str, cited: Sequence[tuple[str, str]]) -> dict[str, Any]:
    claims = sentences(answer_text(text))
    if not claims:
        return {"faithfulness": None, "judge": {"sentences": [], "verdicts": [], "raw": [], "error": None}}
    lang = "zh" if language_of(text) == CJK else "en"
    evidence = "\n\n".join(f"[{key}]\n<<<\n{content}\n>>>" for key, content in cited) or "(the answer cites nothing)"
    numbered = "\n".join(f"{n}. {s}" for n, s in enumerate(claims, start=1))
    messages = [{"role": "system", "content": JUDGE[lang]},
                {"role": "user", "content": f"Evidence:\n{evidence}\n\nAnswer sentences:\n{numbered}"}]
    reply = asker.ask(messages, lambda v: _check_verdicts(v, len(claims)),
                      lambda problem: JUDGE_CORRECTION[lang].format(problem=problem))
    judged: dict[str, Any] = {"sentences": claims, "raw": list(reply.raw), "error": None, "verdicts": []}
    if reply.value is None:
        judged["error"] = f"{reply.failure}: {reply.detail}"
        return {"faithfulness": None, "judge": judged}
    verdicts = {int(v["sentence"]): v["verdict"] for v in reply.value["verdicts"]}
    judged["verdicts"] = [verdicts[n] for n in range(1, len(claims) + 1)]
    supported = judged["verdicts"].count("supported")
    unsupported = judged["verdicts"].count("unsupported")
    faithfulness = supported / (supported + unsupported) if supported + unsupported else None
    return {"faithfulness": None if faithfulness is None else round(faithfulness, 6), "judge": judged}


def _check_verdicts(value: Mapping[str, Any], n: int) -> str | None:
    verdicts = value.get("verdicts")
    if not isinstance(verdicts, list):
        return '"verdicts" must be a list'
    seen = set()
    for v in verdicts:
        if not isinstance(v, dict) or isinstance(v.get("sentence"), bool) or not isinstance(v.get("sentence"), int):
            return 'each verdict must be an object with a "sentence" number'
        if v.get("verdict") not in VERDICTS:
            return f'"verdict" must be one of {", ".join(VERDICTS)} (got {str(v.get("verdict"))[:30]!r})'
        seen.add(v["sentence"])
    if seen != set(range(1, n + 1)) or len(verdicts) != n:
        return f"give exactly one verdict for each of the sentences 1 to {n}"
    return None


def summarize(records: Sequence[Mapping[str, Any]], judged: bool) -> dict[str, Any]:
    """Means over the items each figure applies to (None when it applies to none)."""
    answerable = [r for r in records if r["should_answer"]]
    unanswerable = [r for r in records if not r["should_answer"]]
    faithful = [r.get("faithfulness") for r in records]
    summary: dict[str, Any] = {
        "items": len(records), "answerable": len(answerable), "unanswerable": len(unanswerable),
        "errors": sum(1 for r in records if r["error"]),
        "answer_found": m.mean(float(r["answer_found"]) for r in answerable if r["answer_found"] is not None),
        "f1": m.mean(r["f1"] for r in answerable),
        "cites": m.mean(float(r["cites"]) for r in answerable),
        "citations_valid": m.mean(float(r["citations_valid"]) for r in records if r["citations_valid"] is not None),
        "citation_support": m.mean(float(r["citation_support"]) for r in answerable
                                   if r["citation_support"] is not None),
        "refusals": m.mean(float(r["refused"]) for r in unanswerable),
        "false_refusals": m.mean(float(r["refused"]) for r in answerable),
        "faithfulness": m.mean(faithful) if judged else None,
        "faithfulness_note": None if judged else NO_JUDGE,
        "judged": sum(1 for f in faithful if f is not None) if judged else 0,
        "judge_failures": sum(1 for r in records if (r.get("judge") or {}).get("error")) if judged else 0,
        "seconds_p50": m.percentile([r["seconds"] for r in records], 50),
    }
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in summary.items()}


# ------------------------------------------------------------------------------------------ saved runs
def answers_dir(settings: Settings) -> Path:
    """Where answer runs are saved: beside the retrieval runs (`results.runs_dir`), apart from them."""
    return settings.data_dir / "eval" / "answers"


def save_answer_run(run: AnswerRun, out_dir: str | Path) -> dict[str, Path]:
    """run.json, summary.csv (one row) and queries.csv (one row per item) in `out_dir`, as retrieval runs."""
    return save_run(run, out_dir)


def load_answer_run(path: str | Path) -> dict[str, Any]:
    """A saved answer run (its folder or its run.json) as `AnswerRun.to_dict` wrote it."""
    path, data = read_run_json(path, "answer run")
    if not isinstance(data, dict) or data.get("kind") != RUN_KIND:
        raise EvaluationError(f"{path} is not a saved answer run (a retrieval run is read with load_run).")
    return data
