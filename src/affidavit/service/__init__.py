"""The HTTP service: an authenticated, thin shell around :class:`affidavit.query.Engine`."""

from affidavit.service.app import ROUTERS, create_app, store_opener_for
from affidavit.service.auth import PERMISSIONS, Credential
from affidavit.service.keys import ROLES, issue_key
from affidavit.service.state import ServiceState, caller_for, service_state

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
