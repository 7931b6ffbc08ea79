"""Structured logs: one JSON object per line, with ids, route, status and timings; never
content.

Loggers under ``affidavit`` emit records whose ``extra`` fields are listed in
:data:`LOGGED_FIELDS`; :class:`JsonLineFormatter` writes those and drops anything else, so a
field that could carry a query, a title or a document's text cannot reach a log by accident
(the message itself is a fixed event name, never formatted with data).

Errors too: a record with an exception says its type and reason code (``error_type``,
``reason_code``), never its message or traceback, which can quote the document or query
that caused it. :func:`service_log_config` puts every logger of the service process,
uvicorn's and the root logger included, on the same formatter, so an unhandled exception's
traceback is never printed.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from affidavit.errors import reason_code_of

LOGGED_FIELDS = ("request_id", "trace_id", "span_id", "principal_hash", "tenant_hash", "route",
                 "method", "status", "duration_ms", "output_state", "stage", "count",
                 "error_type", "reason_code")
"""The only fields a log line may carry besides its time, level, logger and event."""

_HANDLER_NAME = "affidavit-json-lines"
_UNNAMED_EVENT = "unnamed"


class JsonLineFormatter(logging.Formatter):
    """A record as one JSON line of :data:`LOGGED_FIELDS`."""

    def format(self, record: logging.LogRecord) -> str:
        # The unformatted message: a format string's arguments are data, and a message that
        # is not a string (an exception, an object) is data too.
        event = record.msg if isinstance(record.msg, str) else _UNNAMED_EVENT
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "event": event.strip()}
        for name in LOGGED_FIELDS:
            value = record.__dict__.get(name)
            if isinstance(value, str | int | float | bool):
                line[name] = value
        line.update(_error_fields(record))
        return json.dumps(line, sort_keys=True, ensure_ascii=True)


def _error_fields(record: logging.LogRecord) -> dict[str, str]:
    error = record.exc_info[1] if record.exc_info else None
    if error is None:
        return {}
    return {"error_type": type(error).__name__, "reason_code": reason_code_of(error)}


def configure_json_logs(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Send the ``affidavit`` loggers' records to ``stream`` (stderr) as JSON lines, once
    (not again when :func:`service_log_config` already put the root logger on them)."""
    logger = logging.getLogger("affidavit")
    logger.setLevel(level)
    handlers = (*logger.handlers, *logging.getLogger().handlers)
    if any(h.get_name() == _HANDLER_NAME for h in handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)


def service_log_config(level: str = "WARNING") -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` for the service process (uvicorn's
    ``log_config``): every logger, uvicorn's and the root, writes JSON lines to stderr."""
    to_json = {"handlers": [_HANDLER_NAME], "level": level.upper(), "propagate": False}
    # The package's own records reach the root's handler, once: one that
    # configure_json_logs added before is removed here.
    own = {"handlers": [], "level": "INFO", "propagate": True}
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonLineFormatter"}},
        "handlers": {_HANDLER_NAME: {"class": "logging.StreamHandler", "formatter": "json",
                                     "stream": "ext://sys.stderr"}},
        "loggers": {"uvicorn": to_json, "uvicorn.error": to_json, "uvicorn.access": to_json,
                    "affidavit": own},
        "root": {"handlers": [_HANDLER_NAME], "level": level.upper()},
    }
