"""The `MetricsClient` contract (rag_core/ports.py): what the alerts tool and alert triage rely on.

Subclass `MetricsClientContract` with fixtures `metrics` (a client whose server holds `ALERTS`: a loopback
Prometheus serves them as `SERVER_ALERTS`) and `no_alerts` (one whose server holds none).
"""

from __future__ import annotations

import pytest

from rag_core.ports import MetricsClient
from tests.servers.prometheus import alert

ALERTS = [  # (alertname, description, state, activeAt)
    ("HighCPUUsage", "CPU above 85% on node-3", "firing", "2026-05-10T08:12:31.123456789Z"),
    ("HighCPUUsage", "CPU above 85% on node-7", "firing", "2026-05-10T09:00:00Z"),
    ("DiskSpaceLow", "Disk below 15% on /var", "pending", "2026-05-10T10:29:15Z"),
]
SERVER_ALERTS = [alert(name, description, state=state, active_at=at, labels={"instance": f"node-{i}"})
                 for i, (name, description, state, at) in enumerate(ALERTS)]


class MetricsClientContract:
    @pytest.fixture
    def metrics(self) -> MetricsClient:
        raise NotImplementedError

    @pytest.fixture
    def no_alerts(self) -> MetricsClient:
        raise NotImplementedError

    def test_is_a_metrics_client_that_names_its_server(self, metrics) -> None:
        assert isinstance(metrics, MetricsClient)
        assert metrics.where and "@" not in metrics.where

    def test_every_alert_in_the_servers_order(self, metrics) -> None:
        alerts = metrics.alerts()
        assert [(a.name, a.description, a.state, a.active_at) for a in alerts] == ALERTS
        assert alerts[0].started is not None and alerts[0].started.tzinfo is not None
        assert alerts[0].labels["alertname"] == "HighCPUUsage"

    def test_no_alerts(self, no_alerts) -> None:
        assert no_alerts.alerts() == []
