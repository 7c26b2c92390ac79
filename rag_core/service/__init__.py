"""The HTTP service: SuperBizAgent's `/api` routes and the workbench's `/v1` routes (FastAPI + uvicorn),
thin over the same bootstrap, ingest, lookup and agent as the app and the CLI.

    python -m rag_core serve [--host 127.0.0.1] [--port 8000]      # or `make serve`

Nothing here is imported by the rest of rag_core; FastAPI is loaded only when the service is used.
"""
