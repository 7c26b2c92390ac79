"""`eval generate`, a saved set run by its name through `eval`, and `eval answers`, through the CLI in-process
on the two real knowledge bases of `two_kbs` (examples/kb chunked 800/100 and 300/30; Milvus Lite, the local
embedder); the judge through the loopback OpenAI-protocol server. The command-line errors are one line each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_core.cli import main
from rag_core.feedback import FILE_NAME, TurnStore
from tests.servers.chat import Completion, OpenAIChatServer

KEY = "sk-cli-judge-SECRET-03b7e1"


@pytest.fixture(scope="module")
def data(two_kbs) -> Path:
    return two_kbs


def run(data: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def saved(data: Path) -> dict[str, Any]:
    """`eval generate --name biz12`: the offline set of 12 from biz, saved under the data folder."""
    code = main(["--data-dir", str(data), "eval", "generate", "--kb", "biz", "--size", "12", "--seed", "0",
                 "--name", "biz12", "--quiet", "--json"])
    assert code == 0
    return {"path": data / "eval" / "testsets" / "biz12.jsonl"}


def test_generate_offline_is_deterministic_for_a_seed_and_says_how_far_to_trust_it(data, saved, tmp_path, capsys):
    code, out, err = run(data, capsys, "eval", "generate", "--kb", "biz", "--size", "12", "--seed", "0",
                         "--out", str(tmp_path / "again.jsonl"), "--quiet")
    assert code == 0, err
    assert saved["path"].read_text(encoding="utf-8") == (tmp_path / "again.jsonl").read_text(encoding="utf-8")
    assert out.startswith(f"{tmp_path / 'again.jsonl'}: 12 items (0 should not be answerable) from biz")
    assert "rejected: " in out and "generator offline, seed 0" in out
    assert "flatter keyword search (BM25)" in err  # the plain warning, every time
    meta = json.loads((tmp_path / "again.meta.json").read_text(encoding="utf-8"))
    assert (meta["generator"], meta["seed"], meta["kept"], meta["knowledge_base"]) == ("offline", 0, 12, "biz")
    lines = [json.loads(line) for line in saved["path"].read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12 and all(r["generator"] == "offline" and r["source"] for r in lines)

    code, out, err = run(data, capsys, "eval", "generate", "--kb", "biz", "--size", "12", "--seed", "1",
                         "--out", str(tmp_path / "other.jsonl"), "--quiet")
    assert code == 0 and (tmp_path / "other.jsonl").read_text() != (tmp_path / "again.jsonl").read_text()


def test_a_saved_set_runs_by_its_name_on_knowledge_bases_chunked_differently(data, saved, capsys) -> None:
    code, out, err = run(data, capsys, "eval", "biz12", "--kb", "biz,small", "--quiet", "--no-save", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["set"] == "biz12" and [p["params"]["kb"] for p in result["points"]] == ["biz", "small"]
    assert all(len(p["queries"]) == 12 for p in result["points"])
    biz = result["points"][0]["metrics"]
    assert biz["recall@20"] > 0.9  # the set's relevant ids are the knowledge base's doc_ids
    code, out, err = run(data, capsys, "eval", "no-such-set", "--quiet")
    # the saved sets are named (other tests of the session may have saved more in this data folder)
    assert code == 2 and re.search(r"a saved test set \([^)]*\bbiz12\b", err) and len(err.splitlines()) == 1


def test_eval_answers_offline_pins_its_figures_and_says_faithfulness_is_absent(data, saved, offline_figures,
                                                                              capsys) -> None:
    code, out, err = run(data, capsys, "eval", "answers", "biz12", "--kb", "biz", "--offline", "--quiet",
                         "--no-save", "--json")
    assert code == 0, err
    result = json.loads(out)
    s = result["summary"]
    assert (s["items"], s["answerable"], s["errors"]) == (12, 12, 0)
    assert {k: s[k] for k in offline_figures} == offline_figures  # the offline agent's, on the same 12 items
    assert s["faithfulness"] is None and s["faithfulness_note"].startswith("no judge model configured")
    assert [r["id"] for r in result["items"]] == [f"g{n:03d}" for n in range(1, 13)]

    turns = data / FILE_NAME  # other tests of the session may have chatted in this data folder
    recorded = TurnStore(turns).count() if turns.exists() else 0
    code, out, err = run(data, capsys, "eval", "answers", "biz12", "--offline", "--quiet", "--sample", "3",
                         "--out", str(data / "answers-run"))
    assert code == 0, err
    assert "faithfulness: absent: no judge model configured" in out
    assert out.count("\ng0") == 3 and "saved " in out
    assert json.loads((data / "answers-run" / "run.json").read_text(encoding="utf-8"))["kind"] == "answers"
    # the agent's answers on a test set are not conversations: nothing is recorded for feedback or Failures
    assert (TurnStore(turns).count() if turns.exists() else 0) == recorded
    code, out, err = run(data, capsys, "eval", "answers", "nope", "--offline")
    assert code == 2 and re.fullmatch(r"error: No test set named 'nope' \(saved sets: [^)]*\bbiz12\b[^)]*\)\.\n", err)


def test_the_judge_configured_by_eval_judge_model_through_the_openai_protocol(data, saved, capsys,
                                                                             monkeypatch) -> None:
    monkeypatch.setenv("H23_JUDGE_KEY", KEY)

    def verdicts(request: Any) -> Completion:
        numbered = request.json["messages"][1]["content"].split("Answer sentences:\n", 1)[1].splitlines()
        return Completion.say(json.dumps({"verdicts": [{"sentence": n, "verdict": "supported"}
                                                       for n in range(1, len(numbered) + 1)]}))

    for server in OpenAIChatServer(api_key=KEY).serve():
        server.reply(*([verdicts] * 10))
        sets = {"chat.provider": "openai", "chat.base-url": server.base_url, "chat.model": "unused",
                "chat.api-key-env": "H23_JUDGE_KEY", "chat.max-retries": 0, "eval.judge-model": server.models[0]}
        argv = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
        code, out, err = run(data, capsys, *argv, "eval", "answers", "biz12", "--offline", "--sample", "2",
                             "--quiet", "--no-save", "--json")
        assert code == 0, err
        result = json.loads(out)
        assert result["summary"]["faithfulness"] == 1.0 and result["summary"]["judged"] == 2
        assert result["config"]["judge"]["model"].startswith(f"{server.models[0]} via")
        assert all(r["judge"]["raw"] for r in result["items"])  # the raw verdicts are saved with the run
        assert len(server.chat_requests()) == 2 and server.chat_requests()[0]["model"] == server.models[0]
        assert KEY not in out


def test_command_line_errors_are_one_clear_line(data, saved, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    cases = [
        (("eval", "generate", "--kb", "biz", "--size", "500", "--out", str(tmp_path / "x.jsonl")),
         "can give at most 149 items"),
        (("eval", "generate", "--size", "5", "--out", str(tmp_path / "x.csv")), "give a .jsonl file"),
        (("eval", "generate", "--size", "5", "--name", "bad/name"), "Test set name 'bad/name'"),
        (("eval", "generate", "--kb", "biz", "--size", "5", "--generator", "model", "--out",
          str(tmp_path / "x.jsonl")), "--generator model needs a chat model"),
        (("--set", "eval.judge-model=judge", "eval", "answers", "biz12"), "eval.judge-model = judge needs a chat "
                                                                           "endpoint"),
    ]
    for argv, message in cases:
        code, out, err = run(data, capsys, *argv, *(("--quiet",) if argv[1] == "generate" else ()))
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "x.jsonl").exists()


def test_an_empty_knowledge_base_is_one_clear_line(tmp_path, capsys, milvus) -> None:
    code, out, err = run(tmp_path, capsys, "eval", "generate", "--size", "5", "--name", "none", "--quiet")
    assert code == 2 and "is empty: ingest documents first" in err
    assert not (tmp_path / "eval" / "testsets").exists()


def test_generate_with_a_follow_up_share_writes_items_with_their_history(data, tmp_path, capsys) -> None:
    out = tmp_path / "conv.jsonl"
    code, printed, err = run(data, capsys, "eval", "generate", "--kb", "biz", "--size", "8", "--follow-up-share",
                             "0.25", "--out", str(out), "--quiet")
    assert code == 0 and "8 items (0 should not be answerable, 2 follow-ups)" in printed, printed + err
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["kind"] == "follow_up" for line in lines] == [False, False, False, True] * 2
    assert all([t["role"] for t in line["history"]] == ["user"] for line in lines if line["kind"] == "follow_up")
    assert json.loads(out.with_name("conv.meta.json").read_text(encoding="utf-8"))["follow_up_share"] == 0.25
    with pytest.raises(SystemExit) as exit_:
        run(data, capsys, "eval", "generate", "--size", "8", "--follow-up-share", "2", "--out",
            str(tmp_path / "x.jsonl"), "--quiet")
    assert exit_.value.code == 2
    assert "--follow-up-share: 2 is not between 0 and 1" in capsys.readouterr().err


def test_with_database_url_a_named_set_is_saved_in_the_database_and_runs_by_its_name(data, tmp_path, capsys) -> None:
    """database.url set: `eval generate --name` writes a row, no file; `eval NAME` and `eval answers NAME` read it."""
    from rag_core.db.engine import engine
    from rag_core.evaluation.testsets_sql import SqlTestSets

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    shared = ("--set", f"database.url={url}")
    code, out, err = run(data, capsys, *shared, "eval", "generate", "--kb", "biz", "--size", "4", "--seed", "0",
                         "--name", "biz-db", "--quiet")
    assert code == 0, err
    assert out.startswith(f"test set biz-db in {url}: 4 items")
    assert not (data / "eval" / "testsets" / "biz-db.jsonl").exists()
    sets = SqlTestSets(engine(url))
    try:
        assert [(s.name, s.items, s.generator) for s in sets.list_sets()] == [("biz-db", 4, "offline")]
        assert sets.load("biz-db").meta["knowledge_base"] == "biz"
    finally:
        sets.close()
    code, out, err = run(data, capsys, *shared, "eval", "biz-db", "--kb", "biz", "--quiet", "--no-save", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["set"] == "biz-db" and len(result["points"][0]["queries"]) == 4
    code, out, err = run(data, capsys, *shared, "eval", "answers", "biz-db", "--kb", "biz", "--offline", "--quiet",
                         "--no-save", "--json")
    assert code == 0, err
    assert json.loads(out)["summary"]["items"] == 4
    code, out, err = run(data, capsys, *shared, "eval", "biz12", "--quiet")  # the folder's sets are not the database's
    assert code == 2 and "a saved test set (biz-db)" in err
