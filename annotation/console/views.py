"""The admin's batch pages in the product (not the Django admin): the list, a batch's page
(progress with ETA, spend with fees, broken images, activation with the estimate, launch), the
upload wizard (HIT type → columns and sample → file) and the preview of any task as a worker.
Views parse, authorize and render; every write is one service."""
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from annotation.core.clients.errors import MarketplaceError
from annotation.core.marketplaces import get_provider
from annotation.core.money import AmountRefused
from annotation.core.permissions import admin_required
from annotation.engine import upload_help
from annotation.engine.admin import SAMPLE_TYPES
from annotation.engine.hit_types import all_hit_types, get_hit_type
from annotation.engine.results import FORMATS, results_response
from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.uploads import UploadRefused, batch_check_images, batch_upload
from annotation.engine.study_budget import batch_study_cost, study_money
from annotation.engine.views import render_task
from annotation.models import Batch, Task, Worker
from annotation.providers.costs import BudgetExceeded
from annotation.providers.selectors import batch_costs
from annotation.providers.services import batch_launch, config_for
from studies.access import MANAGE, study_or_default
from studies.links import study_redirect

from .forms import StatusForm, UploadForm
from .selectors import batch_summaries

LIST_PAGE = 50
TASKS_SHOWN = 20
POSITION_MAX = 2 ** 31 - 1
_LAUNCH_REFUSALS = (MarketplaceError, BudgetExceeded, ValidationError)


# Each page serves the default study at /batches/ (admins) and any study under
# /s/<slug>/batches/ (its owners); a batch of another study is a 404.
study_admin = study_or_default(MANAGE, admin_required)


def _batch(study, batch_uuid) -> Batch:
    return get_object_or_404(Batch, uuid=batch_uuid, study=study)


@study_admin
@require_GET
def batch_list(request, study):
    batches = Batch.objects.filter(study=study).order_by("-created_at", "-pk")
    page = Paginator(batches, LIST_PAGE).get_page(request.GET.get("page"))
    return render(request, "annotation/console/batch_list.html", {
        "page": page, "rows": batch_summaries(page.object_list)})


@study_admin
@require_GET
def batch_detail(request, study, batch_uuid):
    batch = _batch(study, batch_uuid)
    summary = batch_summaries([batch], with_eta=True)[0]
    tasks = batch.tasks.order_by("position").only("uuid", "position", "is_gold")[:TASKS_SHOWN]
    return render(request, "annotation/console/batch_detail.html", {
        "batch": batch, "s": summary, "costs": batch_costs(batch), "tasks": tasks,
        "task_count": batch.tasks.count(), "status_form": StatusForm(), "formats": FORMATS, **_study_money(batch)})


def _study_money(batch: Batch) -> dict:
    """The batch's study's budget, what it spent or committed, and what opening this batch
    needs: beside every estimate, since opening it is refused past the study's budget."""
    return {"study_money": study_money(batch.study),
            "study_needed": batch_study_cost(batch, batch.study)}


@study_admin
@require_POST
def batch_status(request, study, batch_uuid):
    """Activate (after the broken images, if any, were seen and accepted), pause or finish."""
    batch = _batch(study, batch_uuid)
    form = StatusForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose activate, pause or finish.")
        return study_redirect(request, "console:batch", batch.uuid)
    status = form.cleaned_data["status"]
    if (status == Batch.Status.ACTIVE and batch.image_problems
            and not form.cleaned_data["images_checked"]):
        messages.error(request, f"{len(batch.image_problems)} image URL(s) are broken: tick "
                                "“Activate anyway” to open the batch with them, or upload a "
                                "corrected file.")
        return study_redirect(request, "console:batch", batch.uuid)
    try:
        batch_set_status(batch, status)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        messages.success(request, f"“{batch.title}” is now {batch.get_status_display().lower()}.")
    return study_redirect(request, "console:batch", batch.uuid)


@study_admin
@require_POST
def batch_images(request, study, batch_uuid):
    """Fetch the batch's image URLs again (after fixing the server that serves them)."""
    batch = _batch(study, batch_uuid)
    problems = batch_check_images(batch)
    if problems:
        messages.warning(request, f"{len(problems)} image URL(s) are still broken.")
    else:
        messages.success(request, "Every image URL of this batch shows an image.")
    return study_redirect(request, "console:batch", batch.uuid)


@study_admin
@require_GET
def batch_results(request, study, batch_uuid, fmt):
    """The batch's results (one row per answer, with the task's ``input.*`` columns)."""
    if fmt not in FORMATS:
        raise Http404("Unknown results format.")
    return results_response([_batch(study, batch_uuid)], fmt)


# --- upload wizard -----------------------------------------------------------------------------

@study_admin
def batch_upload_page(request, study):
    """Step 1 without ``hit_type``: choose one. Then its columns, a sample and the form."""
    slug = request.POST.get("hit_type") or request.GET.get("hit_type") or ""
    try:
        hit = get_hit_type(slug) if slug else None
    except LookupError:
        hit = None
    if hit is None:
        return render(request, "annotation/console/upload_choose.html",
                      {"hit_types": all_hit_types()})
    form = UploadForm(request.POST or None, request.FILES or None, hit=hit)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        try:
            batch = batch_upload(**{**data, "hit_type": hit.slug}, study=study,
                                 hit_options=form.hit_options())
        except AmountRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.messages)
        except UploadRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.messages)
        except ValidationError as exc:  # options the type refuses at creation
            form.add_error(None, exc.messages)
        else:
            tasks = batch.tasks.count()
            messages.success(request, f"Created the draft “{batch.title}” with {tasks} "
                                      f"task{'s' if tasks != 1 else ''}.")
            if batch.image_problems:
                messages.warning(request, f"{len(batch.image_problems)} image URL(s) are "
                                          "broken: see the list below before activating.")
            return study_redirect(request, "console:batch", batch.uuid)
    return render(request, "annotation/console/upload.html", {
        "hit": hit, "form": form, "columns": upload_help.payload_columns(hit),
        "rule": upload_help.payload_rule(hit), "sample": upload_help.example_rows(hit)[:1],
        "max_mb": _max_mb()})


@study_admin
@require_GET
def batch_upload_sample(request, study):
    """A HIT type's sample rows as a file (``?hit_type=…&format=csv|jsonl``)."""
    fmt = request.GET.get("format", "csv")
    if fmt not in SAMPLE_TYPES:
        raise Http404("Unknown sample format.")
    try:
        name, body = upload_help.sample_file(get_hit_type(request.GET.get("hit_type", "")), fmt)
    except LookupError as exc:
        raise Http404(str(exc)) from exc
    response = HttpResponse(body, content_type=SAMPLE_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _max_mb() -> str:
    from django.conf import settings

    return f"{settings.BATCH_UPLOAD_MAX_BYTES / (1024 * 1024):g}"


# --- preview and launch ------------------------------------------------------------------------

@study_admin
@require_GET
def task_preview(request, study, batch_uuid, position):
    """Task ``position`` exactly as a worker sees it, with answering disabled: nothing is
    claimed and nothing can be submitted (the page's form has nowhere to post)."""
    batch = _batch(study, batch_uuid)
    if position > POSITION_MAX:  # past the column's range: no such task (not a DB error)
        raise Http404("No such task.")
    task = get_object_or_404(Task.objects.select_related("batch"), batch=batch,
                             position=position)
    messages.info(request, f"Preview as a worker of task {position} of “{batch.title}”: "
                           "nothing you do here is submitted.")
    return render_task(request, task=task, preview=True)


@study_admin
def batch_launch_page(request, study, batch_uuid):
    """Publish on the batch's marketplace after the estimate (MTurk production asks twice)."""
    batch = _batch(study, batch_uuid)
    local = batch.provider == Worker.Provider.LOCAL
    provider = get_provider(batch.provider)
    production = provider.production()
    if request.method == "POST" and not local:
        confirmed = request.POST.get("confirm") == "on"
        production_confirmed = request.POST.get("confirm_production") == "on"
        if not confirmed or (production and not production_confirmed):
            messages.error(request, "Tick the confirmation(s) to launch.")
        else:
            config_for(batch)
            try:
                report = batch_launch(batch, actor=request.user.get_username(),
                                      production_confirmed=production_confirmed)
            except _LAUNCH_REFUSALS as exc:
                messages.error(request, "Not launched: " + "; ".join(
                    getattr(exc, "messages", None) or [str(exc)]))
            else:
                messages.success(request, f"Launched “{batch.title}”: {report.created} new, "
                                          f"{report.reused} already published, of "
                                          f"{report.total}.")
                return study_redirect(request, "console:batch", batch.uuid)
    return render(request, "annotation/console/launch.html", {
        "batch": batch, "local": local, "production": production,
        "costs": batch_costs(batch), "tasks": batch.tasks.count(), **_study_money(batch),
        "mturk_endpoint": provider.endpoint(),
        "providers": [p for p in Worker.Provider if p != Worker.Provider.LOCAL]})
