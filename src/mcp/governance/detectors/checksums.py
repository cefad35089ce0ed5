"""Check digits and number rules that tell a real identifier from a look-alike."""

from __future__ import annotations

import datetime

_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check of payment card numbers."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def card_ok(digits: str) -> bool:
    """13-19 digits, a known issuer prefix (Visa, Mastercard, Amex, Discover, UnionPay, JCB), Luhn."""
    if not 13 <= len(digits) <= 19:
        return False
    if not (digits[0] == "4" or digits[:2] in ("34", "37", "62", "35", "65")
            or 51 <= int(digits[:2]) <= 55 or 2221 <= int(digits[:4]) <= 2720 or digits[:4] == "6011"):
        return False
    return luhn_ok(digits)


def iban_ok(compact: str) -> bool:
    """ISO 13616: 15-34 characters, country letters, and the mod-97 remainder 1."""
    if not 15 <= len(compact) <= 34 or not compact[:2].isalpha() or not compact[2:4].isdigit():
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return int(number) % 97 == 1


def us_ssn_ok(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000, 666 or 900-999; group not 00; serial not 0000."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def cn_resident_id_ok(value: str) -> bool:
    """GB 11643: 17 digits (region, birth date, sequence) and an ISO 7064 MOD 11-2 check character."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    if value[0] == "0" or not _valid_date(value[6:14]):
        return False
    check = _CN_CHECK[sum(int(d) * w for d, w in zip(value[:17], _CN_WEIGHTS)) % 11]
    return value[17].upper() == check


def _valid_date(yyyymmdd: str) -> bool:
    try:
        born = datetime.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:]))
    except ValueError:
        return False
    return 1900 <= born.year and born <= datetime.date.today()
