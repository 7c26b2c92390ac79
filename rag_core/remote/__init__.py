"""What every remote client shares (embedders, chat model, rerankers, Prometheus, Loki), written once:

- `deadline`: each attempt has a total deadline (not per socket read) held in the caller's thread;
- `rag_core.retry`: backoff, `Retry-After`, an overall deadline across retries;
- `failures`: any SDK's or HTTP library's exception -> one `Failure`;
- `messages`: one message per kind of failure, naming the endpoint and what to check;
- `adapter.RemoteAdapter`: the base class that puts these together;
- `http.request_json`: JSON over HTTP for the APIs without an SDK.
"""

from .adapter import RemoteAdapter, Retrying
from .deadline import DeadlineExceeded, run_within, stop_requested, stream_within
from .failures import Failure, HTTPFailure, MalformedReply, classify, clip, not_json
from .messages import Endpoint, explain

__all__ = ["DeadlineExceeded", "Endpoint", "Failure", "HTTPFailure", "MalformedReply", "RemoteAdapter", "Retrying",
           "classify", "clip", "explain", "not_json", "run_within", "stop_requested", "stream_within"]
