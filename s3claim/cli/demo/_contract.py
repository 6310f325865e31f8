"""A realistic long contract, generated deterministically, for the demo and the tests.

The counsel scenario needs a document long enough that re-sending it every turn is the
problem (about 92,000 characters), with the structure real contracts have: a title, parties
with non-ASCII names, recitals, numbered articles and sections, lettered sub-clauses and a
signature block. The same seed always yields the same text, so sizes and ratios measured on
it are reproducible.
"""

from __future__ import annotations

import random

__all__ = ["ARTICLES", "PARTIES", "contract"]

PARTIES = ("Zoë Müller GmbH", "Łukasz Nowak S.A.")
"""Supplier and customer; both names carry characters outside ASCII on purpose."""

_OTHERS = ("Søren Ærø ApS", "José Núñez y Cía.", "株式会社東京", "Ōsaka Logistics K.K.")

ARTICLES = (
    "DEFINITIONS AND INTERPRETATION",
    "SCOPE OF SERVICES",
    "SERVICE LEVELS",
    "FEES, INVOICING AND PAYMENT",
    "PERSONNEL AND SUBCONTRACTING",
    "INTELLECTUAL PROPERTY",
    "CONFIDENTIALITY",
    "DATA PROTECTION",
    "WARRANTIES",
    "INDEMNITIES",
    "LIMITATION OF LIABILITY",
    "INSURANCE",
    "TERM AND TERMINATION",
    "CONSEQUENCES OF TERMINATION",
    "FORCE MAJEURE",
    "DISPUTE RESOLUTION",
    "GOVERNING LAW AND JURISDICTION",
    "ASSIGNMENT AND CHANGE OF CONTROL",
    "NOTICES",
    "GENERAL PROVISIONS",
)

_SUBJECTS = (
    "The Supplier",
    "The Customer",
    "Each Party",
    "Neither Party",
    "The receiving Party",
    "The Supplier's project manager",
)
_VERBS = (
    "shall deliver",
    "may suspend",
    "shall indemnify the other Party against",
    "shall promptly notify the other Party of",
    "shall maintain",
    "may terminate",
    "shall not disclose",
    "shall use reasonable endeavours to preserve",
)
_OBJECTS = (
    "the Services",
    "all Deliverables",
    "any Confidential Information",
    "the Fees set out in Schedule 2",
    "the Customer Data",
    "the Service Credits",
    "any Third-Party Materials",
    "the Premises",
)
_CONDITIONS = (
    "within {n} Business Days of the Effective Date",
    "no later than {n} days after receipt of a valid invoice",
    "for so long as this Agreement remains in force and for {n} months thereafter",
    "on not less than {n} days' written notice",
    "save as expressly permitted under Section {ref}",
    "subject always to the limits in Section {ref}",
    "in accordance with Good Industry Practice and Section {ref}",
)
_SUBCLAUSES = (
    "any act or omission of {party} or its subcontractors",
    "a breach of Article {art} by the receiving Party",
    "the insolvency, administration or winding-up of {party}",
    "a change in Applicable Law affecting the Services",
    "any failure of the Customer to provide access to the Premises",
    "the expiry of a cure period of {n} days without remedy",
)


def _sentence(rng: random.Random, n_articles: int) -> str:
    condition = rng.choice(_CONDITIONS).format(
        n=rng.randint(5, 90),
        ref=f"{rng.randint(1, n_articles)}.{rng.randint(1, 9)}",
    )
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {condition}."


def _subclauses(rng: random.Random, n_articles: int) -> str:
    items = []
    count = rng.randint(2, 4)
    for index in range(count):
        text = rng.choice(_SUBCLAUSES).format(
            party=rng.choice(PARTIES + _OTHERS),
            art=rng.randint(1, n_articles),
            n=rng.randint(10, 60),
        )
        end = "; or" if index == count - 2 else (";" if index < count - 1 else ".")
        items.append(f"    ({'abcd'[index]}) {text}{end}")
    return "\n".join(items)


def _preamble() -> str:
    supplier, customer = PARTIES
    return (
        "MASTER SERVICES AGREEMENT\n\n"
        'This Master Services Agreement (the "Agreement") is made on 1 March 2024 between '
        f"{supplier}, a company incorporated in Germany whose registered office is at "
        f'Königstraße 12, 70173 Stuttgart (the "Supplier"), and {customer}, a company '
        "incorporated in Poland whose registered office is at ul. Żurawia 6/12, 00-503 "
        'Warszawa (the "Customer").\n\n'
        "RECITALS\n\n"
        "(A) The Supplier provides managed logistics and software services.\n"
        "(B) The Customer wishes to procure those services on the terms of this Agreement.\n\n"
        "IT IS AGREED as follows.\n"
    )


def _signatures() -> str:
    supplier, customer = PARTIES
    return (
        "\nSIGNED by the Parties on the date first written above.\n\n"
        f"For and on behalf of {supplier}: Zoë Müller, Geschäftsführerin\n"
        f"For and on behalf of {customer}: Łukasz Nowak, Prezes Zarządu\n"
    )


def contract(*, target_chars: int = 91_800, seed: int = 7) -> str:
    """A master services agreement of at least `target_chars` characters.

    The articles run in order; each gets numbered sections until it holds its share of
    the target, so a longer target makes longer articles rather than more of them.
    """
    rng = random.Random(seed)  # noqa: S311 - reproducible text, not secrets
    n_articles = len(ARTICLES)
    preamble, signatures = _preamble(), _signatures()
    parts = [preamble]
    size = len(preamble) + len(signatures)
    for index, title in enumerate(ARTICLES, start=1):
        share = (target_chars - size) // (n_articles - index + 1)
        article = [f"\nARTICLE {index}. {title}\n"]
        written = len(article[0])
        number = 0
        while written < share or number == 0:
            number += 1
            body = " ".join(_sentence(rng, n_articles) for _ in range(rng.randint(2, 4)))
            if rng.random() < 0.3:
                body += " This applies in each of the following cases:\n" + _subclauses(
                    rng, n_articles
                )
            section = f"\n{index}.{number} {body}\n"
            article.append(section)
            written += len(section)
        parts.extend(article)
        size += written
    parts.append(signatures)
    return "".join(parts)
