"""The approve / reject form shared by the worker page and the batch review page: parses the
ticked assignments (limited to the rows that page lists) and calls one review service per
assignment, so a page never decides anything itself."""
import json
import uuid

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Page, Paginator

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.selectors import active_seconds
from annotation.engine.selectors_workers import worker_display
from annotation.providers.costs import BudgetExceeded
from annotation.providers.services import (
    assignment_approve,
    assignment_reject,
)
from annotation.providers.services.local_review import REASON_MAX

_REFUSALS = (MarketplaceError, BudgetExceeded, ValidationError)
REVIEWABLE = ("submitted", "rejected")  # rows that get a checkbox (rejected: override only)
PAGE_SIZE = 50
MATCHING_MAX = 1000  # assignments one "every matching assignment" decision may cover


def assignments_page(rows, number) -> Page:
    """One page of assignments, each with ``answer_text`` (the answer as JSON, as stored) and
    ``active_seconds`` (time on the page, from the telemetry): what every review list shows."""
    page = Paginator(rows, PAGE_SIZE).get_page(number)
    page.object_list = list(page.object_list)
    for assignment in page.object_list:
        assignment.answer_text = ("—" if assignment.answer is None else
                                  json.dumps(assignment.answer, ensure_ascii=False))
        assignment.active_seconds = active_seconds(assignment.telemetry)
    return page


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=(
        ("approve", "Approve"),
        ("reject", "Reject (the reason is shown to the worker)"),
        ("override", "Approve, overriding a rejection (within 30 days; its votes count again)"),
    ))
    reason = forms.CharField(required=False, max_length=REASON_MAX,
                             widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                             label="Reason / feedback for the worker")

    matching = forms.BooleanField(
        required=False, label="Every assignment matching the filter",
        help_text="Decide every assignment this filter lists, on all pages, instead of the "
                  "ticked ones.")

    def __init__(self, *args, assignments, matching=False, **kwargs):
        """``matching``: offer deciding every row of ``assignments`` at once (a filtered
        list); otherwise only ticked rows are decided."""
        super().__init__(*args, **kwargs)
        self._assignments = assignments
        if not matching:
            del self.fields["matching"]

    def clean(self):
        data = super().clean()
        if data.get("decision") == "reject" and not (data.get("reason") or "").strip():
            raise ValidationError("A rejection needs a reason the worker can read.")
        if data.get("matching"):
            return self._all_matching(data)
        raw = self.data.getlist("assignment") if hasattr(self.data, "getlist") else []
        try:
            ids = {uuid.UUID(value) for value in raw}
        except (ValueError, AttributeError):
            raise ValidationError("Tick assignments from this page.") from None
        chosen = list(self._assignments.filter(uuid__in=ids)
                      .select_related("batch", "task", "worker__user")) if ids else []
        if not chosen or len(chosen) != len(ids):
            raise ValidationError("Tick at least one assignment from this page.")
        data["chosen"] = chosen
        return data

    def _all_matching(self, data):
        rows = self._assignments.select_related("batch", "task", "worker__user")
        chosen = list(rows[:MATCHING_MAX + 1])
        if not chosen:
            raise ValidationError("No assignment matches the filter.")
        if len(chosen) > MATCHING_MAX:
            raise ValidationError(f"More than {MATCHING_MAX} assignments match the filter; "
                                  "narrow it, or decide in steps.")
        data["chosen"] = chosen
        return data


def review_apply(request, form: ReviewForm) -> None:
    """Run the form's decision on each ticked assignment; one message per outcome."""
    decision, reason = form.cleaned_data["decision"], form.cleaned_data["reason"]
    actor = request.user.get_username()
    done = already = 0
    for assignment in form.cleaned_data["chosen"]:
        try:
            if decision == "approve":
                changed = assignment_approve(assignment, feedback=reason, actor=actor)
            elif decision == "reject":
                changed = assignment_reject(assignment, reason=reason, actor=actor)
            else:
                changed = assignment_approve(assignment, feedback=reason,
                                             override_rejection=True, actor=actor)
        except _REFUSALS as exc:
            text = "; ".join(getattr(exc, "messages", None) or [str(exc)])
            messages.error(request, f"Task {assignment.task.position} of “{assignment.batch}” by "
                                    f"{worker_display(assignment.worker)}: {text}")
            continue
        done += int(changed)
        already += int(not changed)
    verb = {"approve": "approved", "reject": "rejected", "override": "approved"}[decision]
    if done:
        messages.success(request, f"{done} assignment(s) {verb}.")
    if already:
        messages.info(request, f"{already} assignment(s) were already {verb}.")
