"""`get_current_datetime`: the seed's DateTimeTools, in a configurable time zone (chat.timezone)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import ConfigError
from .tools import Tool


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"chat.timezone = {name!r} is not a known time zone; use an IANA name such as "
                          "Asia/Shanghai, Europe/Berlin or UTC.") from None


def clock_tool(tz_name: str = "Asia/Shanghai", now: Callable[[], datetime] | None = None) -> Tool:
    tz = zone(tz_name)
    clock = now or (lambda: datetime.now(UTC))

    def get_current_datetime() -> dict[str, str]:
        """The current date and time (ISO 8601, with the UTC offset) and weekday. Use it whenever the answer
        depends on today's date or the time: "today", "yesterday", how long ago something started, deadlines.
        获取当前日期和时间。"""
        current = clock().astimezone(tz).replace(microsecond=0)
        return {"datetime": current.isoformat(), "timezone": tz_name, "weekday": current.strftime("%A")}

    return Tool.from_function(get_current_datetime)
