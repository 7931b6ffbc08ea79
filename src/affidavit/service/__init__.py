"""The HTTP service: an authenticated, thin shell around :class:`affidavit.engine.query.Engine`.

Names load on first use, so that the CLI (``affidavit keys``) can use the key functions
without importing the web framework.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "PERMISSIONS",
    "ROLES",
    "ROUTERS",
    "Credential",
    "ServiceState",
    "caller_for",
    "create_app",
    "issue_key",
    "service_state",
    "store_opener_for",
]

_WHERE = {
    "PERMISSIONS": "affidavit.service.api.auth", "Credential": "affidavit.service.api.auth",
    "ROLES": "affidavit.authz.keys", "issue_key": "affidavit.authz.keys",
    "ROUTERS": "affidavit.service.app", "create_app": "affidavit.service.app",
    "store_opener_for": "affidavit.service.app", "ServiceState": "affidavit.service.api.state",
    "caller_for": "affidavit.service.api.state", "service_state": "affidavit.service.api.state",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'affidavit.service' has no attribute {name!r}")
