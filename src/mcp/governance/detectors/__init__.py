"""Detectors: what a text carries (PII, secrets, prompt-injection markers, listed terms).

``Scanner(terms).scan(text)`` -> ``Finding``s, in one pass of one compiled regular
expression; candidates with a checksum (cards, IBANs, ID numbers) are kept only when it holds.
A finding carries its kind, its span and a keyed digest or masked form, never the value.
"""
