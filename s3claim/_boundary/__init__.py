"""The result boundary: what a tool returned becomes safe text before anything else sees it.

Validated against the tool's declared type, serialised (structured values as JSON, one
record to a line: `_layout`), refused when it is not valid Unicode or nests too deep, and
rewritten where it imitates s3claim's structure or a chat template's tokens (`_forgery`).
Only the top-level modules of s3claim import this package: `s3claim.hosting` offers it to
hosts.
"""

from ._forgery import RULES, Rule, fold, folded_view, neutralise
from ._result import refusal_text, result_text, text_of

__all__ = [
    "RULES",
    "Rule",
    "fold",
    "folded_view",
    "neutralise",
    "refusal_text",
    "result_text",
    "text_of",
]
