"""A study's dataset page (``/s/<slug>/dataset/``, analysts): its items by source, its models
with their responses, and downloads of the exports the services already write.

Every download is the study's rows only (each service takes ``study=``); CSV files are the
services' own, written through ``annotation.core.csv_safety``. The Parquet dataset is written
by a job holding the jobs lock into a folder, so the page gives its command rather than
building it inside a request.
"""
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from annotation.content.exports import export_dataset
from annotation.models import ConversationTurn, Instance, InstanceImage
from judging.models import EvalModel
from judging.services.judgments.exports import judgments_export
from studies.access import ANALYZE, study_page

# Benchmarks this platform imports, matched on ``Instance.source`` ("demo-convbench" too).
FAMILIES = (("visitbench", "VisIT-Bench"), ("convbench", "ConvBench"),
            ("prometheus", "Prometheus-Vision"))
OTHER = "Other"


@dataclass(frozen=True)
class Download:
    label: str
    content_type: str
    write: Callable  # study -> bytes | str


CSV, JSONL = "text/csv; charset=utf-8", "application/x-ndjson; charset=utf-8"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
DOWNLOADS = {
    "items-visitbench.csv": Download("Items, VisIT-Bench CSV (multi-image layout)", CSV,
                                     lambda s: export_dataset("visitbench", study=s)),
    "items-convbench.xlsx": Download("Items, ConvBench workbook", XLSX,
                                     lambda s: export_dataset("convbench", study=s)),
    "items-prometheus.jsonl": Download("Items, Prometheus-Vision JSONL", JSONL,
                                       lambda s: export_dataset("prometheus", study=s)),
    "items.jsonl": Download("Items, full JSONL dump (re-importable)", JSONL,
                            lambda s: export_dataset("jsonl", study=s)),
    "judgments.csv": Download("Judgments CSV", CSV, lambda s: judgments_export("csv", study=s)),
    "judgments.jsonl": Download("Judgments JSONL", JSONL,
                                lambda s: judgments_export("jsonl", study=s)),
    "judgments-visitbench.csv": Download("Human preferences, VisIT-Bench CSV", CSV,
                                         lambda s: judgments_export("visitbench", study=s)),
}


def source_family(source: str) -> str:
    """The benchmark a source belongs to, for the page's grouping."""
    return next((label for key, label in FAMILIES if key in source.lower()), OTHER)


def items_by_source(study) -> list[dict]:
    """Per ``Instance.source`` of ``study``: items, conversations, turns and image slots.
    Three grouped queries, so turns and images never multiply each other's counts."""
    items = (Instance.objects.filter(study=study).order_by().values("source")
             .annotate(items=Count("id"),
                       conversations=Count("id", filter=Q(kind=Instance.Kind.CONVERSATION))))
    turns = dict(ConversationTurn.objects.filter(instance__study=study).order_by()
                 .values_list("instance__source").annotate(n=Count("id")))
    images = dict(InstanceImage.objects.filter(instance__study=study).order_by()
                  .values_list("instance__source").annotate(n=Count("id")))
    order = [label for _, label in FAMILIES] + [OTHER]
    rows = [{**row, "family": source_family(row["source"]),
             "turns": turns.get(row["source"], 0), "images": images.get(row["source"], 0)}
            for row in items]
    return sorted(rows, key=lambda r: (order.index(r["family"]), r["source"]))


def models_with_responses(study) -> list[EvalModel]:
    """``study``'s models, the reference first, each with ``n_responses`` (its responses to
    the study's items)."""
    return list(EvalModel.objects.in_study(study)
                .annotate(n_responses=Count("responses",
                                            filter=Q(responses__instance__study=study)))
                .order_by("-is_reference", "name"))


@study_page(ANALYZE)
@require_GET
def study_dataset(request, study):
    rows = items_by_source(study)
    return render(request, "agreement/study_dataset.html", {
        "study": study, "sources": rows, "models": models_with_responses(study),
        "total_items": sum(r["items"] for r in rows), "downloads": DOWNLOADS.items()})


@study_page(ANALYZE)
@require_GET
def study_dataset_download(request, study, export_name):
    download = DOWNLOADS.get(export_name)
    if download is None:
        raise Http404("No such export.")
    response = HttpResponse(download.write(study), content_type=download.content_type)
    response["Content-Disposition"] = content_disposition_header(
        True, f"{study.slug}-{export_name}")
    return response


urlpatterns = [
    path("", study_dataset, name="dataset"),
    path("<str:export_name>", study_dataset_download, name="dataset_download"),
]
