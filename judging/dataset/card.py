"""The dataset card written beside the Parquet files: what is in them, where the images come
from and under which licences, how the judgments were collected, and what the crowd was paid.

The YAML header names one ``datasets`` configuration per table, so
``load_dataset("<dir>", "judgments")`` finds its file; the schema section is generated from
``judging.dataset.schema`` — the same columns the writer used.
"""
from __future__ import annotations

import statistics
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Assignment, Batch
from judging.dataset.schema import SCHEMA_VERSION, TABLES
from judging.models import Judgment


def _licences(out: Path) -> Counter:
    images = pq.read_table(out / "instances.parquet", columns=["images"]).column("images")
    seen: dict[str, str] = {}
    for row in images.to_pylist():
        for image in row or []:
            seen[image["uuid"]] = image["license"] or "unknown"
    return Counter(seen.values())


def _protocol_lines(scrub, sid: int) -> list[str]:
    lines = []
    batches = (Batch.objects.filter(study_id=sid).exclude(status=Batch.Status.DRAFT)
               .order_by("created_at")
               .annotate(done=Count("assignments", filter=Q(assignments__counted=True), distinct=True),
                         gold=Count("tasks", filter=Q(tasks__is_gold=True), distinct=True)))
    for batch in batches:
        seconds = list(Assignment.objects.filter(batch=batch, counted=True)
                       .exclude(seconds_spent=None).values_list("seconds_spent", flat=True))
        median = statistics.median(seconds) if seconds else None
        hourly = (f", about ${batch.reward * 3600 / Decimal(str(median)):.2f}/hour at the "
                  f"median {median:.0f} s per task" if median else "")
        lines.append(
            f"| {scrub(batch.title)} | `{batch.hit_type}` | {batch.provider or 'local'} | "
            f"{batch.assignments_per_task} | {batch.gold} | {batch.done} | "
            f"${batch.reward:.2f}{hourly} |")
    return lines


def _in_study(sid: int):
    return Judgment.objects.filter(study_id=sid)


def _judges(sid: int) -> list[str]:
    rows = (_in_study(sid).exclude(source=Judgment.HUMAN).values("source", "template_version")
            .annotate(n=Count("id")).order_by("source", "template_version"))
    return [f"| {r['source']} | `{r['template_version'] or '—'}` | {r['n']:,} |" for r in rows]


def card_markdown(out: Path, counts: dict[str, int], scrub, sid: int) -> str:
    """The card of study ``sid``; ``scrub`` takes the participants' names out of free text
    (batch titles)."""
    config_lines = "".join(f"- config_name: {t}\n  data_files: {t}.parquet\n" for t in counts)
    human = _in_study(sid).filter(source=Judgment.HUMAN).count()
    parts = [
        f"---\nconfigs:\n{config_lines}---\n",
        "# Study dataset\n",
        f"Exported {timezone.now():%Y-%m-%d %H:%M} UTC, schema version {SCHEMA_VERSION}. "
        "Load a table with `datasets.load_dataset(\"parquet\", data_files=\"judgments.parquet\")` "
        "or `pandas.read_parquet(\"judgments.parquet\")`; tables refer to each other by uuid.\n",
        "## Contents\n", "| table | rows |", "|---|---:|",
        *[f"| {table} | {n:,} |" for table, n in counts.items()],
        f"\n{human:,} of the judgments are crowd votes (`source = human`); the rest come from "
        "automatic judges or, with `kind = adjudication`, from analysts ruling on disputed "
        "items (a ruling, never a vote).\n",
        "## Images and licences\n",
        "Images are referenced by URL and SHA-256, not included. Licences as recorded at "
        "import (each image once):\n", "| licence | images |", "|---|---:|",
        *[f"| {lic} | {n:,} |" for lic, n in sorted(_licences(out).items())],
        "\n## Collection protocol and pay\n",
        "Crowd workers answered through the platform's HIT pages; each task was given to N "
        "distinct workers, gold tasks (attention checks with a known answer) graded workers and "
        "never became judgments. Every person (crowd workers, imported annotators, analysts) "
        "appears under a keyed pseudonym (`anon-…`), also where free text named them.\n",
        "| batch | HIT type | marketplace | N | gold tasks | answers | reward per task |",
        "|---|---|---|---:|---:|---:|---|",
        *(_protocol_lines(scrub, sid) or ["| (no launched batch in this study) | | | | | | |"]),
        "\n## Automatic judges\n", "| judge | template | judgments |", "|---|---|---:|",
        *(_judges(sid) or ["| (none) | | |"]),
        "\n## Schema\n",
    ]
    for table, columns in TABLES.items():
        parts += [f"### {table}.parquet\n", "| column | type | meaning |", "|---|---|---|"]
        parts += [f"| {c.name} | `{c.type}`{' (nullable)' if c.nullable else ''} | {c.doc} |"
                  for c in columns]
        parts.append("")
    return "\n".join(parts) + "\n"
