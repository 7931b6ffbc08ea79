"""Exit codes of the ``affidavit`` command, and how an error becomes one.

=====  ===============  ==============================================================
code   kind             when
=====  ===============  ==============================================================
0      (ok)             the command did what was asked
1      failed           the operation failed (nothing with that id, a chain that does
                        not verify, a record that does not reproduce)
2      usage            wrong arguments, a missing or malformed ``--as`` principal,
                        an unknown tenant
3      quarantined      ingestion finished but some documents were quarantined
4      busy             another ingestion run holds the tenant; nothing was done
5      configuration    the settings file, environment or flags are wrong
6      governance       the answer was refused: BLOCKED, REQUIRES_SPEC, a guard
7      provider         the language-model or embedding server failed (its URL, the
                        HTTP status and the server's own message are printed)
8      store            the database could not do what was asked
141    (pipe)           the reader of the output went away (128 + SIGPIPE)
=====  ===============  ==============================================================

Errors go to stderr; with ``--json`` as one line of JSON,
``{"error": {"exit_code": ..., "kind": ..., "message": ...}}``, with the same code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from affidavit.errors import (
    AffidavitError,
    AuthenticationError,
    AuthorizationError,
    ConfigurationError,
    GovernanceError,
    InputRejected,
    LedgerError,
    LedgerWriteError,
    LimitExceeded,
    ProviderError,
    RunInProgress,
    StoreError,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_QUARANTINED = 3
EXIT_BUSY = 4
EXIT_CONFIGURATION = 5
EXIT_GOVERNANCE = 6
EXIT_PROVIDER = 7
EXIT_STORE = 8
EXIT_INTERRUPTED = 130  # as a shell reports a process ended by SIGINT
EXIT_BROKEN_PIPE = 141


class UsageError(AffidavitError):
    """A command was called the wrong way."""


# Most specific first: the first class an error is an instance of decides.
_KINDS: tuple[tuple[type[AffidavitError], str, int], ...] = (
    (UsageError, "usage", EXIT_USAGE),
    (AuthenticationError, "usage", EXIT_USAGE),
    (AuthorizationError, "usage", EXIT_USAGE),
    (InputRejected, "usage", EXIT_USAGE),
    (LimitExceeded, "usage", EXIT_USAGE),
    (ConfigurationError, "configuration", EXIT_CONFIGURATION),
    (GovernanceError, "governance", EXIT_GOVERNANCE),
    (ProviderError, "provider", EXIT_PROVIDER),
    # A ledger that cannot be written is the store failing (exit 8); one that does not
    # verify (or a checkpoint key refused) is the command's own verdict, exit 1 as the
    # README promises, not a database that cannot be reached.
    (LedgerWriteError, "store", EXIT_STORE),
    (LedgerError, "failed", EXIT_FAILED),
    (StoreError, "store", EXIT_STORE),
    (RunInProgress, "busy", EXIT_BUSY),
)


def classify(error: AffidavitError) -> tuple[str, int]:
    """The kind of an error and the exit code it ends the command with."""
    for cls, kind, code in _KINDS:
        if isinstance(error, cls):
            return kind, code
    return "failed", EXIT_FAILED


def report(kind: str, code: int, message: str, *, as_json: bool) -> int:
    """Print one error on stderr (as JSON with ``as_json``); return its exit code.

    Never on stdout: there a failed command prints nothing, so a pipe reading results
    cannot take an error for one.
    """
    if as_json:
        print(json.dumps({"error": {"kind": kind, "exit_code": code, "message": message}},
                         ensure_ascii=False, sort_keys=True), file=sys.stderr)
    elif kind == "failed":
        print(f"affidavit: {message}", file=sys.stderr)
    else:
        print(f"affidavit: {kind} error: {message}", file=sys.stderr)
    return code


def report_error(error: AffidavitError, *, as_json: bool) -> int:
    kind, code = classify(error)
    return report(kind, code, str(error), as_json=as_json)


GOVERNANCE_REFUSALS = ("BLOCKED", "REQUIRES_SPEC")


def answer_exit(output_state: str, reasons: Sequence[str]) -> tuple[str, int] | None:
    """How an answer that was refused ends the command: (kind, code), or None when served.

    A provider failure is reported as such, not as a governance refusal, although the
    answer it leaves behind is BLOCKED (and recorded in the ledger like every refusal).
    """
    if any(r.startswith("PROVIDER_FAILED") for r in reasons):
        return "provider", EXIT_PROVIDER
    if any(r.startswith("AUTHORIZATION_FAILED") for r in reasons):
        return "usage", EXIT_USAGE
    if output_state in GOVERNANCE_REFUSALS:
        return "governance", EXIT_GOVERNANCE
    return None
