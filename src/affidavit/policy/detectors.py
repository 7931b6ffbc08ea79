"""Deterministic detectors of personal and financial identifiers in a paragraph's text.

Each detector takes text and returns the spans it recognises, in text order. They favour
precision: every candidate is checked structurally (check digits, number plans, date
shapes), so that years, dates, amounts and clause ids such as ``CC6.1`` do not fire.
Every pattern is bounded so that hostile input cannot make matching explode.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Detection:
    """One identifier found in a text: ``text[start:end]`` is what the detector saw."""

    name: str
    start: int
    end: int


# Every pattern below but the e-mail one needs an ASCII digit (``\d`` under ``re.ASCII``), and
# the e-mail one an ``@``: a text without one is answered at once, not scanned by each pattern
# (most paragraphs of prose hold no digit).
_has_ascii_digit = re.compile(r"[0-9]").search

# --------------------------------------------------------------------------- email

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])"
    r"[A-Za-z0-9_%+-][A-Za-z0-9._%+-]{0,63}"
    r"@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}"
    r"(?![A-Za-z0-9-])"
)


def find_emails(text: str) -> list[Detection]:
    """E-mail addresses (local part, ``@``, a dotted domain with an alphabetic TLD)."""
    if "@" not in text:
        return []
    return [Detection("email", m.start(), m.end()) for m in _EMAIL.finditer(text)]


# --------------------------------------------------------------------------- phone

# A run of digits and the separators phone numbers use; validated group by group below.
_PHONE_RUN = re.compile(r"(?<![A-Za-z0-9_+$€£¥/.,\-])\+?\(?\d[\d() .\-]*", re.ASCII)
_DIGITS = re.compile(r"\d+", re.ASCII)
# Between two digit groups: an optional ")" then at most one of space, dot or dash, then an
# optional "(" — so "(555) 123-4567" and "+44 (0)20" pass and ". " or " - " do not.
_PHONE_SEPARATOR = re.compile(r"\)?[ .\-]?\(?")
_MAX_PHONE_GROUPS = 8


@dataclass(frozen=True)
class _Group:
    start: int
    end: int
    digits: str
    parenthesised: bool


def find_phones(text: str) -> list[Detection]:
    """Telephone numbers: ``+CC`` international, or common national plans with 9+ digits."""
    found: list[Detection] = []
    if not _has_ascii_digit(text):
        return found
    for run in _PHONE_RUN.finditer(text):
        for chain in _phone_chains(text, run.start(), run.end()):
            found.extend(_phones_in_chain(text, chain))
    return found


def _phone_chains(text: str, start: int, end: int) -> list[list[_Group]]:
    """Split a run into chains of digit groups joined by valid separators."""
    chains: list[list[_Group]] = []
    current: list[_Group] = []
    for match in _DIGITS.finditer(text, start, end):
        opened = match.start() > start and text[match.start() - 1] == "("
        closed = match.end() < end and text[match.end()] == ")"
        if len(match.group()) > 15:
            current = _close_chain(chains, current)
            continue
        group = _Group(match.start(), match.end(), match.group(), opened and closed)
        separated = current and _PHONE_SEPARATOR.fullmatch(text, current[-1].end, group.start)
        if not separated or (opened and not closed):
            # A lone "(" before the group belongs to the surrounding text: a new number.
            current = _close_chain(chains, current)
        current.append(group)
        if closed and not opened:
            # A lone ")" after the group closes the surrounding text: the number ends here.
            current = _close_chain(chains, current)
    _close_chain(chains, current)
    return chains


def _close_chain(chains: list[list[_Group]], current: list[_Group]) -> list[_Group]:
    if current:
        chains.append(current)
    return []


def _phones_in_chain(text: str, chain: list[_Group]) -> list[Detection]:
    """Longest valid phone prefixes of the chain, one after another."""
    found: list[Detection] = []
    i = 0
    while i < len(chain):
        for j in range(min(len(chain), i + _MAX_PHONE_GROUPS) - 1, i - 1, -1):
            following = chain[j + 1].start if j + 1 < len(chain) else None
            detection = _phone_window(text, chain[i : j + 1], following)
            if detection is not None:
                found.append(detection)
                i = j + 1
                break
        else:
            # Nothing starts here; a number never starts in the middle of another one.
            break
    return found


def _phone_window(text: str, window: list[_Group], following: int | None) -> Detection | None:
    first, final = window[0], window[-1]
    start = first.start - 1 if first.parenthesised else first.start
    plus = start > 0 and text[start - 1] == "+"
    if plus:
        start -= 1
    end = final.end + 1 if final.parenthesised else final.end
    if following is not None and " " not in text[end:following]:
        return None  # more digits of the same number follow
    if following is None and not _phone_right_edge(text, end):
        return None
    if not _is_phone_number([g.digits for g in window], plus=plus):
        return None
    return Detection("phone", start, end)


def _phone_right_edge(text: str, end: int) -> bool:
    if end >= len(text):
        return True
    nxt = text[end]
    if (nxt.isascii() and nxt.isalnum()) or nxt in "%_":
        return False
    return not (nxt in ".,:-" and end + 1 < len(text) and text[end + 1].isdigit())


def _is_phone_number(groups: list[str], *, plus: bool) -> bool:
    digits = "".join(groups)
    if not 9 <= len(digits) <= 15 or _looks_like_date(groups):
        return False
    if plus:
        return len(groups) == 1 or len(groups[0]) <= 4
    return _is_mobile_cn(groups, digits) or _is_nanp(groups) or _is_trunk_dialled(groups, digits)


def _is_mobile_cn(groups: list[str], digits: str) -> bool:
    shape = [len(g) for g in groups]
    return bool(re.fullmatch(r"1[3-9]\d{9}", digits)) and shape in ([11], [3, 4, 4])


def _is_nanp(groups: list[str]) -> bool:
    """North American plan: (NXX) XXX-XXXX, optionally after a leading 1."""
    if len(groups) == 4 and groups[0] == "1":
        groups = groups[1:]
    return [len(g) for g in groups] == [3, 3, 4] and groups[0][0] in "23456789"


def _is_trunk_dialled(groups: list[str], digits: str) -> bool:
    """National numbers dialled with a leading 0 trunk prefix (UK, EU, CN, JP ...)."""
    if not groups[0].startswith("0") or len(groups[0]) < 2 or len(digits) > 12:
        return False
    if len(groups) == 1:
        return 10 <= len(digits) <= 11
    return all(len(g) >= 2 for g in groups)


def _looks_like_date(groups: list[str]) -> bool:
    """Any three consecutive groups that read as a calendar date (2024-01-15, 15.01.2024)."""
    for a, b, c in zip(groups, groups[1:], groups[2:], strict=False):
        if len(a) == 4 and _is_year(a) and _is_month_day(b, c):
            return True
        if len(c) == 4 and _is_year(c) and (_is_month_day(b, a) or _is_month_day(a, b)):
            return True
    return False


def _is_year(value: str) -> bool:
    return 1900 <= int(value) <= 2099


def _is_month_day(month: str, day: str) -> bool:
    return len(month) <= 2 and len(day) <= 2 and 1 <= int(month) <= 12 and 1 <= int(day) <= 31


# --------------------------------------------------------------------------- national ids

_SSN = re.compile(
    r"(?<![A-Za-z0-9_\-.])(\d{3})([- ])(\d{2})\2(\d{4})(?![A-Za-z0-9_\-]|[.,]\d)",
    re.ASCII,
)
_NINO = re.compile(
    r"(?<![A-Za-z0-9])"
    r"(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r"( ?)\d{2}\1\d{2}\1\d{2}\1[A-D]"
    r"(?![A-Za-z0-9])",
    re.ASCII,
)
_CN_RESIDENT_ID = re.compile(r"(?<![A-Za-z0-9_])\d{17}[\dXx](?![A-Za-z0-9_])", re.ASCII)
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK_CODES = "10X98765432"


def find_national_ids(text: str) -> list[Detection]:
    """US SSNs, UK National Insurance numbers and Chinese resident identity numbers."""
    if not _has_ascii_digit(text):
        return []
    found = [
        Detection("national_id", m.start(), m.end())
        for m in _SSN.finditer(text)
        if is_valid_ssn(m.group(1), m.group(3), m.group(4))
    ]
    found.extend(Detection("national_id", m.start(), m.end()) for m in _NINO.finditer(text))
    found.extend(
        Detection("national_id", m.start(), m.end())
        for m in _CN_RESIDENT_ID.finditer(text)
        if is_valid_cn_resident_id(m.group())
    )
    return sorted(found, key=lambda d: (d.start, d.end))


def is_valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def is_valid_cn_resident_id(value: str) -> bool:
    """18-character resident id: a real birth date and an ISO 7064 MOD 11-2 check code."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    year, month, day = int(value[6:10]), int(value[10:12]), int(value[12:14])
    if not (1900 <= year <= 2099 and 1 <= month <= 12):
        return False
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return False
    total = sum(int(ch) * w for ch, w in zip(value[:17], _CN_WEIGHTS, strict=True))
    return _CN_CHECK_CODES[total % 11] == value[17].upper()


# --------------------------------------------------------------------------- IBAN

_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])", re.ASCII)
# ISO 13616 registry lengths; countries not listed are accepted at 15-34 characters.
_IBAN_LENGTHS: Mapping[str, int] = MappingProxyType({
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27,
    "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
})  # fmt: skip


def find_ibans(text: str) -> list[Detection]:
    """IBANs, compact or in groups of four, with valid length and mod-97 check digits."""
    found: list[Detection] = []
    if not _has_ascii_digit(text):
        return found
    for match in _IBAN.finditer(text):
        end = _longest_valid_iban_end(match.group())
        if end is not None:
            found.append(Detection("iban", match.start(), match.start() + end))
    return found


def _longest_valid_iban_end(candidate: str) -> int | None:
    """The candidate may run into following capitals; retry it cut at each space."""
    ends = [len(candidate)] + [i for i in range(len(candidate) - 1, 0, -1) if candidate[i] == " "]
    for end in ends:
        if is_valid_iban(candidate[:end]):
            return end
    return None


def is_valid_iban(value: str) -> bool:
    """Country length (where known) and ISO 7064 mod-97 check digits."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34 or not compact.isascii() or not compact.isalnum():
        return False
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is not None and len(compact) != expected:
        return False
    if not compact[2:4].isdigit() or compact[2:4] in ("00", "01", "99"):
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged.upper())
    return int(number) % 97 == 1


# --------------------------------------------------------------------------- payment card

_CARD = re.compile(
    r"(?<![A-Za-z0-9_+\-.,])\d(?:[ \-]?\d){12,18}(?![A-Za-z0-9_\-]|[.,]\d)",
    re.ASCII,
)


def find_payment_cards(text: str) -> list[Detection]:
    """Card numbers: 13-19 digits, one kind of separator, a known IIN range, valid Luhn."""
    found: list[Detection] = []
    if not _has_ascii_digit(text):
        return found
    for match in _CARD.finditer(text):
        end = _longest_valid_card_end(match.group())
        if end is not None:
            found.append(Detection("payment_card", match.start(), match.start() + end))
    return found


def _longest_valid_card_end(candidate: str) -> int | None:
    ends = [len(candidate)] + [i for i in range(len(candidate) - 1, 0, -1) if candidate[i] in " -"]
    for end in ends:
        if _is_card_number(candidate[:end]):
            return end
    return None


def _is_card_number(value: str) -> bool:
    separators = {ch for ch in value if not ch.isdigit()}
    if len(separators) > 1:
        return False
    digits = "".join(ch for ch in value if ch.isdigit())
    return 13 <= len(digits) <= 19 and _plausible_iin(digits) and luhn_valid(digits)


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check used by payment card numbers."""
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _plausible_iin(digits: str) -> bool:
    """Issuer prefix of a major scheme, with a length that scheme issues."""
    n = len(digits)
    p2, p3, p4 = int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720 or 2200 <= p4 <= 2204:
        return n == 16  # Mastercard, Mir
    if p2 in (34, 37):
        return n == 15  # American Express
    if p4 == 6011 or 644 <= p3 <= 649 or p2 in (62, 65) or 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # Discover, UnionPay, JCB
    if 300 <= p3 <= 305 or p2 in (36, 38, 39) or p4 == 3095:
        return 14 <= n <= 19  # Diners Club
    if p2 in (50, 56, 57, 58, 63, 67):
        return 13 <= n <= 19  # Maestro
    return False


# --------------------------------------------------------------------------- registry

DETECTORS: Mapping[str, Callable[[str], list[Detection]]] = MappingProxyType({
    "email": find_emails,
    "phone": find_phones,
    "national_id": find_national_ids,
    "iban": find_ibans,
    "payment_card": find_payment_cards,
})  # fmt: skip
"""Built-in detectors by the name settings use to enable them."""


def run_detectors(text: str, names: Sequence[str]) -> list[Detection]:
    """Every detection of the named detectors, ordered by position then name."""
    found: list[Detection] = []
    for name in names:
        found.extend(DETECTORS[name](text))
    return sorted(found, key=lambda d: (d.start, d.end, d.name))
