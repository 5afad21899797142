"""Analyst pages: the list of agreement reports (with a form that queues a new one), one
report with its tables and plots (or, while it builds, its progress, polled through a small
JSON status endpoint), restarting a failed one, and every file (report.html opened inline in
a sandbox, or downloaded). Views parse, authorize, call one service, render."""
from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from annotation.core.db_text import storage_problem
from annotation.core.jobs import JobsBusy
from annotation.core.permissions import analyst_required
from judging.selectors import BASE_SPLITS, HUMAN, category_names, judge_names
from studies.access import ANALYZE, study_or_default
from studies.links import study_redirect, study_reverse

from . import metrics as metric_lib
from .models import Report, ReportFile
from .reports.html import sections, summary, toc
from .reports.labels import SMALL_N
from .reports.params import AGGREGATIONS, MAJORITY
from .services.metric_scores import DEFAULT_METRICS, UnknownMetric
from .services.reports import ReportBusy
from .services.reports import report_delete as delete_report
from .services.reports import report_restart as restart_report
from .services.reports import report_start as start_report

# report.html is rendered from worker and judge text (escaped, but still user-influenced): opened
# inline it runs sandboxed (no scripts, an opaque origin that cannot use the analyst's session)
# and may load nothing but its own inline styles and data: images.
STANDALONE_CSP = ("sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
                  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
INLINE_FILES = (".png", ".html")


# Each page serves the default study at /reports/ (analysts) and any study under
# /s/<slug>/reports/ (its analysts); a report of another study is a 404.
study_analyst = study_or_default(ANALYZE, analyst_required)


class ReportForm(forms.Form):
    split = forms.CharField(initial="all", max_length=120)
    judges = forms.MultipleChoiceField(required=False, choices=[],
                                       help_text="None selected: every judge")
    metrics = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                        choices=[],
                                        initial=list(DEFAULT_METRICS))
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1)
    bootstrap_rounds = forms.IntegerField(initial=1000, min_value=0, max_value=10_000)
    include_trial = forms.BooleanField(
        required=False, label="Include trial batches",
        help_text="Votes of trial batches (such as an admin's sample) count in no report unless "
                  "included")
    aggregation = forms.ChoiceField(
        choices=[(a, a) for a in AGGREGATIONS], initial=MAJORITY, required=False,
        label="Human labels",
        help_text="What judge accuracy is headlined against: the plain majority, or a "
                  "reliability model's weighted labels (both are reported)")
    title = forms.CharField(required=False, max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judges"].choices = [(j, j) for j in judge_names() if j != HUMAN]
        self.fields["metrics"].choices = [(m, m) for m in metric_lib.METRICS]  # the registry


@study_analyst
def report_list(request, study):
    splits = BASE_SPLITS + [f"category:{c}" for c in category_names()]
    return render(request, "agreement/report_list.html", {
        "reports": Report.objects.filter(study=study).only(
            "uuid", "title", "status", "stage", "progress", "params", "snapshot", "created_at",
            "created_by")[:100],
        "form": ReportForm(), "splits": splits})


@study_analyst
@require_POST
def report_start(request, study):
    form = ReportForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Report not started: {form.errors.as_text()}")
        return study_redirect(request, "agreement:report_list")
    d = form.cleaned_data
    params = {"split": d["split"], "judges": d["judges"] or None, "metrics": d["metrics"],
              "seed": d["seed"], "bootstrap_rounds": d["bootstrap_rounds"],
              "include_trial": d["include_trial"], "aggregation": d["aggregation"] or MAJORITY}
    try:
        report = start_report(params, title=d["title"], created_by=request.user.get_username(),
                              study=None if study.is_default else study)
    except (ValueError, UnknownMetric) as exc:
        messages.error(request, f"Report not started: {exc}")
        return study_redirect(request, "agreement:report_list")
    except JobsBusy as exc:  # too many reports, runs and builds queued: say so, keep the form
        messages.error(request, exc.message)
        return study_redirect(request, "agreement:report_list")
    return study_redirect(request, "agreement:report_detail", report.uuid)


@study_analyst
def report_detail(request, study, report_uuid):
    report = get_object_or_404(Report, uuid=report_uuid, study=study)
    files = list(report.files.values_list("name", flat=True))
    present = set(files)

    def src(stem):
        name = f"{stem}.png"
        if name not in present:
            return None
        return study_reverse(request, "agreement:report_file", report.uuid, name)

    data = report.data if report.status == Report.Status.DONE else {}
    body = sections(data, src) if data else []
    context = {"report": report, "files": files, "sections": body,
               "summary": summary(data) if data else None, "small_n": SMALL_N,
               "toc": toc(body, summary_=bool(data),
                          extra=[("snapshot", "Data snapshot"), ("downloads", "Downloads")]),
               "snapshot": report.snapshot,
               "counts": sorted((report.snapshot or {}).get("counts", {}).items())}
    return render(request, "agreement/report_detail.html", context)


@study_analyst
def report_status(request, study, report_uuid):
    """What the report page polls while the report builds: status, stage, percent, error."""
    report = get_object_or_404(Report.objects.only(
        "uuid", "status", "stage", "progress", "error"), uuid=report_uuid,
        study=study)
    return JsonResponse({"status": report.status, "stage": report.stage,
                         "progress": report.progress, "error": report.error,
                         "finished": report.status in (Report.Status.DONE, Report.Status.FAILED)})


@study_analyst
@require_POST
def report_restart(request, study, report_uuid):
    report = get_object_or_404(Report, uuid=report_uuid, study=study)
    try:
        if not restart_report(report):
            messages.error(request, "Only a failed report can be started again, and not while "
                                    "an identical one is queued or running.")
    except JobsBusy as exc:
        messages.error(request, exc.message)
    return study_redirect(request, "agreement:report_detail", report.uuid)


@study_analyst
def report_delete(request, study, report_uuid):
    """GET asks for confirmation; POST deletes the report and its files (finished ones only)."""
    report = get_object_or_404(Report.objects.defer("data"), uuid=report_uuid, study=study)
    if request.method != "POST":
        return render(request, "agreement/report_delete.html", {
            "report": report, "file_count": report.files.count()})
    try:
        delete_report(report)
    except ReportBusy as exc:
        messages.error(request, str(exc))
        return study_redirect(request, "agreement:report_detail", report.uuid)
    messages.success(request, f"Report “{report}” and its files were deleted.")
    return study_redirect(request, "agreement:report_list")


@study_analyst
def report_file(request, study, report_uuid, name):
    f = None if storage_problem(name) else (  # a NUL in the URL never reaches the query
        ReportFile.objects.filter(report__uuid=report_uuid, name=name,
                                  report__study=study).first())
    if f is None:
        raise Http404("No such file in this report")
    response = HttpResponse(bytes(f.content), content_type=f.content_type)
    inline = name.endswith(INLINE_FILES) and "download" not in request.GET
    response["Content-Disposition"] = content_disposition_header(
        not inline, name)  # the name comes from the URL
    response["X-Content-Type-Options"] = "nosniff"
    if name.endswith(".html"):
        response["Content-Security-Policy"] = STANDALONE_CSP
    return response
