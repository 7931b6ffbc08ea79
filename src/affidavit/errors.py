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
    │       └── LedgerWriteError  the ledger could not be written (exit 8 on the CLI)
    ├── RunInProgress             another ingestion run of the tenant holds its lock;
    │                             this one did not start
    └── NotFound                  nothing the caller may see has that id

Callers catch the root to turn any of them into an exit code or a problem document.

Each class has a ``reason_code``: a short stable identifier fixed by the code that raises,
never built from input. It is all that telemetry and logs say about an error besides the
class name (:func:`reason_code_of`): a message can quote a document, a query or a path.
"""

from __future__ import annotations

UNEXPECTED = "UNEXPECTED"
"""The reason code of an exception outside this tree (a bug, a library's own error)."""


class AffidavitError(Exception):
    """Root of every deliberate Affidavit error."""

    reason_code: str = "AFFIDAVIT_ERROR"


def reason_code_of(error: BaseException) -> str:
    """``error``'s reason code: its own for an Affidavit error, else :data:`UNEXPECTED`."""
    code = getattr(error, "reason_code", None) if isinstance(error, AffidavitError) else None
    return code if isinstance(code, str) and code else UNEXPECTED


class ConfigurationError(AffidavitError):
    """Settings are missing, malformed or contradictory."""

    reason_code = "CONFIGURATION_ERROR"

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

    reason_code = "AUTHORIZATION_FAILED"


class AuthenticationError(AffidavitError):
    """A service request carried no credential, or one that does not verify."""

    reason_code = "AUTHENTICATION_FAILED"


class RoleRefused(AuthorizationError):
    """The caller is known, but its role does not cover the endpoint."""

    reason_code = "ROLE_REFUSED"


class LimitExceeded(AffidavitError):
    """A request went over one of the service's limits.

    ``limit`` is a stable name (``body_size``, ``query_length``, ``rate``, ``deadline``);
    ``retry_after`` says, for the rate limit, how many seconds to wait.
    """

    reason_code = "LIMIT_EXCEEDED"

    def __init__(self, limit: str, message: str, *, retry_after: int | None = None):
        super().__init__(message)
        self.limit = limit
        self.retry_after = retry_after


class GovernanceError(AffidavitError):
    """A governance component refused the operation or failed; the request fails closed."""

    reason_code = "GOVERNANCE_REFUSED"


class RestrictedContentError(GovernanceError):
    """RESTRICTED text was found in something bound for a language model."""

    reason_code = "RESTRICTED_CONTENT"


class ProviderError(AffidavitError):
    """A language-model provider could not produce a response."""

    reason_code = "PROVIDER_FAILED"


class StoreError(AffidavitError):
    """The store could not complete an operation."""

    reason_code = "STORE_FAILED"


class LedgerError(StoreError):
    """The ledger could not be appended to, or its chain does not verify."""

    reason_code = "LEDGER_FAILED"


class LedgerWriteError(LedgerError):
    """The ledger could not be written (a store failure: no answer may leave), as opposed
    to a chain that does not verify (the command's own verdict)."""

    reason_code = "LEDGER_UNWRITABLE"


class RunInProgress(AffidavitError):
    """Another ingestion run of the same tenant is under way, so this one did not start."""

    reason_code = "RUN_IN_PROGRESS"


class NotFound(AffidavitError):
    """No object the caller may see has this identifier (also said when it exists but is
    hidden, so that the two cannot be told apart)."""

    reason_code = "NOT_FOUND"
