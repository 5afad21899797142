"""Benchmark content: instruction families, images, instances (single, multi-image and
conversations) and score rubrics. Filled by the importers and the dataset-building HITs."""
import uuid

from django.db import models
from django.db.models import Q

from studies.models import default_study_id


class Image(models.Model):
    class FetchStatus(models.TextChoices):
        PENDING = "pending"
        OK = "ok"
        FAILED = "failed"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    source_url = models.URLField(max_length=1000, blank=True)
    file = models.ImageField(upload_to="images/", blank=True)
    thumbnail = models.ImageField(upload_to="thumbs/", blank=True)
    sha256 = models.CharField(max_length=64, null=True, blank=True, unique=True)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    format = models.CharField(max_length=10, blank=True)
    license = models.CharField(max_length=200, blank=True)
    attribution = models.CharField(max_length=500, blank=True)
    external_id = models.CharField(max_length=200, blank=True, db_index=True)
    fetch_status = models.CharField(
        max_length=10, choices=FetchStatus.choices, default=FetchStatus.PENDING
    )
    fetch_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Pages put this URL in <img src>: never javascript:, data: or a path, whatever
            # wrote the row (importers check first, to name the bad row).
            models.CheckConstraint(
                condition=Q(source_url="") | Q(source_url__istartswith="http://")
                | Q(source_url__istartswith="https://"),
                name="image_url_http",
            ),
        ]

    def __str__(self) -> str:
        return self.source_url or self.external_id or str(self.uuid)

    @property
    def display_url(self) -> str:
        """Stored copy when we have one, else the source URL (fetched lazily, maybe offline)."""
        if self.file:
            return self.file.url
        return self.source_url


class InstructionFamily(models.Model):
    class Origin(models.TextChoices):
        NEW = "new", "New"
        REFORMATTED = "reformatted", "Re-formatted existing dataset"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100, unique=True)
    skill = models.CharField(max_length=200, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.NEW)
    multi_image = models.BooleanField(default=False)
    seed_instruction = models.TextField(blank=True)
    seed_output = models.TextField(blank=True)
    seed_images = models.ManyToManyField(Image, blank=True, related_name="+")

    class Meta:
        verbose_name_plural = "instruction families"

    def __str__(self) -> str:
        return self.name


class Instance(models.Model):
    class ReferenceStatus(models.TextChoices):
        PENDING = "pending"
        VERIFIED = "verified"
        REJECTED = "rejected"

    class RejectionReason(models.TextChoices):
        NONE = "", "—"
        CAPTION = "caption_underspecified", "Caption underspecified"
        RESPONSE = "response_wrong", "Response wrong"

    class Stage(models.TextChoices):
        CAPTIONING = "captioning"
        REFERENCE = "reference"
        VERIFICATION = "verification"
        DONE = "done"

    class Kind(models.TextChoices):
        SINGLE = "single"
        MULTI = "multi"
        CONVERSATION = "conversation"

    class RatedBy(models.TextChoices):
        """Who judged the LLM's candidate reference (VisIT-Bench Table 2 counts only these)."""

        NOBODY = "", "Nobody (human-written or unrated reference)"
        IMPORTED = "imported", "Ratings imported with the data"
        CROWD = "crowd", "Verification HITs"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="instances")
    family = models.ForeignKey(
        InstructionFamily, null=True, blank=True, on_delete=models.PROTECT, related_name="instances"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SINGLE)
    instruction = models.TextField()
    reference_output = models.TextField(
        blank=True, help_text="The benchmark's reference: the human-verified LLM answer or a "
        "human-written one; empty when the LLM answer was rejected")
    source_label = models.TextField(
        blank=True, help_text="The source dataset's own label (VisIT-Bench's reference_output "
        "column, e.g. 'Yes' or 'Image 2'); kept for export, never scored against")
    candidate_reference = models.TextField(
        blank=True, help_text="The LLM's candidate reference, before human verification"
    )
    reference_meta = models.JSONField(
        default=dict, blank=True, help_text="LLM model, prompt version, tokens, cost"
    )
    reference_status = models.CharField(
        max_length=10, choices=ReferenceStatus.choices, default=ReferenceStatus.PENDING
    )
    rejection_reason = models.CharField(
        max_length=32, choices=RejectionReason.choices, blank=True, default=""
    )
    reference_rated_by = models.CharField(
        max_length=10, choices=RatedBy.choices, blank=True, default=RatedBy.NOBODY)
    flagged_harmful = models.BooleanField(default=False)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.CAPTIONING)
    source = models.CharField(max_length=32, blank=True, help_text="visitbench, convbench, …")
    external_id = models.CharField(max_length=200, blank=True, db_index=True)
    extra = models.JSONField(
        default=dict, blank=True, help_text="Source-format fields kept for export (layout, …)"
    )
    stage_task = models.ForeignKey(
        "annotation.Task", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The crowd task currently working on this instance's stage",
    )
    images = models.ManyToManyField(Image, through="InstanceImage", related_name="instances")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # An item's id is its identity within its source and study: two rows of one file
            # (or two imports into one study) naming the same id are the same item, never two;
            # two studies may each hold the same dataset.
            models.UniqueConstraint(fields=["study", "source", "external_id"],
                                    condition=~Q(external_id=""),
                                    name="external_id_per_source_per_study"),
        ]

    def __str__(self) -> str:
        return self.instruction[:60]


class InstanceImage(models.Model):
    """An instance's image in its order, with the caption written for that instruction."""

    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="instance_images")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    caption = models.TextField(blank=True, max_length=2000)
    blip2_caption = models.TextField(blank=True, help_text="Model caption (VisIT-Bench multi file)")

    class Meta:
        ordering = ["instance", "position"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "position"], name="image_position_unique"),
            models.CheckConstraint(condition=Q(position__lt=10), name="at_most_ten_images"),
        ]

    def __str__(self) -> str:
        return f"image {self.position + 1} of {self.instance_id}"


class ConversationTurn(models.Model):
    class Capability(models.TextChoices):
        PERCEPTION = "perception"
        REASONING = "reasoning"
        CREATION = "creation"

    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="turns")
    turn = models.PositiveSmallIntegerField()
    capability = models.CharField(max_length=16, choices=Capability.choices)
    category = models.CharField(max_length=200, blank=True)
    instruction = models.TextField()
    reference_answer = models.TextField(blank=True)
    focus_points = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["instance", "turn"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "turn"], name="turn_unique"),
            models.CheckConstraint(condition=Q(turn__gte=1, turn__lte=3), name="turn_1_to_3"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn} ({self.capability})"


class ScoreRubric(models.Model):
    """Prometheus-Vision style rubric: a criterion and what each score 1–5 means."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    instance = models.ForeignKey(
        Instance, null=True, blank=True, on_delete=models.CASCADE, related_name="rubrics"
    )
    criteria = models.TextField()
    score1 = models.TextField()
    score2 = models.TextField()
    score3 = models.TextField()
    score4 = models.TextField()
    score5 = models.TextField()
    reference_answer = models.TextField(blank=True, help_text="An answer that earns a 5")

    def __str__(self) -> str:
        return self.criteria[:60]

    def levels(self) -> list[tuple[int, str]]:
        return [(i, getattr(self, f"score{i}")) for i in range(1, 6)]
