"""Adapters of the services the agent and alert triage call, one per module; only `rag_core.bootstrap` builds
them (build_chat_model, build_metrics_client, build_logs_client). Their ports are in `rag_core.ports`
(ChatModel, MetricsClient, LogsClient), the records they exchange in `rag_core.records`:

- `openai_chat.OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint (DashScope's compatible
  mode by default, OpenAI, vLLM, Ollama, llama.cpp), streamed, with tool calling;
- `prometheus.PrometheusClient`: Prometheus's alerts API;
- `loki.LokiClient`: Grafana Loki's query_range API.
"""
