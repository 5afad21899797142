"""The "new judge run" form: which judge, which items (a crowd batch, a split, a source) and
the budget. It parses; ``services.judge_items`` selects and ``judge_run_request`` prices,
refuses above the budget and starts."""
from django import forms
from django.core.exceptions import ValidationError

from annotation.models import Batch, Instance, InstructionFamily
from studies.models import study_pk

from .models import Judge
from .services import ITEM_SPLITS, RUN_BUDGET, judge_items

SPLIT_LABELS = {"all": "Every item", "single": "Single-image items",
                "multi": "Multi-image items", "conversation": "Conversations"}


def _split_choices():
    names = InstructionFamily.objects.order_by("name").values_list("name", flat=True)
    return ([(s, SPLIT_LABELS[s]) for s in ITEM_SPLITS]
            + [(f"category:{n}", f"Category: {n}") for n in names if n])


def _source_choices(study):
    sources = (Instance.objects.filter(study_id=study_pk(study)).exclude(source="").order_by("source")
               .values_list("source", flat=True).distinct())
    return [("", "Every source")] + [(s, s) for s in sources]


class JudgeRunForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.order_by("name", "-created_at"),
                                   to_field_name="uuid", label="Judge")
    batch = forms.ModelChoiceField(
        queryset=Batch.objects.order_by("-created_at"), to_field_name="uuid", required=False,
        label="Items shown in batch", empty_label="Any batch",
        help_text="Only the comparisons a crowd batch showed (for a grader: their responses).")
    split = forms.ChoiceField(label="Split", initial="all")
    source = forms.ChoiceField(label="Source", required=False)
    budget = forms.CharField(
        label="Budget (USD)", required=False, max_length=32,
        help_text="The most this run may spend; a run estimated above it is refused. Empty: "
                  "the site's limit per run.")

    def __init__(self, *args, study=None, **kwargs):
        """``study``: whose batches, sources and items the run may take (None: the default
        study's, as the API)."""
        super().__init__(*args, **kwargs)
        self.study = study
        self.fields["batch"].queryset = Batch.objects.filter(study_id=study_pk(study)).order_by(
            "-created_at")
        self.fields["split"].choices = _split_choices()
        self.fields["source"].choices = _source_choices(study)

    def clean_budget(self):
        return RUN_BUDGET.parse(self.cleaned_data["budget"], optional=True)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        data["items"] = judge_items(data["judge"], batch=data.get("batch"),
                                    split=data["split"], source=data.get("source") or "",
                                    study=self.study)
        if not data["items"]:
            raise ValidationError("No item of this judge's kind matches: widen the choice.")
        return data
