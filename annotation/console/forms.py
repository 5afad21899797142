"""Forms of the admin's batch pages. The upload form is the Django admin's (same fields, same
rules) with the HIT type fixed by the wizard's first step and the HIT options asked as the
type's own form instead of JSON."""
from django import forms

from annotation.engine.admin import BatchUploadForm
from annotation.models import Worker

REASON_MAX = Worker._meta.get_field("blocked_reason").max_length


class UploadForm(BatchUploadForm):
    def __init__(self, *args, hit, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["hit_options"]
        self.fields["hit_type"].widget = forms.HiddenInput()
        self.fields["hit_type"].initial = hit.slug
        self.fields["file"].help_text = "CSV or JSONL, one task per row, columns as listed above"
        self.options = None
        if hit.options_form is not None:
            self.options = hit.options_form(_with_defaults(self.data, hit.options_form)
                                            if self.is_bound else None, prefix="opt")

    def is_valid(self):
        valid = super().is_valid()
        return (self.options is None or self.options.is_valid()) and valid

    def hit_options(self) -> dict:
        return dict(self.options.cleaned_data) if self.options is not None else {}


def _with_defaults(data, options_form) -> dict:
    """The posted options, each one left out taking its default (a checkbox left out is
    "no", as a browser sends it)."""
    out = {key: data.get(key) for key in data}
    for name, field in options_form.base_fields.items():
        key = f"opt-{name}"
        if key not in out and not isinstance(field, forms.BooleanField):
            out[key] = field.initial
    return out


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=(("active", "Activate"), ("paused", "Pause"),
                                        ("finished", "Finish")))
    images_checked = forms.BooleanField(required=False)


class BlockForm(forms.Form):
    reason = forms.CharField(
        max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 3}),
        label="Reason (the worker reads it)",
        help_text="Say what was wrong, e.g. “Answers chosen faster than the responses can "
                  "be read.”")
    reject_pending = forms.BooleanField(
        required=False, initial=True,
        label="Also reject, with this reason, their work in this batch awaiting review")
    confirm = forms.BooleanField(label="Yes, block this worker")

    def clean_reason(self):
        reason = " ".join(self.cleaned_data["reason"].split())
        if not reason:
            raise forms.ValidationError("A block needs a reason the worker can read.")
        return reason


class BonusForm(forms.Form):
    """A bonus to one worker of the batch. ``key`` is drawn when the page is drawn, so a double
    submit of one form pays once while a second bonus from a fresh page is a new one."""

    worker = forms.ChoiceField(label="Worker")
    amount = forms.CharField(max_length=12, label="Amount (USD)")
    reason = forms.CharField(max_length=500, label="Reason (the worker reads it)",
                             error_messages={"required": "A bonus needs a reason the worker "
                                                         "can read."})
    key = forms.CharField(max_length=64, widget=forms.HiddenInput())

    def __init__(self, *args, workers, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["worker"].choices = workers


class PayoutForm(forms.Form):
    """"Mark paid" for one worker of a local batch (or, with ``worker=all``, everyone owed)."""

    worker = forms.CharField(max_length=36)
    reference = forms.CharField(max_length=200, required=False,
                                label="Payment reference (for your books)")
