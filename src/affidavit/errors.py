"""The one exception tree of Affidavit.

Every error the package raises on purpose derives from :class:`AffidavitError`::

    AffidavitError
    ├── ConfigurationError        bad settings: names the key and the file
    ├── InputRejected             a document (or request) that must not be processed;
    │                             carries a reason code; ingestion quarantines on it
    ├── AuthenticationError       the service got no valid credential (HTTP 401)
    ├── AuthorizationError        no principal, unknown tenant, failing authorizer:
    │   │                         the request fails closed
    │   └── RoleRefused           the credential's role may not call this endpoint
    ├── LimitExceeded             a request over a service limit (body, query, rate,
    │                             deadline); names the limit
    ├── GovernanceError           a governance component refused or failed
    │   └── RestrictedContentError   RESTRICTED text was about to reach a model
    ├── ProviderError             a language-model provider failed
    ├── StoreError                the store could not do what was asked
    │   └── LedgerError           the ledger could not be written or does not verify
    ├── RunInProgress             another ingestion run of the tenant holds its lock;
    │                             this one did not start
    └── NotFound                  nothing the caller may see has that id

Callers catch the root to turn any of them into an exit code or a problem document.
"""

from __future__ import annotations


class AffidavitError(Exception):
    """Root of every deliberate Affidavit error."""


class ConfigurationError(AffidavitError):
    """Settings are missing, malformed or contradictory."""

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None):
        where = ""
        if key and source:
            where = f" ({key} in {source})"
        elif key:
            where = f" ({key})"
        elif source:
            where = f" ({source})"
        super().__init__(f"{message}{where}")
        self.key = key
        self.source = source


class InputRejected(AffidavitError):
    """Untrusted input that must not be processed further.

    ``reason_code`` is a short stable identifier (``EMPTY_DOCUMENT``, ``UNDECODABLE_TEXT``,
    ``TOO_LARGE`` ...) that ends up in quarantine records and run summaries.
    """

    def __init__(self, reason_code: str, message: str):
        super().__init__(f"{reason_code}: {message}")
        self.reason_code = reason_code
        self.detail = message


class AuthorizationError(AffidavitError):
    """The request has no valid authorization context; nothing is retrieved."""


class AuthenticationError(AffidavitError):
    """A service request carried no credential, or one that does not verify."""


class RoleRefused(AuthorizationError):
    """The caller is known, but its role does not cover the endpoint."""


class LimitExceeded(AffidavitError):
    """A request went over one of the service's limits.

    ``limit`` is a stable name (``body_size``, ``query_length``, ``rate``, ``deadline``);
    ``retry_after`` says, for the rate limit, how many seconds to wait.
    """

    def __init__(self, limit: str, message: str, *, retry_after: int | None = None):
        super().__init__(message)
        self.limit = limit
        self.retry_after = retry_after


class GovernanceError(AffidavitError):
    """A governance component refused the operation or failed; the request fails closed."""


class RestrictedContentError(GovernanceError):
    """RESTRICTED text was found in something bound for a language model."""


class ProviderError(AffidavitError):
    """A language-model provider could not produce a response."""


class StoreError(AffidavitError):
    """The store could not complete an operation."""


class LedgerError(StoreError):
    """The ledger could not be appended to, or its chain does not verify."""


class RunInProgress(AffidavitError):
    """Another ingestion run of the same tenant is under way, so this one did not start."""


class NotFound(AffidavitError):
    """No object the caller may see has this identifier (also said when it exists but is
    hidden, so that the two cannot be told apart)."""
