"""A metrics client without a server: the alerts it was given."""

from __future__ import annotations

from rag_core.records import Alert


class FakeMetricsClient:
    where = "fake://metrics"

    def __init__(self, alerts: list[Alert] | None = None) -> None:
        self._alerts = list(alerts or [])

    def alerts(self) -> list[Alert]:
        return list(self._alerts)
