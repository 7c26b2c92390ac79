"""Conversations: the last question of each conversation of the bundled set `sample-conversations`
(examples/kb_conversations.jsonl, over examples/kb, indexed with the real local embedder) searched three ways in one
run, through `rag_core.evaluation.run_evaluation` at the lookup defaults: alone (`rag.rewrite = off`, the baseline),
with the offline rewrite (`offline`), and with a model rewrite (`model`) through a loopback OpenAI-compatible chat
server whose replies are scripted: for each conversation, the hand-written standalone question below
(`STANDALONE`), so the model row measures the pipeline (the request, the fact check, the search of the rewrite),
not a model.

Hit rate: the share of conversations whose answer (an exact quote of a relevant document) is in the evidence, per
kind (pronoun and ellipsis follow-ups, and topic switches whose last question stands alone) and overall. "Worse":
the conversations that hit when searched alone and miss after the rewrite (a switch needs no rewrite, so any there
is a rewrite that hurt). Aim: the offline rewrite lifts the hit rate of the follow-ups by at least 30 points over
searching them alone, and makes no switch worse.

The sample knowledge base has ten documents, so even a question with no topic ("How long may I keep it?") often
finds its document among the five evidence blocks by chance: the team knowledge bases the rewrite is for hold
hundreds. So the same run measures it twice: over the ten documents alone, and with `CROWD` other documents
indexed beside them (the first by sha256 of their id, half of CMRC 2018's Chinese Wikipedia passages and half of
SciFact's English abstracts, from ../shared/eval; skipped when those sets are not there), the labels unchanged.

Writes bench/results/conversations.json (`--quick`: bench/results/quick/conversations.json).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from typing import Any

from bench.common import RESULTS, log, main, record_and_print, section, table
from rag_core.bootstrap import factories
from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation import Grid, load_set, run_evaluation
from rag_core.evaluation.datasets import (
    SAMPLE_CONVERSATIONS,
    SAMPLE_CONVERSATIONS_NAME,
    EvalSet,
    beir_document,
    eval_sets_dir,
)
from rag_core.records import Document
from rag_core.retrieval.rewrite import ModelRewriter

KEY = "sk-bench-conversations"
MODES = ("off", "offline", "model")
KINDS = ("pronoun", "ellipsis", "switch")
QUICK = 9
LIFT_AIM = 0.30
CROWD = 400  # other documents indexed beside the sample knowledge base (half Chinese, half English)
CROWD_SETS = ("cmrc2018", "scifact")

# What a model would make of each conversation's last question: the standalone question, written by hand.
STANDALONE = {
    'c01': "How should I fix PodCPUThrottlingHigh?",
    'c02': "What is the threshold of the DiskSpaceCritical alert?",
    'c03': "When are the peak hours outside which a suspended batch job is rescheduled?",
    'c04': "磁盘满了，如果正在增长的是不能删除的目录之一，该怎么办？",
    'c05': "订单服务的堆转储文件可以放在哪里，有什么要求？",
    'c06': "如果 go_goroutines 一直线性增长怎么办？",
    'c07': "用 KILL QUERY 终止一条拖慢数据库的查询之前要确认什么？",
    'c08': "Which index would fix the slow merchant query in the order database?",
    'c09': "What usually causes PaymentCallbackRejectionsHigh?",
    'c10': "支付网关的回调签名不对时会返回什么？",
    'c11': "How long is the Idempotency-Key of the order API stored?",
    'c12': "Can the order service's outbox events arrive more than once?",
    'c13': "search-service 的向量化服务超时时间是多少？",
    'c14': "/v1/ask 接口在对话模式下保留几轮对话？",
    'c15': "Is there a per-document cap on the chunks the search-service reranker returns?",
    'c16': "值班周期从什么时候开始？",
    'c17': "谁负责处理噪音告警？",
    'c18': "紧急发布也要经过灰度吗？",
    'c19': "Why is Friday not part of the regular release window?",
    'c20': "Does the Incident Commander debug?",
    'c21': "How soon must a postmortem be published?",
    'c22': "DiskWillFillIn4Hours 告警会在夜里呼叫吗？",
    'c23': "How long may I keep a heap dump of the order service?",
    'c24': "How do I check the inodes when a node's disk is full?",
    'c25': "Between how many replicas does the search-service HPA scale?",
    'c26': "Go 服务的内存泄漏怎么排查？",
    'c27': "How do I tell a memory leak that started right after a release from normal growth?",
    'c28': "慢查询日志文件在哪里？",
    'c29': "Are calls to a PSP retried?",
    'c30': "Which provider handles card payments?",
    'c31': "How many orders can a shopper session create?",
    'c32': "订单服务的 PAID 状态之后可以变成什么状态？",
    'c33': "HNSW 索引查询时的 ef 参数是多少？",
    'c34': "向量检索延迟升高一般是什么原因？",
    'c35': "关键词召回默认召回多少个候选？",
    'c36': "P3 告警的确认时限是多少？",
    'c37': "灰度发布第二阶段切多少流量？",
    'c38': "How often are P2 incident updates posted?",
    'c39': "May I rotate credentials during a security incident?",
    'c40': "When does OrderServiceErrorRateHigh fire?",
    'c41': "How long are binary logs kept on the MySQL primary?",
    'c42': "事故复盘报告需要在几天内发布？",
    'c43': "生产环境的常规发布窗口是什么时候？",
    'c44': "What is the p99 latency target for creating an order?",
    'c45': "When does the daily payment reconciliation run?",
    'c46': "How large is the HikariCP connection pool of each order-service pod?",
    'c47': "值班交接会议什么时候开？",
    'c48': "gh-ost 的 --critical-load 参数是什么意思？",
    'c49': "How soon must the first external status message for a P1 go out?",
    'c50': "What are the MTTA and MTTM targets?",
    'c51': "What does the order-timeout job do to unpaid orders?",
    'c52': "How are payment webhook signatures verified?",
    'c53': "向量检索服务的 recall@10 目标值是多少？",
    'c54': "线上出现 P1 事故时，发布窗口还有效吗？",
}


def kinds() -> dict[str, str]:
    """Conversation id -> its kind, as the bundled set marks it."""
    rows = [json.loads(line) for line in SAMPLE_CONVERSATIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["id"]: row["kind"] for row in rows}


def scripted(request: Any) -> Any:
    """The loopback model's reply: the standalone question of the conversation the request is about (its first
    and its last question are both in the prompt)."""
    from tests.servers.chat import Completion

    prompt = request.json["messages"][-1]["content"]
    for qid, (first, last) in _QUESTIONS.items():
        if first in prompt and last in prompt:
            return Completion.say(STANDALONE[qid])
    raise AssertionError(f"no scripted rewrite for {prompt[:200]!r}")


_QUESTIONS: dict[str, tuple[str, str]] = {}


def crowd(size: int) -> tuple[Document, ...]:
    """`size` documents of the BEIR sets in CROWD_SETS, the same share of each, the first by sha256 of their id (()
    when the sets are not there)."""
    root = eval_sets_dir()
    if root is None or not all((root / name / "corpus.jsonl").is_file() for name in CROWD_SETS):
        return ()
    out: list[Document] = []
    for name in CROWD_SETS:
        records = [json.loads(line) for line in (root / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        records.sort(key=lambda r: hashlib.sha256(str(r["_id"]).encode()).hexdigest())
        for record in records[: size // len(CROWD_SETS)]:
            document, _ = beir_document({**record, "_id": f"{name}/{record['_id']}"})
            out.append(document)
    return tuple(out)


def measure(quick: bool = False) -> dict[str, Any]:
    from tests.servers.chat import OpenAIChatServer

    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    eval_set = load_set(SAMPLE_CONVERSATIONS_NAME, sample=QUICK if quick else None)
    _QUESTIONS.update({q.query_id: (next(t.content for t in q.history if t.role == "user"), q.text)
                       for q in eval_set.queries})
    kind_of = kinds()
    embedder = LocalUSEEmbedder()
    others = crowd(CROWD // 10 if quick else CROWD)
    scales = {"sample": eval_set}
    if others:
        scales["crowded"] = replace(eval_set, documents=(*(eval_set.documents or ()), *others))
    server = OpenAIChatServer(api_key=KEY).start()
    try:
        model = OpenAIChatModel(ChatModelConfig(provider="openai", base_url=server.base_url, model=server.models[0],
                                                api_key_env="BENCH_KEY", max_retries=0, timeout=30.0), KEY)
        results = {scale: _measure_scale(chosen, settings, embedder, server, model, kind_of)
                   for scale, chosen in scales.items()}
    finally:
        server.stop()
    first = results["sample"]
    return {"set": SAMPLE_CONVERSATIONS_NAME, "conversations": first["conversations"],
            "by_kind": first["by_kind"], "embedder": embedder.name, "crowd": len(others), **first,
            "scales": {scale: {k: v for k, v in r.items() if k not in ("conversations", "by_kind")}
                       for scale, r in results.items()}}


def _measure_scale(eval_set: EvalSet, settings: Any, embedder: Any, server: Any, model: Any,
                   kind_of: dict[str, str]) -> dict[str, Any]:
    found: dict[str, dict[str, bool]] = {}
    searched: dict[str, dict[str, str]] = {}
    outcomes: dict[str, Counter[str]] = {}
    server.reset()
    server.reply(*([scripted] * len(eval_set.queries)))
    for mode in MODES:
        log(f"conversations: {len(eval_set.documents or ())} documents, rewrite {mode} ...")
        chosen = settings.with_overrides({"rag.rewrite": mode}, "bench.conversations")
        run = run_evaluation(eval_set, Grid.from_settings(chosen), chosen, factories=factories(),
                             embedder=embedder, rewriter=ModelRewriter(model, deadline=30.0) if mode == "model"
                             else None)
        rows = run.points[0].queries
        found[mode] = {r["query_id"]: bool(r["answer_found"]) for r in rows}
        searched[mode] = {r["query_id"]: r["searched"] for r in rows}
        outcomes[mode] = Counter(r["rewrite"] for r in rows)
    ids = [q.query_id for q in eval_set.queries]
    rates = {mode: {kind: _rate([found[mode][i] for i in ids if kind_of[i] == kind]) for kind in KINDS}
             for mode in MODES}
    for mode in MODES:
        rates[mode]["follow-up"] = _rate([found[mode][i] for i in ids if kind_of[i] != "switch"])
        rates[mode]["all"] = _rate([found[mode][i] for i in ids])
    worse = {mode: {kind: sum(1 for i in ids if kind_of[i] == kind and found["off"][i] and not found[mode][i])
                    for kind in KINDS} for mode in MODES[1:]}
    return {"conversations": len(ids), "by_kind": dict(Counter(kind_of[i] for i in ids)),
            "documents": len(eval_set.documents or ()), "rates": rates, "worse": worse,
            "outcomes": {m: dict(c) for m, c in outcomes.items()},
            "queries": [{"id": i, "kind": kind_of[i], **{m: found[m][i] for m in MODES},
                         "offline_searched": searched["offline"][i]} for i in ids]}


def _rate(hits: list[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def render(record: dict[str, Any]) -> str:
    scales = record.get("scales") or {"sample": record}
    labels = {"off": "last question alone", "offline": "offline rewrite", "model": "model rewrite (scripted)"}
    groups = [*KINDS, "follow-up", "all"]
    n = {**record["by_kind"], "follow-up": record["conversations"] - record["by_kind"].get("switch", 0),
         "all": record["conversations"]}
    md, lifts = "", []
    for scale, result in scales.items():
        rates, worse = result["rates"], result["worse"]
        documents = result.get("documents") or 10
        rows = [[labels[m], *(rates[m][g] for g in groups), "–" if m == "off" else sum(worse[m].values()),
                 "–" if m == "off" else worse[m]["switch"]] for m in MODES]
        md += (f"{'The sample knowledge base alone' if scale == 'sample' else 'Among other documents'} "
               f"({documents} documents):\n\n")
        md += table(["searched", *(f"{g} ({n.get(g, 0)})" for g in groups), "worse", "switches worse"], rows,
                    digits=2) + "\n\n"
        lift = (rates["offline"]["follow-up"] or 0) - (rates["off"]["follow-up"] or 0)
        alone = rates["off"]["follow-up"] or 0
        lifts.append(f"{lift * 100:+.0f} points over {documents} documents (alone they hit {alone * 100:.0f} %, so "
                     f"+{(1 - alone) * 100:.0f} is the most there is; {worse['offline']['switch']} switches worse)")
    rejected = sum(r["outcomes"].get("model", {}).get("model_rejected", 0) for r in scales.values())
    md += (f"Hit rate: the share of conversations whose labelled answer is in the evidence of the last question "
           f"(lookup defaults, {record['embedder']}); {record['conversations']} hand-written conversations of "
           f"`{record['set']}` (examples/kb_conversations.jsonl). Worse: hit alone, missed after the rewrite. The "
           f"offline rewrite lifts the follow-ups by {'; by '.join(lifts)} (aim: +{LIFT_AIM * 100:.0f}, no switch "
           f"worse). Among other documents: the sample knowledge base indexed beside {record.get('crowd', 0)} "
           f"passages of CMRC 2018 and SciFact, as a team's knowledge base holds hundreds of documents. The model "
           f"row is a loopback server replying with a hand-written standalone question per conversation "
           f"(bench/conversations.py), checked and searched as a model's would be ({rejected} rejected by the fact "
           f"check)." + (" Quick run: a few conversations." if record["quick"] else ""))
    return section("Conversations: the last question alone, rewritten offline, rewritten by a model", md, record)


def run(quick: bool = False) -> str:
    return record_and_print("conversations", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
