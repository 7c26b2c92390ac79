"""The chat models `chat.provider` chooses from, and their factories (`rag_core.registry`). `auto` picks one by the
keys that are set, `offline` is none (bootstrap.resolve_chat_provider). A new one: its factory, and one line here."""

from __future__ import annotations

from ..registry import Provider, Registry

AUTO = "auto"
OFFLINE = "offline"

CHAT_MODELS = Registry("chat.provider", "rag_core.clients", (
    Provider("dashscope", "openai_chat:build_dashscope"),   # DashScope's OpenAI-compatible mode, qwen-plus
    Provider("openai", "openai_chat:build_openai"),         # any OpenAI-compatible chat endpoint
), first=(AUTO,), last=(OFFLINE,))
