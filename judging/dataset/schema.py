"""The study-as-a-dataset tables: one Arrow schema per Parquet file, each column documented.

One source for the writer, the reader's checks and the dataset card, so the documentation
cannot drift from the files. JSON-valued fields whose shape varies by source (``extra``,
``reference_meta``, a judgment's ``meta``) travel as JSON text; the rest are typed columns.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = "2"  # 2: judgments.rejected


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    nullable: bool = False
    since: str = "1"  # the schema version that added it: an older file may lack it


def _s(name, doc, nullable=False):
    return Column(name, pa.string(), doc, nullable)


IMAGE_STRUCT = pa.struct([
    ("uuid", pa.string()), ("url", pa.string()), ("sha256", pa.string()),
    ("external_id", pa.string()), ("license", pa.string()), ("attribution", pa.string()),
    ("width", pa.int32()), ("height", pa.int32()), ("format", pa.string()),
    ("file", pa.string()), ("thumbnail", pa.string()), ("fetch_status", pa.string()),
    ("fetch_error", pa.string()), ("caption", pa.string()), ("blip2_caption", pa.string()),
])
TURN_STRUCT = pa.struct([
    ("turn", pa.int8()), ("capability", pa.string()), ("category", pa.string()),
    ("instruction", pa.string()), ("reference_answer", pa.string()),
    ("focus_points", pa.string()),  # JSON text: a list, as the source gave it
])
RUBRIC_STRUCT = pa.struct([
    ("uuid", pa.string()), ("criteria", pa.string()), ("scores", pa.list_(pa.string())),
    ("reference_answer", pa.string()),
])

TABLES: dict[str, list[Column]] = {
    "instances": [
        _s("uuid", "Instance id (stable across exports)"),
        _s("kind", "single (one image), multi (several images) or conversation (up to 3 turns)"),
        _s("source", "Where the instance came from (visitbench, convbench, crowd, …)"),
        _s("external_id", "The source's own id, when it has one"),
        _s("family", "Instruction family with its seed example, JSON text", nullable=True),
        _s("instruction", "The instruction shown to models and raters"),
        _s("stage", "Construction stage reached (pipeline)"),
        _s("candidate_reference", "The LLM's candidate reference before verification"),
        _s("reference_output", "The benchmark's reference answer (verified)"),
        _s("source_label", "The source dataset's own label, kept apart from the reference"),
        _s("reference_status", "Verification outcome of the reference"),
        _s("reference_rated_by", "Who verified the reference (crowd, import, …)"),
        _s("rejection_reason", "Why the reference was rejected, if it was"),
        Column("flagged_harmful", pa.bool_(), "Flagged as harmful during construction"),
        _s("reference_meta", "Reference provenance (model, prompt version), JSON text"),
        _s("extra", "Source columns without a home here, JSON text"),
        Column("images", pa.list_(IMAGE_STRUCT), "Images in order, with licence and caption"),
        Column("turns", pa.list_(TURN_STRUCT), "Conversation turns (ConvBench); empty otherwise"),
        Column("rubrics", pa.list_(RUBRIC_STRUCT), "Score rubrics (Prometheus-Vision), five levels"),
    ],
    "models": [
        _s("name", "Model name as it appears on the leaderboards"),
        _s("version", "Model version"),
        _s("family", "Model family (self-preference analyses)"),
        Column("is_reference", pa.bool_(), "The benchmark's reference 'model'"),
        _s("notes", "Free notes (anyone of the study named in them: by pseudonym)"),
    ],
    "responses": [
        _s("uuid", "Response id"),
        _s("instance", "Instance uuid"),
        _s("model", "Model name (models.name)"),
        Column("turn", pa.int8(), "0 for single-turn; 1–3 for conversation turns"),
        _s("condition", "Conversation condition the answer was produced under"),
        _s("text", "The model's answer"),
    ],
    "comparisons": [
        _s("uuid", "Comparison id"),
        _s("instance", "Instance uuid"),
        _s("response_a", "Response uuid shown as A"),
        _s("response_b", "Response uuid shown as B"),
        Column("swapped", pa.bool_(), "Sides swapped by the randomizer"),
        _s("sampling", "How the pair was chosen (uniform, active, anchor, …)"),
        _s("gold_choice", "Known answer for attention checks (A/B), else empty"),
    ],
    "judgments": [
        _s("uuid", "Judgment id"),
        _s("comparison", "Comparison uuid (pairwise kinds)", nullable=True),
        _s("response", "Response uuid (score and feedback kinds)", nullable=True),
        _s("source", "'human' for crowd votes, else the automatic judge's name"),
        _s("annotator", "Crowd votes and analysts' rulings: the person's keyed pseudonym "
                        "(anon-…); judges: the judge version"),
        _s("kind", "pairwise, score, feedback, or adjudication (an analyst's ruling, not a vote)"),
        _s("choice", "A, B or tie (pairwise kinds)"),
        Column("score", pa.float64(), "1–5 rubric score (score kind)", nullable=True),
        _s("feedback", "The rater's or judge's written feedback"),
        _s("turn", "'' single-turn; '1'–'3' or 'overall' for conversations"),
        _s("meta", "Kind-specific details (e.g. the two feedbacks compared), JSON text"),
        _s("template_version", "HIT type or judge prompt template, with its version"),
        _s("prompt_hash", "SHA-256 of the judge's prompt (automatic judges)"),
        Column("created_at", pa.timestamp("us", tz="UTC"), "When the judgment was made"),
        Column("rejected", pa.bool_(), "The vote's work was rejected: kept, never counted",
               since="2"),
    ],
}


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in TABLES[table]],
                     metadata={"vlmeval.table": table, "vlmeval.schema_version": SCHEMA_VERSION})
