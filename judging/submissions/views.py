"""Submitter pages: the upload form with my submissions, one submission's status (which
updates itself while the judge works), the benchmark kit and my models on the board. Views
parse, authorize, call one service, render.

Each page exists twice: under ``/s/<slug>/submit/`` for a study's submitters (``studies.submit``,
a non-member gets a 404), and at the old ``/eval/submit/`` URLs for the default study."""
import tempfile

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape

from annotation.core.http import request_text
from annotation.core.jobs import JobsBusy
from annotation.core.permissions import kit_reader_required, submitter_required
from studies.access import SUBMIT, study_page

from .. import rating_cache, thin_data
from ..selectors import submitted_model_names
from .kit import benchmark_instances, kit_write
from .models import Submission
from .selectors import my_board_sources, my_model_names, my_rows
from .services import (
    SubmissionRefused,
    submission_create,
    submission_judge,
    submission_study,
)

KIT_NAME = "benchmark-kit.zip"


class SubmissionForm(forms.Form):
    name = forms.CharField(max_length=80, help_text="Your model's name; a resubmission of the "
                           "same name becomes its next version")
    # Django renders help text as HTML: escaped here, so "<model>" shows instead of vanishing.
    file = forms.FileField(help_text=escape(
        "The benchmark kit's predictions template, filled in (.csv or .jsonl; rows matched by "
        "item_id), or a VisIT-Bench submission CSV (one '<model> prediction' column)"))
    human_eval = forms.BooleanField(required=False, label="Also request a human evaluation "
                                    "(5 crowd votes per instance against a random existing "
                                    "model; an admin approves it)")


# A page's URL name under the study (namespace studies) and at its old URL (judging).
_OLD_NAMES = {"submit_kit": "kit", "submit_board": "my_board"}


def submission_url(study, name: str, *args) -> str:
    """A submitter page's URL: under the study for a study's page, else the old one (the
    default study's pages keep their ``/eval/submit/`` URLs)."""
    if study is None:
        return reverse(f"judging:{_OLD_NAMES.get(name, name)}", args=args)
    return reverse(f"studies:{name}", args=(study.slug, *args))


def _links(study) -> dict:
    return {"submit": submission_url(study, "submit"), "kit": submission_url(study, "submit_kit"),
            "my_board": submission_url(study, "submit_board")}


def _mine(request, study, submission_uuid) -> Submission:
    submission = (Submission.objects.select_related("model", "run__judge")
                  .filter(uuid=submission_uuid, submitter=request.user,
                          study=submission_study(study)).first())
    if submission is None:
        raise Http404("No such submission")
    return submission


def _submit(request, study):
    form = SubmissionForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > settings.SUBMISSION_MAX_BYTES:
            form.add_error("file", f"Larger than {settings.SUBMISSION_MAX_BYTES:,} bytes.")
        else:
            try:
                submission = submission_create(
                    submitter=request.user, name=form.cleaned_data["name"],
                    file_name=upload.name, data=upload.read(),
                    human_eval=form.cleaned_data["human_eval"], study=study)
            except SubmissionRefused as exc:
                form.add_error(None, " ".join(exc.messages))
            except JobsBusy as exc:  # the server is running as many jobs as it may
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Received: {submission.model.name} is being judged.")
                return redirect(submission_url(study, "submission", submission.uuid))
    target = submission_study(study)
    try:
        judge, closed = submission_judge(target), ""
    except SubmissionRefused as exc:
        judge, closed = None, " ".join(exc.messages)
    submissions = list(Submission.objects.filter(submitter=request.user, study=target)
                       .select_related("model", "run")[:50])
    for s in submissions:
        s.page_url = submission_url(study, "submission", s.uuid)
    return render(request, "judging/submissions/submit.html", {
        "form": form, "judge": judge, "closed": closed, "study": study, "links": _links(study),
        "cap": target.effective_submission_budget_cap(),
        "per_day": target.effective_submissions_per_day(),
        "max_rows": settings.SUBMISSION_MAX_ROWS, "submissions": submissions,
    }, status=400 if form.errors else 200)


@submitter_required
def submit(request):
    return _submit(request, None)


@study_page(SUBMIT)
def study_submit(request, study):
    return _submit(request, study)


def _progress(submission: Submission) -> dict:
    run = submission.run
    total = run.units_total if run else 0
    done = (run.units_done + run.units_failed) if run else 0
    return {"status": submission.status, "status_label": submission.get_status_display(),
            "units_done": done, "units_total": total,
            "percent": round(100 * done / total) if total else 0,
            "cost": f"{run.cost:.4f}" if run else "0"}


def _status(request, study, submission_uuid):
    submission = _mine(request, study, submission_uuid)
    return render(request, "judging/submissions/status.html", {
        "submission": submission, "progress": _progress(submission), "study": study,
        "links": _links(study),
        "status_url": submission_url(study, "submission_status", submission.uuid)})


@submitter_required
def submission_status(request, submission_uuid):
    return _status(request, None, submission_uuid)


@study_page(SUBMIT)
def study_submission_status(request, study, submission_uuid):
    return _status(request, study, submission_uuid)


@submitter_required
def submission_status_json(request, submission_uuid):
    return JsonResponse(_progress(_mine(request, None, submission_uuid)))


@study_page(SUBMIT)
def study_submission_status_json(request, study, submission_uuid):
    return JsonResponse(_progress(_mine(request, study, submission_uuid)))


def kit_response(request, study=None) -> FileResponse:
    """The kit of the study's benchmark (None: the default study's), built in a temporary
    file and streamed from it (the file is deleted when the response closes it).
    ``?images=0`` leaves the image files out."""
    out = tempfile.TemporaryFile()
    try:
        upload_path = (reverse("eval-submissions") if study is None
                       else reverse("study-submissions", args=[study.slug]))
        kit_write(out, benchmark_instances(study), upload_path=upload_path,
                  include_images=request.GET.get("images") != "0")
        out.seek(0)
    except BaseException:
        out.close()
        raise
    name = KIT_NAME if study is None else f"{study.slug}-{KIT_NAME}"
    return FileResponse(out, as_attachment=True, filename=name, content_type="application/zip")


@kit_reader_required
def kit_download(request):
    return kit_response(request)


@study_page(SUBMIT)
def study_kit_download(request, study):
    return kit_response(request, study)


def _my_board(request, study):
    """My models' rows and ranks on a board of the study their submissions are judged on."""
    sources = my_board_sources(request.user, study)
    judge = request_text(request.GET, "judge", max_length=200) or (sources[0] if sources else "")
    if judge and judge not in sources:
        raise Http404("None of your models is judged on that board.")
    board = rating_cache.leaderboard_page(judge, study=study)["board"] if judge else None
    rows = my_rows(board.rows, my_model_names(request.user, study)) if board else []
    return render(request, "judging/submissions/my_board.html", {
        "judge": judge, "sources": sources, "board": board, "rows": rows, "study": study,
        "links": _links(study),
        "ranked": len(board.ranked_rows) if board else 0, "params": {"judge": judge},
        "submitted": submitted_model_names(study),
        "min_matches": board.min_matches if board else 0,
        "provisional_note": thin_data.provisional_note(board.min_matches) if board else ""})


@submitter_required
def my_board(request):
    return _my_board(request, None)


@study_page(SUBMIT)
def study_my_board(request, study):
    return _my_board(request, study)
