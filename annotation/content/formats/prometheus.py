"""Prometheus-Vision rubric prompts: building, splitting, and the jsonl parser and writer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from annotation.content.formats.common import FormatError, Source, _read_text

PROMETHEUS_TASK_DESCRIPTION = (
    "An instruction (might include an Input inside it), a response to evaluate, a reference answer "
    "that gets a score of 5, and a score rubric representing an evaluation criterion is given.\n"
    "1. Write a detailed feedback that assesses the quality of the response strictly based on the "
    "given score rubric, not evaluating in general.\n"
    "2. After writing a feedback, write a score that is an integer between 1 and 5. You should "
    "refer to the score rubric.\n"
    "3. The output format should look as follows: Feedback: (write a feedback for criteria) "
    "[RESULT] (an integer number between 1 and 5)\n"
    "4. Please do not generate any other opening, closing, and explanations."
)


# Exact section markers of the prompt (verified against all sample rows).
_TASK = "###Task Description:\n"


_INSTRUCTION = "\n\n###The instruction to evaluate:\n"
_RESPONSE = "\n\n###Response to evaluate:\n"
_REFERENCE = "\n\n###Reference Answer (Score 5):\n"
_RUBRIC = "\n\n###Score Rubrics:\n"
_FEEDBACK = "\n\n###Feedback:"


_ORIG_FIELDS = (
    "orig_instruction",
    "original_response",
    "orig_reference_answer",
    "orig_criteria",
    *(f"orig_score{i}_description" for i in range(1, 6)),
)


@dataclass
class Rubric:
    criteria: str
    score_descriptions: list[str]  # index 0 is "Score 1", index 4 is "Score 5"


@dataclass
class PrometheusRecord:
    image: str
    instruction: str
    response: str
    reference_answer: str
    rubric: Rubric
    task_description: str = PROMETHEUS_TASK_DESCRIPTION
    extra: dict = field(default_factory=dict)  # unknown keys, kept for export


def build_prometheus_prompt(record: PrometheusRecord) -> str:
    """The exact rubric prompt Prometheus-Vision feeds its judge."""
    scores = "".join(f"\nScore {i}: {d}" for i, d in enumerate(record.rubric.score_descriptions, start=1))
    return (
        f"{_TASK}{record.task_description}{_INSTRUCTION}{record.instruction}"
        f"{_RESPONSE}{record.response}{_REFERENCE}{record.reference_answer}"
        f"{_RUBRIC}{record.rubric.criteria}{scores}{_FEEDBACK}"
    )


def _parse_rubric(text: str, row: int) -> Rubric:
    """``criteria\\nScore 1: ...\\nScore 2: ...`` through ``Score 5``."""
    positions = []
    start = 0
    for score in range(1, 6):
        marker = f"\nScore {score}: "
        pos = text.find(marker, start)
        if pos < 0:
            raise FormatError(row, "instruction", f"score rubric lacks 'Score {score}:'")
        positions.append((pos, pos + len(marker)))
        start = pos + len(marker)
    criteria = text[: positions[0][0]]
    ends = [p for p, _ in positions[1:]] + [len(text)]
    descriptions = [text[body:end] for (_, body), end in zip(positions, ends, strict=True)]
    if "\nScore " in descriptions[-1]:
        raise FormatError(row, "instruction", "score rubric has scores beyond 5")
    if not criteria.strip():
        raise FormatError(row, "instruction", "score rubric has no criteria")
    for score, description in enumerate(descriptions, start=1):
        if not description.strip():
            raise FormatError(row, "instruction", f"'Score {score}' has no description")
    return Rubric(criteria, descriptions)


def split_prometheus_prompt(prompt: str, row: int = 1) -> tuple[str, str, str, str, Rubric]:
    """Split a rubric prompt into (task description, instruction, response, reference, rubric).

    Sections are cut at the first instruction/response markers and at the
    last reference/rubric markers, so a model response that happens to
    contain marker text still ends up in ``response``.
    """
    if not prompt.startswith(_TASK) or not prompt.endswith(_FEEDBACK):
        raise FormatError(row, "instruction", "not a Prometheus rubric prompt (missing '###Task Description:' or '###Feedback:')")
    body = prompt[len(_TASK) : -len(_FEEDBACK)]
    i_ins = body.find(_INSTRUCTION)
    i_resp = body.find(_RESPONSE, i_ins + 1) if i_ins >= 0 else -1
    i_rub = body.rfind(_RUBRIC)
    i_ref = body.rfind(_REFERENCE, 0, i_rub) if i_rub >= 0 else -1
    for index, name in ((i_ins, "instruction to evaluate"), (i_resp, "Response to evaluate"),
                        (i_ref, "Reference Answer (Score 5)"), (i_rub, "Score Rubrics")):
        if index < 0:
            raise FormatError(row, "instruction", f"missing section '###{name}:'")
    if not i_ins < i_resp < i_ref < i_rub:
        raise FormatError(row, "instruction", "sections are out of order")
    task = body[:i_ins]
    instruction = body[i_ins + len(_INSTRUCTION) : i_resp]
    response = body[i_resp + len(_RESPONSE) : i_ref]
    reference = body[i_ref + len(_REFERENCE) : i_rub]
    rubric = _parse_rubric(body[i_rub + len(_RUBRIC) :], row)
    if not instruction.strip():
        raise FormatError(row, "instruction", "the instruction to evaluate is empty")
    if not reference.strip():
        raise FormatError(row, "instruction", "the reference answer is empty")
    return task, instruction, response, reference, rubric


def parse_prometheus_jsonl(source: Source) -> list[PrometheusRecord]:
    """Parse Prometheus-Vision eval rows, splitting the ``instruction`` prompt.

    When the ``orig_*`` copies of the parts are present they must equal what
    was split out of the prompt (a cheap integrity check).  Row numbers are
    line numbers; blank lines are skipped.
    """
    records = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and friends.
    for row, line in enumerate(_read_text(source).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise FormatError(row, None, f"invalid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise FormatError(row, None, "expected a JSON object")
        for key in ("image", "instruction"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise FormatError(row, key, "missing or not a non-empty string")
        task, instruction, response, reference, rubric = split_prometheus_prompt(obj["instruction"], row)
        record = PrometheusRecord(
            image=obj["image"],
            instruction=instruction,
            response=response,
            reference_answer=reference,
            rubric=rubric,
            task_description=task,
            extra={k: v for k, v in obj.items() if k not in ("image", "instruction", *_ORIG_FIELDS)},
        )
        for key, value in _orig_fields(record).items():
            if key in obj and obj[key] != value:
                raise FormatError(row, key, "disagrees with the section in 'instruction'")
        records.append(record)
    return records


def _orig_fields(record: PrometheusRecord) -> dict[str, str]:
    values = [record.instruction, record.response, record.reference_answer, record.rubric.criteria,
              *record.rubric.score_descriptions]
    return dict(zip(_ORIG_FIELDS, values, strict=True))


def write_prometheus_jsonl(records: list[PrometheusRecord]) -> str:
    """JSONL in upstream's key order, with the prompt reassembled."""
    lines = []
    for r in records:
        if len(r.rubric.score_descriptions) != 5:
            raise ValueError("a rubric needs exactly 5 score descriptions")
        obj = {"image": r.image, "instruction": build_prometheus_prompt(r), **_orig_fields(r), **r.extra}
        lines.append(json.dumps(obj))
    return "\n".join(lines) + ("\n" if lines else "")
