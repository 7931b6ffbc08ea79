"""Structured logs: one JSON object per line, with ids, route, status and timings; never
content.

Loggers under ``affidavit`` emit records whose ``extra`` fields are listed in
:data:`LOGGED_FIELDS`; :class:`JsonLineFormatter` writes those and drops anything else, so a
field that could carry a query, a title or a document's text cannot reach a log by accident
(the message itself is a fixed event name, never formatted with data).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

LOGGED_FIELDS = ("request_id", "trace_id", "span_id", "principal_hash", "tenant_hash", "route",
                 "method", "status", "duration_ms", "output_state", "stage", "count")
"""The only fields a log line may carry besides its time, level, logger and event."""

_HANDLER_NAME = "affidavit-json-lines"


class JsonLineFormatter(logging.Formatter):
    """A record as one JSON line of :data:`LOGGED_FIELDS`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "event": record.msg}
        for name in LOGGED_FIELDS:
            value = record.__dict__.get(name)
            if isinstance(value, str | int | float | bool):
                line[name] = value
        return json.dumps(line, sort_keys=True, ensure_ascii=True)


def configure_json_logs(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Send the ``affidavit`` loggers' records to ``stream`` (stderr) as JSON lines, once."""
    logger = logging.getLogger("affidavit")
    if any(h.get_name() == _HANDLER_NAME for h in logger.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
