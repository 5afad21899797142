"""Pure parsers for LLM-judge outputs (no Django).

Why strict: a judge verdict is a data point in a leaderboard.  When the output
is ambiguous we return "no verdict" (``None`` / ``'unknown'``) so the caller
can run the cheaper extraction call or record a tie, rather than guess.

Formats followed:

* Pairwise (VisIT-Bench, Appendix F, Figs. 16-17): the judge must "finish
  your response with 'Overall, Response X is better.' where X is either A or
  B".  :func:`parse_pairwise` therefore only reads the final non-empty line.
* Extraction (VisIT-Bench Fig. 18): the extractor outputs
  ``Final Answer: X`` (X = A/B) or ``Final Answer: Unknown``.
* Rubric (Prometheus): ``Feedback: ... [RESULT] n``, integer n in 1..5.
* Direct grading (ConvBench, Appendix H + prompt templates): the judge ends
  with ``Rating: X`` (templates also show ``Rating:{5}``, ``Rating:(5)``,
  ``Rating: 3.``) and the extractor outputs ``Final Rating: X``.  We accept
  those, optional ``/10`` or ``out of 10``, and MT-Bench style ``[[X]]``.
  Range is 0..10 inclusive (Appendix H: "a score of 0-10").  Decimals such as
  ``7.5`` are accepted (return type is float); ``7.`` is 7 followed by a full
  stop.  Several grades are allowed only if they are all equal.
* Combining orderings (VisIT-Bench §5): each pair is judged in both orders;
  the candidate that wins more of the two queries wins, otherwise tie.
"""

from __future__ import annotations

import re

__all__ = [
    "combine_orderings",
    "parse_direct_grade",
    "parse_extraction",
    "parse_pairwise",
    "parse_rubric_score",
]

_MARKDOWN = re.compile(r"[*_`]")
_LEADING_DECOR = re.compile(r"^(?:[#>\s]+|[-•]\s+)+")

_PAIRWISE = re.compile(r"overall\s*,?\s*response\s+([ab])\s+is\s+better[\s.!]*", re.IGNORECASE)


def _clean_line(line: str) -> str:
    """Drop markdown emphasis, heading/quote/bullet markers and wrapping quotes."""
    line = _MARKDOWN.sub("", line).strip()
    line = _LEADING_DECOR.sub("", line).strip()
    return line.strip("\"'“”‘’ \t")


def _last_nonempty_line(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if _clean_line(line):
            return line
    return None


def parse_pairwise(text: str | None) -> str | None:
    """'A' or 'B' if the final non-empty line is exactly the verdict sentence.

    Tolerates case, a missing comma, ``**bold**``/``_italics_``, heading or
    bullet markers, wrapping quotes and trailing ``.``/``!``/whitespace.
    Anything else on that line (a second response, "than Response B",
    "Step 5: ...") is rejected -> ``None``; send it to extraction instead.
    """
    if not text:
        return None
    last = _last_nonempty_line(text)
    if last is None:
        return None
    match = _PAIRWISE.fullmatch(_clean_line(last))
    return match.group(1).upper() if match else None


_FINAL_ANSWER = re.compile(r"final\s+answer\s*:\s*(.*)", re.IGNORECASE)
_RESPONSE_LETTER = re.compile(r"\bresponse\s+\(?([ab])\b", re.IGNORECASE)
_BARE_LETTER = re.compile(r"(?<![A-Za-z0-9])\(?([AB])\)?(?![A-Za-z0-9])")


def _letters(fragment: str) -> set[str]:
    fragment = _MARKDOWN.sub("", fragment)
    found = {m.upper() for m in _RESPONSE_LETTER.findall(fragment)}
    found |= set(_BARE_LETTER.findall(_RESPONSE_LETTER.sub(" ", fragment)))
    return found


def parse_extraction(text: str | None) -> str:
    """'A', 'B' or 'unknown' from an extraction call's output.

    Reads every ``Final Answer: ...`` line; it counts only if it names exactly
    one letter (``A``, ``Response B``, ``(A)``; a lowercase bare ``a`` is an
    article, not a verdict).  Conflicting lines, ``Unknown``, ``tie`` or no
    marker -> 'unknown'.  Without a marker, a bare ``A``/``B``/``Response A``
    or a well-formed pairwise verdict is also accepted.
    """
    if not text or not text.strip():
        return "unknown"
    verdicts: set[str] = set()
    markers = _FINAL_ANSWER.findall(_MARKDOWN.sub("", text))
    for rest in markers:
        letters = _letters(rest)
        if len(letters) != 1 or re.match(r"\s*(unknown|tie|none|neither)\b", rest, re.I):
            return "unknown"
        verdicts |= letters
    if markers:
        return verdicts.pop() if len(verdicts) == 1 else "unknown"
    bare = _clean_line(text.strip()).rstrip(".!").strip()
    m = re.fullmatch(r"(?:response\s+)?([ab])", bare, re.IGNORECASE)
    if m and (bare[-1] in "AB" or bare.lower().startswith("response")):
        return m.group(1).upper()
    return parse_pairwise(text) or "unknown"


_RESULT_MARKER = re.compile(r"\[RESULT\]", re.IGNORECASE)
_RESULT_VALUE = re.compile(
    r"\s*:?\s*[(\[]?\s*(?P<num>[-+]?\d+(?:[.,]\d+)?)(?![\d.,]\d)\s*[)\]]?"
    r"(?P<range>\s*(?:-|–|to|or)\s*\d)?"
)
_FEEDBACK_PREFIX = re.compile(r"^\s*[*_#\s]*feedback[*_\s]*:[*_\s]*", re.IGNORECASE)


def parse_rubric_score(text: str | None) -> tuple[str, int] | None:
    """``(feedback, score)`` from Prometheus ``Feedback: ... [RESULT] n``.

    Every ``[RESULT]`` marker must be followed by an integer in 1..5 (``4``,
    ``(4)``, ``: 4``, ``4/5``, ``**4**``); repeated markers must agree.
    Non-integers (``4.5``, ``four``), ranges (``3-4``), out-of-range values,
    no marker or conflicting scores -> ``None``.  Feedback is the text before
    the first marker with the ``Feedback:`` label removed (may be empty).
    """
    if not text:
        return None
    cleaned = _MARKDOWN.sub("", text)
    markers = list(_RESULT_MARKER.finditer(cleaned))
    if not markers:
        return None
    scores = set()
    for marker in markers:
        m = _RESULT_VALUE.match(cleaned, marker.end())
        if not m or m.group("range"):
            return None
        num = m.group("num")
        if not re.fullmatch(r"[-+]?\d+", num):
            return None
        score = int(num)
        if not 1 <= score <= 5:
            return None
        scores.add(score)
    if len(scores) != 1:
        return None
    first = _RESULT_MARKER.search(text)
    feedback = text[: first.start()] if first else ""
    feedback = _FEEDBACK_PREFIX.sub("", feedback).rstrip(" \t\n*_#").strip()
    return feedback, scores.pop()


_NUMBER = r"(?P<num>[-+]?\d+(?:\.\d+)?)(?![\d.,]\d)"
_AMBIGUOUS_TAIL = r"(?P<range>\s*(?:-|–|to|or)\s*[-+]?\d)?"
_RATING = re.compile(
    r"(?<![A-Za-z])(?:final\s+)?rating\s*:\s*(?:\[\[|[\[{(])?\s*"
    + _NUMBER
    + r"\s*(?:\]\]|[\]})])?"
    + _AMBIGUOUS_TAIL,
    re.IGNORECASE,
)
_DOUBLE_BRACKET = re.compile(r"\[\[\s*" + _NUMBER + r"\s*\]\]" + _AMBIGUOUS_TAIL)


def parse_direct_grade(text: str | None) -> float | None:
    """0..10 grade from ConvBench-style ``Rating: X`` (see module docstring).

    Only ``Rating:``-labelled values (and ``[[X]]``) count, so prose like
    "earning a rating of 9" is ignored.  No grade, an out-of-range grade
    (-1, 11), a range (``7-8``) or two different grades -> ``None``.
    """
    if not text:
        return None
    cleaned = _MARKDOWN.sub("", text)
    values = set()
    for pattern in (_RATING, _DOUBLE_BRACKET):
        for m in pattern.finditer(cleaned):
            if m.group("range"):
                return None
            value = float(m.group("num"))
            if not 0.0 <= value <= 10.0:
                return None
            values.add(value)
    if len(values) != 1:
        return None
    return values.pop()


def _norm_verdict(verdict: str | None) -> str | None:
    v = (verdict or "").strip().upper()
    return v if v in ("A", "B") else None


def combine_orderings(verdict_ab: str | None, verdict_ba: str | None) -> str:
    """Combine the two position-swapped judgements of one pair.

    ``verdict_ab`` was produced with the original order (A first);
    ``verdict_ba`` with the responses swapped, so its 'A' means the original
    B.  'tie'/'unknown'/None are abstentions.  The original response winning
    more of the two queries wins; otherwise 'tie' (so A/A from a
    position-biased judge is a tie, and A + abstain is A).
    """
    ab, ba = _norm_verdict(verdict_ab), _norm_verdict(verdict_ba)
    wins_a = (ab == "A") + (ba == "B")
    wins_b = (ab == "B") + (ba == "A")
    if wins_a > wins_b:
        return "A"
    if wins_b > wins_a:
        return "B"
    return "tie"
