"""The three dataset-building HIT types of VisIT-Bench (appendix C, figs. 11–14).

* ``instruction_generation`` — from a family's seed example, a worker gives a publicly licensed
  image URL, its licence and a new instruction. The URL is fetched server-side through the
  SSRF-safe fetcher before the answer is accepted; the stored image (sha256-deduplicated) is
  referenced from the answer.
* ``instruction_caption`` — one dense, instruction-conditioned caption per image.
* ``reference_verification`` — does the LLM's candidate follow the instruction? On No, why.

Each hook hands over to one pipeline service (inside the submit transaction).
"""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.utils.translation import gettext_noop  # titles, keys: translated on the page

from annotation.content.imports.images import image_fetch_and_store
from annotation.content.shown import instance_images
from annotation.core.image_fetch import ImageFetchError
from annotation.engine.hit_types import HitType, register
from annotation.models import Instance, InstanceImage, InstructionFamily
from annotation.pipeline import services as pipeline
from annotation.pipeline import tasks as _tasks  # noqa: F401  registers the pipeline's Celery tasks

MAX_INSTRUCTION = 200
MAX_CAPTION = 2000

# Example rows (the upload page's sample files) name the demo's family and stand-in instance
# ids: an admin replaces the ids with their own instances' (Content › Instances).
EXAMPLE_FAMILY = "Demo pipeline: colour and counting"
EXAMPLE_INSTANCES = ("00000000-0000-4000-8000-00000000e001",
                     "00000000-0000-4000-8000-00000000e002")

_FETCH_MESSAGES = {
    "scheme": "Use a direct http(s) link to the image.",
    "blocked_address": "That address is on a private or local network; use a public image URL.",
    "dns": "That web address does not exist (the host name could not be found).",
    "timeout": "The image took too long to download; try another link.",
    "too_large": "The image is too large (over the size limit); choose a smaller one.",
    "not_image": "That link does not lead to an image file (use the direct image link).",
    "bomb": "The image has too many pixels; choose a smaller one.",
    "http_status": "The image could not be downloaded from that link.",
    "unreachable": "The image's server could not be reached.",
}


def _instances_shown(tasks) -> dict[str, Instance]:
    """The tasks' instances (by uuid) with their images, in two queries for any number."""
    uuids = {t.payload.get("instance") for t in tasks} - {None}
    return {str(i.uuid): i for i in Instance.objects.filter(uuid__in=uuids).prefetch_related(
        Prefetch("instance_images", InstanceImage.objects.select_related("image")))}


class InstanceInputs:
    """A type whose task shows one instance: its results carry the instruction and images
    (and ``shown`` adds what else the page showed)."""

    export_columns = {"instance": "text", "instruction": "text", "image_urls": "text"}

    def shown(self, instance: Instance) -> dict:
        return {}

    def export_inputs(self, tasks):
        found = _instances_shown(tasks)
        out = {}
        for task in tasks:
            instance = found.get(task.payload.get("instance") or "")
            out[task.pk] = {"instance": task.payload.get("instance")} if instance is None else {
                "instance": str(instance.uuid), "instruction": instance.instruction,
                "image_urls": [ii.image.display_url for ii in instance.instance_images.all()],
                **self.shown(instance)}
        return out


class FamilyPayloadForm(forms.Form):
    family = forms.CharField(max_length=100, help_text="Instruction family: uuid or name")

    def clean_family(self):
        value = self.cleaned_data["family"].strip()
        family = InstructionFamily.objects.filter(name=value).first()
        if family is None:
            try:
                family = InstructionFamily.objects.filter(uuid=value).first()
            except ValidationError:
                family = None
        if family is None:
            raise ValidationError(f"no instruction family {value!r}")
        return str(family.uuid)


class InstancePayloadForm(forms.Form):
    instance = forms.UUIDField()

    def clean_instance(self):
        value = self.cleaned_data["instance"]
        if not Instance.objects.filter(uuid=value).exists():
            raise ValidationError("no such instance")
        return str(value)


class InstructionAnswerForm(forms.Form):
    image_url = forms.URLField(max_length=MAX_INSTRUCTION, assume_scheme="https",
                               label="Image URL")
    license = forms.CharField(max_length=MAX_INSTRUCTION, strip=True,
                              label="Licence of the image")
    instruction = forms.CharField(max_length=MAX_INSTRUCTION, strip=True,
                                  label="Your instruction")


@register
class InstructionGenerationHit(HitType):
    slug = pipeline.HIT_INSTRUCTION
    version = "1"
    expected_seconds = 240
    title = gettext_noop("Write a new instruction for an image")
    template = "annotation/hits/instruction_generation.html"
    payload_form = FamilyPayloadForm
    answer_form = InstructionAnswerForm
    example_rows = [{"family": EXAMPLE_FAMILY}, {"family": EXAMPLE_FAMILY}]
    free_text_fields = ("instruction",)
    export_columns = {"family": "text", "seed_instruction": "text", "seed_image_urls": "text"}

    def export_inputs(self, tasks):
        """The family's name, seed instruction and seed images: what the page shows."""
        families = {str(f.uuid): f for f in InstructionFamily.objects.filter(
            uuid__in={t.payload.get("family") for t in tasks} - {None}).prefetch_related(
            "seed_images")}
        out = {}
        for task in tasks:
            family = families.get(task.payload.get("family") or "")
            out[task.pk] = {"family": task.payload.get("family")} if family is None else {
                "family": family.name, "seed_instruction": family.seed_instruction,
                "seed_image_urls": [i.display_url for i in
                                    sorted(family.seed_images.all(), key=lambda i: i.pk)]}
        return out

    def similar_texts(self, task):
        """The family's seed instruction, shown on the page as the example to vary."""
        family = InstructionFamily.objects.filter(uuid=task.payload.get("family")).first()
        return [family.seed_instruction] if family and family.seed_instruction else []

    def clean_answer(self, data, *, task):
        answer = super().clean_answer(data, task=task)
        try:
            image = image_fetch_and_store(answer["image_url"], license=answer["license"])
        except ImageFetchError as exc:
            raise ValidationError(
                f"Image URL: {_FETCH_MESSAGES.get(exc.reason_code, 'The image cannot be used.')}"
            ) from exc
        return {**answer, "image": str(image.uuid), "sha256": image.sha256}

    def page_context(self, task):
        family = InstructionFamily.objects.get(uuid=task.payload["family"])
        return {"family": family,
                "seed_images": [i.display_url for i in family.seed_images.order_by("pk")],
                "max_chars": MAX_INSTRUCTION}

    def on_submitted(self, assignment) -> None:
        pipeline.instance_create_from_instruction(assignment=assignment)


@register
class InstructionCaptionHit(InstanceInputs, HitType):
    slug = pipeline.HIT_CAPTION
    version = "1"
    expected_seconds = 180
    title = gettext_noop("Describe the image(s) for this instruction")
    template = "annotation/hits/instruction_caption.html"
    payload_form = InstancePayloadForm
    example_rows = [{"instance": uuid} for uuid in EXAMPLE_INSTANCES]
    free_text_fields = ("captions",)

    def similar_texts(self, task):
        """The instance's LLM candidate reference and its reference (a caption must describe
        the image, not restate an answer)."""
        instance = Instance.objects.filter(uuid=task.payload.get("instance")).first()
        return [t for t in (instance.candidate_reference, instance.reference_output) if t] \
            if instance else []

    class answer_form(forms.Form):  # noqa: N801  (the registry's attribute name)
        """Placeholder; the real form has one field per image (see ``clean_answer``)."""

    def clean_answer(self, data, *, task):
        instance = Instance.objects.get(uuid=task.payload["instance"])
        n = instance.instance_images.count()
        fields = {f"caption_{i}": forms.CharField(max_length=MAX_CAPTION, strip=True,
                                                  label=f"Caption of image {i}")
                  for i in range(1, n + 1)}
        form = type("CaptionForm", (forms.Form,), fields)(data=data)
        if not form.is_valid():
            raise ValidationError([f"{form.fields[k].label}: {'; '.join(v)}"
                                   for k, v in form.errors.items()])
        return {"captions": [form.cleaned_data[f"caption_{i}"] for i in range(1, n + 1)]}

    def page_context(self, task):
        instance = Instance.objects.select_related("family").get(uuid=task.payload["instance"])
        return {"instance": instance, "images": instance_images(instance), "max_chars": MAX_CAPTION}

    def on_submitted(self, assignment) -> None:
        pipeline.captions_record(assignment=assignment)


class VerificationAnswerForm(forms.Form):
    correct = forms.ChoiceField(choices=[("yes", "Yes"), ("no", "No")],
                                label="Does the response follow the instruction")
    reason = forms.ChoiceField(required=False, label="Why not", choices=[
        ("", "—"),
        (Instance.RejectionReason.RESPONSE, "The caption is detailed enough; the problem is the "
                                            "response"),
        (Instance.RejectionReason.CAPTION, "The caption is underspecified; not the response's "
                                           "fault"),
    ])
    harmful = forms.BooleanField(required=False, label="Might be offensive or problematic")

    def clean(self):
        data = super().clean()
        if data.get("correct") == "no" and not data.get("reason"):
            raise ValidationError("Why not: when the answer is No, say whether the caption or "
                                  "the response is the problem")
        if data.get("correct") == "yes":
            data["reason"] = ""
        return data


@register
class ReferenceVerificationHit(InstanceInputs, HitType):
    slug = pipeline.HIT_VERIFICATION
    version = "1"
    expected_seconds = 60
    title = gettext_noop("Does the response follow the instruction?")
    template = "annotation/hits/reference_verification.html"
    payload_form = InstancePayloadForm
    answer_form = VerificationAnswerForm
    example_rows = [{"instance": EXAMPLE_INSTANCES[0]},
                    {"instance": EXAMPLE_INSTANCES[1], "_gold_answer": {"correct": "yes"}}]
    shortcuts = [
        ("Y", gettext_noop("yes")),
        ("N", gettext_noop("no")),
        ("1 / 2", gettext_noop("choose the reason")),
        ("Enter", gettext_noop("submit")),
    ]
    export_columns = {**InstanceInputs.export_columns, "candidate": "text"}

    def shown(self, instance):
        return {"candidate": instance.candidate_reference}

    def page_context(self, task):
        instance = Instance.objects.select_related("family").get(uuid=task.payload["instance"])
        return {"instance": instance, "images": instance_images(instance),
                "candidate": instance.candidate_reference}

    def clean_gold(self, gold):
        if not isinstance(gold, dict) or gold.get("correct") not in ("yes", "no"):
            raise ValidationError('_gold_answer must be {"correct": "yes"} or {"correct": "no"}')
        return gold

    def is_correct(self, answer, gold) -> bool:
        return answer.get("correct") == (gold or {}).get("correct")

    def on_submitted(self, assignment) -> None:
        pipeline.verification_record(assignment=assignment)
