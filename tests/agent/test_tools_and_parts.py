"""Pure parts: tool schemas from signatures, the toolbox's error objects, citations and events (the assembly of
streamed tool-call fragments is the chat model client's: tests/clients/test_openai_chat.py)."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from rag_core.agent import DoneEvent, Tool, Toolbox, ToolOutput, extract_citations
from rag_core.agent.events import ErrorEvent, ToolCallEvent
from rag_core.citations import check_citations


def forecast(city: str, days: int = 1, unit: Literal["c", "f"] = "c", tags: list[str] | None = None) -> dict:
    """Weather forecast for a city.
    Use it for questions about the weather.

    Args:
        city: City name, e.g. "Hangzhou".
        days: How many days ahead;
            at most 7.
        unit: Temperature unit.
    """
    return {"city": city, "days": days, "unit": unit, "tags": tags}


def test_schema_comes_from_the_signature_and_docstring() -> None:
    tool = Tool.from_function(forecast)
    assert tool.spec() == {"type": "function", "function": {
        "name": "forecast",
        "description": "Weather forecast for a city. Use it for questions about the weather.",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": 'City name, e.g. "Hangzhou".'},
            "days": {"type": "integer", "description": "How many days ahead; at most 7.", "default": 1},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit.", "default": "c"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": None},
        }}}}


def test_a_tool_needs_a_docstring_and_describable_types() -> None:
    def bare(x: str) -> str:
        return x

    def odd(x: dict) -> str:
        """Odd."""
        return ""

    with pytest.raises(ValueError, match="needs a docstring"):
        Tool.from_function(bare)
    with pytest.raises(ValueError, match="no JSON schema mapping"):
        Tool.from_function(odd)


def test_the_toolbox_answers_mistakes_with_error_objects() -> None:
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("internal detail /etc/secret")

    box = Toolbox([Tool.from_function(forecast), Tool.from_function(boom)])
    ok = box.run("forecast", '{"city": "Hangzhou", "days": 2, "extra": true}')
    assert ok.output == ToolOutput({"city": "Hangzhou", "days": 2, "unit": "c", "tags": None})
    assert ok.arguments == {"city": "Hangzhou", "days": 2, "extra": True} and not ok.malformed

    bad_json = box.run("forecast", '{"city": "Hang')
    assert bad_json.malformed and bad_json.arguments is None and not bad_json.output.ok
    assert bad_json.output.data["received"] == '{"city": "Hang'
    assert 'Call it again with a JSON object such as {"city": "..."}' in bad_json.output.error

    assert "expected a JSON object, got list" in box.run("forecast", "[1]").output.error
    # A "\ud800" escape without its pair is not text: the model is told, nothing runs on it (#21 item 5).
    broken = box.run("forecast", '{"city": "Hang\\ud800"}')
    assert broken.malformed and broken.arguments is None
    assert "city: character 5 is a lone UTF-16 surrogate (U+D800" in broken.output.error
    assert box.run("forecast", {"city": "x\udcff"}).malformed
    assert "must be a whole number" in box.run("forecast", {"city": "x", "days": "2"}).output.error
    assert 'must be one of "c", "f"' in box.run("forecast", {"city": "x", "unit": "k"}).output.error
    assert box.run("boom", "").output.error.startswith("The tool boom failed unexpectedly")
    assert "/etc/secret" not in json.dumps(box.run("boom", None).output.data)
    with pytest.raises(ValueError, match="Two tools"):
        box.add(Tool.from_function(forecast))


def test_citations_in_the_forms_models_write_them() -> None:
    text = ("Restart it [runbooks/cpu_high.md#chunk-2]. Twice [runbooks/cpu_high.md#chunk-2][a.md#chunk-0]; "
            "list [b.md#chunk-1, c d.md#chunk-3；e.md#chunk-4] 【f.md#chunk-5】 [`g.md#chunk-6`] "
            "[document_id: h.md#chunk-7] see [the docs](https://x.example/a#chunk-9) [1] [sic] [vector:abc] [x.md]")
    assert extract_citations(text) == ["runbooks/cpu_high.md#chunk-2", "a.md#chunk-0", "b.md#chunk-1",
                                       "c d.md#chunk-3", "e.md#chunk-4", "f.md#chunk-5", "g.md#chunk-6",
                                       "h.md#chunk-7", "vector:abc"]
    assert extract_citations("[x.md]", known=["x.md"]) == ["x.md"]  # a returned key counts whatever its shape
    assert check_citations("A [a#chunk-1] B [z#chunk-9]", ["a#chunk-1", "b#chunk-2"]) == (
        ("a#chunk-1",),
        ("z#chunk-9",),
    )


def test_events_are_frozen_with_a_type_and_a_dict() -> None:
    done = DoneEvent("t", ("a#chunk-1",), (), ("a#chunk-1",), 1, "model")
    assert done.to_dict() == {"text": "t", "citations": ["a#chunk-1"], "unverified_citations": [],
                              "evidence_keys": ["a#chunk-1"], "steps": 1, "mode": "model", "stop_reason": "answer",
                              "trace_id": "", "turn_index": -1, "usage": None, "type": "done"}
    assert ToolCallEvent("c1", "f", {"q": 1}, '{"q": 1}', 1).type == "tool_call"
    with pytest.raises(AttributeError):
        ErrorEvent("m", "server", 1).message = "x"  # type: ignore[misc]
