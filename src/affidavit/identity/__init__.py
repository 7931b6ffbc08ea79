"""Document identity: node and version identifiers, witnesses, and SIRE (spec 003 Algorithm 1).

The names below are imported on first use (PEP 562): the search path needs only
``exclusion_hits``, and proposing SIRE compiles patterns that a search never uses.
"""

from typing import TYPE_CHECKING

from affidavit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.identity.nodes import node_id_for, version_id_for, witness_for
    from affidavit.identity.sire import (
        SireInputs,
        excluded_conflicts,
        normalize_subject,
        propose_sire,
        self_identity_tokens,
    )
    from affidavit.identity.sire_labels import (
        propose_labelled_sire,
        sire_dict_shown_to,
        sire_shown_to,
    )
    from affidavit.identity.terms import exclusion_hits, term_tokens

_EXPORTS = {
    "node_id_for": "nodes",
    "version_id_for": "nodes",
    "witness_for": "nodes",
    "SireInputs": "sire",
    "excluded_conflicts": "sire",
    "normalize_subject": "sire",
    "propose_sire": "sire",
    "self_identity_tokens": "sire",
    "propose_labelled_sire": "sire_labels",
    "sire_dict_shown_to": "sire_labels",
    "sire_shown_to": "sire_labels",
    "exclusion_hits": "terms",
    "term_tokens": "terms",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "SireInputs",
    "excluded_conflicts",
    "exclusion_hits",
    "node_id_for",
    "normalize_subject",
    "propose_labelled_sire",
    "propose_sire",
    "self_identity_tokens",
    "sire_dict_shown_to",
    "sire_shown_to",
    "term_tokens",
    "version_id_for",
    "witness_for",
]
