"""Document identity: node and version identifiers, witnesses, and SIRE (spec 003 Algorithm 1)."""

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
