"""The patterns of every detector, as named alternatives of one regular expression.

Each alternative is a group ``(?P<kind>...)``; the scanner finds which one matched with
``match.lastgroup``. Numbers of any shape (cards, phones, SSNs, ID numbers) share one
alternative, ``number``, and are classified afterwards by their digits and checksums, so a
16-digit run is one candidate tried as a card, not four phone numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    category: str  # pii | secret | injection | term


KINDS = {k.name: k for k in (
    Kind("email", "pii"), Kind("phone", "pii"), Kind("payment_card", "pii"), Kind("iban", "pii"),
    Kind("us_ssn", "pii"), Kind("cn_resident_id", "pii"),
    Kind("aws_access_key", "secret"), Kind("gcp_api_key", "secret"), Kind("azure_key", "secret"),
    Kind("private_key", "secret"), Kind("jwt", "secret"), Kind("github_token", "secret"),
    Kind("slack_token", "secret"), Kind("api_key_assignment", "secret"),
    Kind("prompt_injection", "injection"), Kind("term", "term"),
)}

# Alternatives that begin a word: tried only where a word begins (one ``\b`` for all of them,
# which is what keeps a 4 KB prompt under a millisecond). Order matters where two could match
# at the same place.
AT_WORD_START: dict[str, str] = {
    "jwt": r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
    "aws_access_key": r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "gcp_api_key": r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
    "azure_key": r"(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,88}={0,2}",
    "github_token": r"gh[pousr]_[A-Za-z0-9]{36,255}\b",
    "slack_token": r"xox[abposr]-[A-Za-z0-9-]{10,72}\b",
    "api_key_assignment": (r"(?i:(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token"
                           r"|client[_-]?secret|password|passwd)\b)[\"']?\s*[:=]\s*[\"']?"
                           r"[A-Za-z0-9_\-./+=]{12,}"),
    "email": r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}\b",
    "iban": r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b",
    "prompt_injection": (
        r"(?i:(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding)\s+(?:instructions|prompts?|rules|directions)"
        r"|you\s+are\s+now\s+(?:DAN|in\s+developer\s+mode)\b"
        r"|(?:reveal|print|show|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:system|hidden)\s+prompt"
        r"|do\s+anything\s+now\b)"),
}
# Alternatives that may begin anywhere.
ANYWHERE: dict[str, str] = {
    "private_key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    # chat-template tokens, and Chinese markers (no word boundary between CJK characters)
    "prompt_injection_token": r"<\|im_start\|>|\[/?INST\]|忽略(?:之前|以上|上面|前面)(?:的)?(?:所有)?(?:指令|指示|规则)",
    # a run of digits with single separators (space, dash, dot, parentheses), maybe a leading +
    # and a trailing X (China resident IDs); classified by scanner.classify_number
    "number": r"(?<![\w.+-])\+?\(?\d(?:[ .\-()]{0,2}\d){5,22}[Xx]?(?![\w-])",
}


def compile_scanner_pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    """All alternatives, plus the configured terms (case-insensitive, whole words; each must
    begin with a letter or digit, which ``check_terms`` makes sure of)."""
    alternatives = dict(AT_WORD_START)
    if terms:
        listed = "|".join(re.escape(term) for term in sorted(terms, key=len, reverse=True))
        alternatives = {"term": rf"(?i:(?:{listed})(?!\w))", **alternatives}
    at_word_start = "|".join(f"(?P<{name}>{pattern})" for name, pattern in alternatives.items())
    anywhere = (f"(?P<{name}>{pattern})" for name, pattern in ANYWHERE.items())
    return re.compile("|".join((rf"\b(?:{at_word_start})", *anywhere)))


def check_terms(terms: tuple[str, ...]) -> list[str]:
    """What is wrong with a term list: each term must begin with a letter or digit."""
    return [f"term {term!r} must begin with a letter or a digit" for term in terms
            if not term[:1].isalnum()]
