"""Every person of the study under one keyed pseudonym, in every file of the published dataset.

People reach the data in three ways: as a judgment's ``annotator`` (a crowd worker's
marketplace id, an imported annotator string, an adjudicating analyst's username), through the
accounts behind them (usernames, e-mails, names), and in free text someone typed (a model's
notes, an analyst's ruling note, a worker's feedback, an import's file name). ``Identities``
gathers every such string from the database once per export and maps it to the pseudonym of the
person it names, so the same person carries the same ``anon-…`` everywhere in the dataset:
an account that works as a crowd worker is that worker; an imported string that is a known
marketplace id or username is that person.

``pseudonym`` is the one keyed function: an HMAC of the identity under ``SECRET_KEY``, so it
cannot be reversed by hashing candidate ids, and a person keeps it across exports of the same
deployment. A worker's pseudonym is the one earlier exports published (``worker:<pk>``).

Free text is scrubbed by whole word: an identity found with no letter or digit on either side
is replaced by its pseudonym ("Submitted by anon-3f…"); "sam" inside "sample" is left alone.
Identities shorter than ``SCRUBBED_MIN`` characters or made of digits only (an import's
annotator "3") are too common to find in text; they are still pseudonymised as annotators.
The search is one Aho–Corasick pass per string (``ahocorasick_rs``), so the cost does not grow
with the number of people.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

import ahocorasick_rs
from django.conf import settings
from django.contrib.auth import get_user_model

from annotation.models import Worker
from judging.models import Judgment

PSEUDONYM = re.compile(r"anon-[0-9a-f]{12}")
SCRUBBED_MIN = 3
JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')  # what json.dumps(ensure_ascii=False) escapes
# Sources whose ``annotator`` is a person: crowd votes (live or imported) and analysts' rulings.
# Any other source is an automatic judge, named on purpose.
PEOPLE_SOURCES = (Judgment.HUMAN, Judgment.ADJUDICATION)


def pseudonym(kind: str, value: Any) -> str:
    """A person's public name in the dataset (``kind`` is worker, user or annotator)."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{kind}:{value}".encode(),
                      hashlib.sha256).hexdigest()
    return f"anon-{digest[:12]}"


def _findable(text: str) -> bool:
    return len(text) >= SCRUBBED_MIN and not text.isdigit() and not PSEUDONYM.fullmatch(text)


class Identities:
    """Every string in the database that names a person, each mapped to that person's
    pseudonym; built from the database when created."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # exact strings (a judgment's annotator) → pseudonym
        self._in_text: dict[str, str] = {}  # lower-cased forms searched for in free text
        workers = Worker.objects.order_by("pk").values_list("pk", "provider", "external_id", "uuid")
        for pk, provider, external_id, uuid in workers.iterator():  # rows: 20,000 objects cost 1 s
            name = pseudonym("worker", pk)
            self._add(name, external_id, str(uuid))
            # str(worker), the annotator of its live votes; in text its id is found alone
            self.names.setdefault(f"{provider}:{external_id}", name)
        worker_of = dict(Worker.objects.exclude(user=None).values_list("user_id", "pk"))
        for user in get_user_model().objects.order_by("pk"):
            name = (pseudonym("worker", worker_of[user.pk]) if user.pk in worker_of
                    else pseudonym("user", user.pk))
            self._add(name, user.get_username(), user.email, user.get_full_name())
        strings = (Judgment.objects.filter(source__in=PEOPLE_SOURCES)
                   .values_list("annotator", flat=True).distinct())
        for text in strings.iterator():
            if not PSEUDONYM.fullmatch(text):
                self._add(pseudonym("annotator", text), text)
        self._patterns = list(self._in_text)
        # The contiguous NFA builds fastest and searches fastest here (bench/dataset_export.py).
        self._matcher = ahocorasick_rs.AhoCorasick(
            self._patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest,
            implementation=ahocorasick_rs.Implementation.ContiguousNFA
        ) if self._patterns else None

    def _add(self, name: str, *strings: str) -> None:
        """``strings`` name the person ``name``; the first claim on a string wins (a worker's
        before an account's, both before an imported string's)."""
        for text in strings:
            text = (text or "").strip()
            if not text or text in self.names:
                continue
            self.names[text] = name
            if _findable(text):  # in any letter case, and as JSON escapes it (one pass on JSON)
                self._in_text.setdefault(text.lower(), name)
                if JSON_ESCAPED.search(text):
                    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
                    self._in_text.setdefault(escaped.lower(), name)

    def annotator(self, source: str, annotator: str, worker_id: int | None) -> str:
        """A judgment's ``annotator`` as published: a person's pseudonym, a judge's own id."""
        if source not in PEOPLE_SOURCES:
            return self.scrub(annotator)
        if worker_id is not None:
            return pseudonym("worker", worker_id)
        if PSEUDONYM.fullmatch(annotator):  # published before and imported back
            return annotator
        return self.names.get(annotator.strip()) or pseudonym("annotator", annotator)

    def scrub(self, text: str | None) -> str | None:
        """``text`` with every identity in it, as a whole word, replaced by its pseudonym."""
        if not text or self._matcher is None:
            return text
        folded = text.lower()
        if len(folded) != len(text):  # a letter whose lower case is longer: match as written
            folded = text
        out, end = [], 0
        for index, start, stop in self._matcher.find_matches_as_indexes(folded):
            if (start and text[start - 1].isalnum()) or (stop < len(text) and text[stop].isalnum()):
                continue
            out += [text[end:start], self._in_text[self._patterns[index]]]
            end = stop
        return "".join(out) + text[end:] if out else text

    def scrub_json(self, value: Any, keep: frozenset[str] = frozenset()) -> Any:
        """Every string in a JSON-like value scrubbed, except under the keys in ``keep``."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_json(v, keep) for v in value]
        if isinstance(value, dict):
            return {k: v if k in keep else self.scrub_json(v, keep) for k, v in value.items()}
        return value
