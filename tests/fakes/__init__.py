"""In-memory fakes of the ports in `rag_core/ports.py`, for tests that need a port but not its service.
Each passes its port's contract mixin (tests/contracts/), like every real adapter."""
