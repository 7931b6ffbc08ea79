"""Spec 003 Algorithm 1 on more hand-worked examples: the spec's own SOC 2 vendor contract,
frameworks in R, two self-excluded defaults, and the Excluded cap in configuration order."""

from __future__ import annotations

from affidavit.config.settings import SireSettings
from affidavit.identity import SireInputs, excluded_conflicts, propose_sire
from affidavit.records import SireTuple

CONTRACT = (
    "Northgate Hosting Agreement\n"
    "\n"
    "Northgate Hosting provides availability monitoring for Harbour Bank.\n"
    "Access control at Northgate Hosting follows SOC 2 and ISO 27001.\n"
    "Change management requests reach the Service Desk within a day.\n"
    "The Service Desk records every change management request for Harbour Bank.\n"
    "TLS protects every request; TLS keys rotate yearly.\n"
    "Hosting staff review hosting logs, hosting alerts and hosting reports.\n"
)
CONTRACT_INPUTS = SireInputs(
    oracle_id="SOC 2 Trust Services Criteria",
    title="Northgate Hosting Agreement",
    frameworks=("SOC 2", "ISO 27001"),
    source_id="vendors/northgate.md",
)
SETTINGS = SireSettings(
    domain_phrases=("access control", "change management", "availability", "incident response"),
    default_excludes=("hipaa", "gdpr", "pci dss", "soc 2", "iso 27001"),
)


def test_the_spec_vendor_contract_worked_by_hand() -> None:
    # 1. S: the oracle id, casefolded, non-alphanumerics as underscores.
    # 2-3. Phrases by first appearance: availability (line 3), access control (line 4),
    #      change management (line 5); incident response is absent. Acronyms seen twice:
    #      TLS (line 7, twice); SOC and ISO once each. Words of 4+ letters seen 4+ times:
    #      hosting x7 (title line, lines 3 and 4, four times on line 8); northgate x3,
    #      harbour/bank/service/desk/change/management x2 stay below.
    # 4. Capitalized runs not opening a sentence, seen twice: "Northgate Hosting" (line 3
    #    opener of two words, line 4 mid-sentence), "Harbour Bank" (lines 3, 6), "Service
    #    Desk" (line 5, and line 6 where "The" is dropped). The title line is a run of three
    #    words seen once; one-word openers (Access, Change, Hosting) are dropped; TLS, SOC
    #    and ISO are not capitalized words. R = frameworks first, then these, minus I.
    # 5. Identity: soc 2 trust services criteria + northgate hosting agreement + iso 27001.
    # 6. E: hipaa, gdpr, pci dss; "soc 2" and "iso 27001" lie inside the identity.
    assert propose_sire(CONTRACT_INPUTS, CONTRACT, SETTINGS) == SireTuple(
        subject="soc_2_trust_services_criteria",
        included=("availability", "access control", "change management", "tls", "hosting"),
        relevant=("soc 2", "iso 27001", "northgate hosting", "harbour bank", "service desk"),
        excluded=("hipaa", "gdpr", "pci dss"),
    )


def test_self_exclusion_is_by_identity_not_by_text() -> None:
    # A GDPR addendum never excludes "gdpr", but a longer term that merely contains an
    # identity word is not its identity and stays: excluding it gates only chunks that
    # name it.
    inputs = SireInputs(None, "GDPR Data Processing Addendum", (), "legal/dpa.md")
    settings = SireSettings(default_excludes=("gdpr", "gdpr fines", "data", "hipaa"))
    sire = propose_sire(inputs, "The addendum covers personal data.", settings)
    assert sire.subject == "gdpr_data_processing_addendum"
    assert sire.excluded == ("gdpr fines", "hipaa")
    assert excluded_conflicts(sire, inputs) == ()


def test_excluded_cap_keeps_configuration_order_after_self_exclusion() -> None:
    excludes = ("a1", "soc 2", "a2", "a3", "a4", "trust", "a5", "a6", "a7", "a8", "a9")
    settings = SireSettings(default_excludes=excludes)
    sire = propose_sire(CONTRACT_INPUTS, "", settings)
    assert sire.excluded == ("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8")


def test_relevant_cap_of_twelve_keeps_frameworks_first() -> None:
    names = [f"Alpha{chr(97 + i)} Beta" for i in range(14)]
    text = " ".join(f"we met {name} and {name} again." for name in names)
    inputs = SireInputs("x", "x", ("SOC 2", "GDPR"), "x.md")
    sire = propose_sire(inputs, text, SireSettings())
    assert len(sire.relevant) == 12
    assert sire.relevant[:2] == ("soc 2", "gdpr")
    assert sire.relevant[2:] == tuple(n.casefold() for n in names[:10])
