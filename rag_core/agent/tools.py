"""Tools are plain typed functions; their JSON schema comes from the signature and the docstring.

    def get_weather(city: str, days: int = 1) -> dict:
        '''Forecast for a city.

        Args:
            city: City name, e.g. "Hangzhou".
            days: How many days ahead.
        '''

    toolbox = Toolbox([Tool.from_function(get_weather)])

The docstring's text before `Args:` is the description the model reads (so it says *when* to use the
tool); each `name: text` line under `Args:` describes a parameter. Parameters without a default are
required. A tool returns anything JSON-serialisable, or a `ToolOutput` to attach a LookupResult.

`Toolbox.run` never raises for things the model got wrong (arguments that are not JSON, an unknown tool,
a missing argument) or for a tool that fails: the model gets an `{"error": ...}` object and can try
again or tell the person.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import time
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidText, RagError
from ..retrieval import LookupResult
from ..text import check_texts

log = logging.getLogger(__name__)

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class ToolOutput:
    """A tool's answer: `data` goes to the model as JSON. `lookup` (knowledge-base tool) travels with
    the tool_result event; `evidence_keys` are the citable keys the model was shown (each `document_id`, and the
    keys a block of several hits lists in `matched`)."""

    data: Any
    ok: bool = True
    error: str | None = None
    lookup: LookupResult | None = None
    evidence_keys: tuple[str, ...] = ()

    @classmethod
    def failure(cls, message: str, **extra: Any) -> ToolOutput:
        return cls({"error": message, **extra}, ok=False, error=message)


@dataclass(frozen=True)
class ToolRun:
    """One executed call: the parsed arguments (None when they were not JSON) and the output."""

    arguments: Mapping[str, Any] | None
    output: ToolOutput
    seconds: float
    malformed: bool = False

    def content(self) -> str:
        """The tool message's content sent to the model."""
        return json.dumps(self.output.data, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments object
    fn: Callable[..., Any] = field(repr=False)

    @classmethod
    def from_function(cls, fn: Callable[..., Any], name: str | None = None) -> Tool:
        description, arg_help = _parse_docstring(inspect.getdoc(fn) or "")
        if not description:
            raise ValueError(f"Tool {fn.__name__} needs a docstring: it is what tells the model when to use it.")
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"Tool {fn.__name__}: *args/**kwargs cannot be described to a model.")
            schema = _schema_for(hints.get(pname, str), f"{fn.__name__}({pname})")
            if arg_help.get(pname):
                schema["description"] = arg_help[pname]
            if param.default is inspect.Parameter.empty:
                required.append(pname)
            else:
                schema["default"] = param.default
            properties[pname] = schema
        parameters = {"type": "object", "properties": properties, "required": required}
        return cls(name or fn.__name__, description, parameters, fn)

    def spec(self) -> dict[str, Any]:
        """The entry of the chat completions `tools` list."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}}

    def check(self, arguments: Mapping[str, Any]) -> str | None:
        """Why these arguments cannot be used, or None. Unknown extra arguments are ignored."""
        props = self.parameters.get("properties", {})
        missing = [p for p in self.parameters.get("required", ()) if p not in arguments]
        if missing:
            return f"Missing argument(s) for {self.name}: {', '.join(missing)}."
        for pname, value in arguments.items():
            schema = props.get(pname)
            if schema and not _matches(schema, value):
                return f"Argument {pname!r} of {self.name} must be {_describe(schema)}, got {json.dumps(value)[:80]}."
        return None


class Toolbox:
    """The tools offered to the model, by name, in declaration order."""

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"Two tools are named {tool.name!r}.")
        self._tools[tool.name] = tool

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    def run(self, name: str, raw_arguments: str | Mapping[str, Any] | None) -> ToolRun:
        started = time.perf_counter()
        arguments, problem = parse_arguments(raw_arguments)
        if problem is not None:
            tool = self._tools.get(name)
            example = _example_call(tool) if tool else "{}"
            message = (f"The arguments for {name} were not valid JSON ({problem}). "
                       f"Call it again with a JSON object such as {example}.")
            output = ToolOutput.failure(message, received=str(raw_arguments)[:500])
            return ToolRun(None, output, time.perf_counter() - started, malformed=True)
        assert arguments is not None
        tool = self._tools.get(name)
        if tool is None:
            output = ToolOutput.failure(f"There is no tool named {name!r}. Available tools: {', '.join(self._tools)}.")
        elif (why := tool.check(arguments)) is not None:
            output = ToolOutput.failure(why)
        else:
            output = _invoke(tool, arguments)
        return ToolRun(arguments, output, time.perf_counter() - started)


def parse_arguments(raw: str | Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, what is wrong). Empty arguments mean {} (models send "" for tools
    without parameters)."""
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        value: Any = dict(raw)
    elif not raw.strip():
        return {}, None
    else:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, f"{exc.msg} at character {exc.pos}"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    try:  # a "\ud800" escape without its pair would fail the search, and the stream (rag_core.text)
        check_texts(value)
    except InvalidText as exc:
        return None, str(exc)
    return value, None


def _invoke(tool: Tool, arguments: Mapping[str, Any]) -> ToolOutput:
    props = tool.parameters.get("properties", {})
    try:
        result = tool.fn(**{k: v for k, v in arguments.items() if k in props})
    except RagError as exc:
        return ToolOutput.failure(str(exc))
    except Exception:  # a bug or an unexpected library failure: the model is told, the log keeps the trace
        log.exception("Tool %s failed", tool.name)
        return ToolOutput.failure(f"The tool {tool.name} failed unexpectedly. Do not retry it; tell the person "
                                  f"it is unavailable right now.")
    return result if isinstance(result, ToolOutput) else ToolOutput(result)


def _example_call(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    example = {name: "..." if s.get("type") == "string" else 1 for name, s in props.items()
               if name in tool.parameters.get("required", ())}
    return json.dumps(example, ensure_ascii=False)


# ------------------------------------------------------------------------------------- schemas
def _schema_for(hint: Any, where: str) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if origin is Literal:
        kinds = {type(a) for a in args}
        if len(kinds) != 1 or next(iter(kinds)) not in _JSON_TYPES:
            raise ValueError(f"{where}: Literal values must share one JSON type.")
        return {"type": _JSON_TYPES[next(iter(kinds))], "enum": list(args)}
    if origin in (list, tuple, Sequence, typing.Sequence) or hint in (list, tuple):
        item = args[0] if args else str
        return {"type": "array", "items": _schema_for(item, where)}
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:  # Optional[X]: the default (None) covers the absent case
            return _schema_for(rest[0], where)
    raise ValueError(f"{where}: type {hint!r} has no JSON schema mapping; use str, int, float, bool, "
                     f"Literal[...] or list[...].")


def _matches(schema: Mapping[str, Any], value: Any) -> bool:
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(_matches(schema.get("items", {}), v) for v in value)
    return True


def _describe(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return {"string": "a string", "integer": "a whole number", "number": "a number", "boolean": "true or false",
            "array": "a list"}.get(str(schema.get("type")), "valid")


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Example|Examples):\s*$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: help}) from a Google-style docstring."""
    description: list[str] = []
    arg_help: dict[str, str] = {}
    section = None
    current = None
    for line in doc.splitlines():
        stripped = line.strip()
        m = _SECTION.match(stripped)
        if m and not line.startswith((" ", "\t")):
            section = m.group(1)
            continue
        if section is None:
            description.append(line.rstrip())
        elif section in ("Args", "Arguments", "Parameters") and stripped:
            pm = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if pm and (line.startswith("    ") and not line.startswith("        ")):
                current = pm.group(1)
                arg_help[current] = pm.group(2).strip()
            elif current:
                arg_help[current] = (arg_help[current] + " " + stripped).strip()
    paragraphs = "\n".join(description).strip().split("\n\n")
    text = "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs)
    return text, arg_help
