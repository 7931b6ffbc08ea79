"""The roles an API key may carry (:mod:`affidavit.service.keys` decides what each may do).

Kept apart from the keys so that the command line can offer them as the choices of
``affidavit keys create --role`` without importing the key store and the authorizer.
"""

from __future__ import annotations

ROLES = ("reader", "ingester", "reviewer", "admin")
