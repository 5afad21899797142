"""Rating HIT types. Forced-choice A/B (VisIT-Bench fig. 15) is the first."""
from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.hits import HitType, register

from .models import Comparison, Judgment


class PairwisePayloadForm(forms.Form):
    """Either a stored comparison, or the texts inline (generic CSV batches)."""

    comparison = forms.UUIDField(required=False)
    instruction = forms.CharField(required=False, max_length=5000)
    image_urls = forms.JSONField(required=False)
    response_a = forms.CharField(required=False, max_length=20000)
    response_b = forms.CharField(required=False, max_length=20000)

    def clean(self):
        data = super().clean()
        if data.get("comparison"):
            if not Comparison.objects.filter(uuid=data["comparison"]).exists():
                raise ValidationError("comparison: no such comparison")
            data["comparison"] = str(data["comparison"])
            return data
        for field in ("instruction", "response_a", "response_b"):
            if not data.get(field):
                raise ValidationError(f"{field} is required (or give a comparison id)")
        urls = data.get("image_urls") or []
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise ValidationError("image_urls must be a JSON list of URLs")
        if len(urls) > 10:
            raise ValidationError("image_urls: at most 10 images")
        bad = [u for u in urls if not u.startswith(("https://", "http://", "/media/"))]
        if bad:
            raise ValidationError(f"image_urls: not an http(s) URL: {bad[0]!r}")
        return data


class PairwiseAnswerForm(forms.Form):
    choice = forms.ChoiceField(choices=[("A", "Response A"), ("B", "Response B")])


@register
class PairwiseHit(HitType):
    slug = "pairwise_ab"
    version = "1"
    title = "Which response is better?"
    template = "judging/hits/pairwise_ab.html"
    payload_form = PairwisePayloadForm
    answer_form = PairwiseAnswerForm
    shortcuts = [("1 / A", "choose Response A"), ("2 / B", "choose Response B"),
                 ("Enter", "submit")]

    def page_context(self, task):
        payload = task.payload
        if payload.get("comparison"):
            comparison = (
                Comparison.objects.select_related("instance", "response_a", "response_b")
                .get(uuid=payload["comparison"])
            )
            instance = comparison.instance
            images = [
                {"url": ii.image.display_url, "caption": ii.caption}
                for ii in instance.instance_images.select_related("image")
            ]
            return {
                "instruction": instance.instruction,
                "images": images,
                "response_a": comparison.response_a.text,
                "response_b": comparison.response_b.text,
            }
        return {
            "instruction": payload["instruction"],
            "images": [{"url": u, "caption": ""} for u in payload.get("image_urls", [])],
            "response_a": payload["response_a"],
            "response_b": payload["response_b"],
        }

    def on_submitted(self, assignment) -> None:
        """Record the vote as a judgment of its comparison — once, tied to the assignment."""
        uuid = assignment.task.payload.get("comparison")
        if not uuid:
            return
        comparison = Comparison.objects.get(uuid=uuid)
        Judgment.objects.create(
            comparison=comparison, source="human", annotator=str(assignment.worker),
            worker=assignment.worker, assignment=assignment, choice=assignment.answer["choice"],
            created_at=assignment.submitted_at or timezone.now(),
        )

