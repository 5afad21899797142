"""Competitors, their responses, comparisons shown to judges, and the judgments collected."""
import unicodedata
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Assignment, Instance, Worker
from studies.models import default_study_id, study_pk


class EvalModelQuerySet(models.QuerySet):
    def in_study(self, study=None):
        """The models of ``study`` (None: the default study): a name means one model there."""
        return self.filter(study_id=study_pk(study))


class EvalModel(models.Model):
    """A model under evaluation; the human-verified reference is one too (``is_reference``).
    Names are unique within a study: look one up with ``EvalModel.objects.in_study(…)``."""

    # The family of human-written answers (the reference's): a kind of model for the
    # self-preference analysis, not a judgment source (that is ``Judgment.HUMAN``).
    HUMAN_FAMILY = "human"

    name = models.CharField(max_length=100, help_text="Unique within its study")
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="models")
    version = models.CharField(max_length=100, blank=True)
    family = models.CharField(max_length=100, blank=True, help_text="For self-preference analysis")
    notes = models.TextField(blank=True)
    is_reference = models.BooleanField(default=False)
    # Who may add versions to this model's line (``judging.submissions.services``): the
    # submitter who started it. Empty for models an admin added (imports, demo, the reference),
    # and for lines whose owner was deleted: only an admin may extend those.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="owned_models")

    objects = EvalModelQuerySet.as_manager()

    class Meta:
        verbose_name = "model"
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="model_name_per_study"),
            # Each study has its own reference (the default study's is the one from before).
            models.UniqueConstraint(fields=["study", "is_reference"], condition=Q(is_reference=True),
                                    name="one_reference_model_per_study"),
        ]

    def __str__(self) -> str:
        return self.name


class Response(models.Model):
    class Condition(models.TextChoices):
        GENERATED = "generated"
        PERFECT_PERCEPTION = "perfect_perception"
        PERFECT_PERCEPTION_REASONING = "perfect_perception_reasoning"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="responses")
    model = models.ForeignKey(EvalModel, on_delete=models.CASCADE, related_name="responses")
    turn = models.PositiveSmallIntegerField(default=0, help_text="0 single-turn; 1–3 turns")
    condition = models.CharField(
        max_length=32, choices=Condition.choices, default=Condition.GENERATED
    )
    # Empty is an answer: the model said nothing (public pairwise sets hold such outputs,
    # judged and lost); pages show it as "(empty response)".
    text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "model", "turn", "condition"], name="one_response_per_slot"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} on {self.instance_id}"


class Comparison(models.Model):
    """Two responses to one instance, in the on-screen order chosen at random and recorded."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="comparisons")
    response_a = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    response_b = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    swapped = models.BooleanField(default=False, help_text="Sides swapped by the randomizer")
    sampling = models.CharField(max_length=32, blank=True)
    gold_choice = models.CharField(max_length=1, blank=True, help_text="Known answer (A/B)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(response_a=models.F("response_b")), name="distinct_responses"
            ),
        ]

    def __str__(self) -> str:
        return f"comparison {self.uuid}"


class JudgmentQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        """Rows without a study get their item's (``Judgment.with_studies``)."""
        objs = list(objs)
        Judgment.with_studies(objs)
        return super().bulk_create(objs, *args, **kwargs)


class CountedJudgments(models.Manager.from_queryset(JudgmentQuerySet)):
    """``Judgment.objects``: every judgment except the votes of rejected work. Rejected work is
    kept (``Judgment.with_rejected``, the dataset export marks it) but counts nowhere: every
    reader of votes (boards, reports, review, the API) goes through this manager, so none can
    forget the rule."""

    def get_queryset(self):
        return super().get_queryset().filter(rejected=False)


class Judgment(models.Model):
    """One vote: a human's (through an assignment) or an automatic judge's.

    ``rejected`` is set in the transaction that rejects the vote's assignment and cleared in the
    one that reverses the rejection (``judging.services.judgments.rejection``); an imported
    dataset carries it over. ``objects`` leaves rejected votes out; ``with_rejected`` (also the
    base manager: cascades, backups) keeps them.

    Provenance: ``template_version`` is what produced the verdict: the judge prompt template's
    version (``pairwise_vlm@v1``) for an automatic judge, ``<hit type slug>@<version>`` for a
    vote collected through a rating HIT, empty for imported rows (which record ``import_file``
    and ``imported_at``). ``prompt_hash`` is the rendered prompt's SHA-256 when one prompt
    produced the verdict, else the SHA-256 of all of them (both orderings of a pairwise judge,
    see ``judging.judges.services``). An automatic judge keeps its verdicts of earlier template
    versions; the selectors count only its latest ones (``current_verdicts``).
    """

    HUMAN = "human"  # the ``source`` of every crowd (or imported human) judgment
    # The ``source`` and ``kind`` of an analyst's ruling on a disputed item
    # (``judging.services.adjudication``): a labelled decision, never a vote. Its own kind keeps
    # it out of every reader of votes (they all ask for pairwise, score or feedback rows), and
    # the constraint below keeps the name for it alone.
    ADJUDICATION = "adjudication"

    class Choice(models.TextChoices):
        A = "A"
        B = "B"
        TIE = "tie"
        BOTH_BAD = "bad"  # "both are bad" where a batch offers it (``judging.hit_choices``)

    class Kind(models.TextChoices):
        PAIRWISE = "pairwise"  # choice between the comparison's response A and B
        SCORE = "score"  # rubric / graded score of one response (+ feedback)
        FEEDBACK = "feedback"  # which of two feedbacks on one response is better
        ADJUDICATION = "adjudication"  # an analyst's ruling on a comparison (not a vote)

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    comparison = models.ForeignKey(
        Comparison, null=True, blank=True, on_delete=models.CASCADE, related_name="judgments"
    )
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.CASCADE, related_name="judgments",
        help_text="For rubric / graded judgments of one response",
    )
    source = models.CharField(max_length=100, default=HUMAN, help_text=f"'{HUMAN}' or a judge name")
    annotator = models.CharField(max_length=200, help_text="Worker or judge id")
    worker = models.ForeignKey(Worker, null=True, blank=True, on_delete=models.SET_NULL)
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.CASCADE, related_name="judgments",
        help_text="One judgment per assignment and turn (a multi-turn HIT gives 1–3 + overall)",
    )
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.PAIRWISE)
    choice = models.CharField(max_length=3, choices=Choice.choices, blank=True)
    score = models.FloatField(null=True, blank=True)
    feedback = models.TextField(blank=True)
    turn = models.CharField(max_length=8, blank=True, help_text="'', '1'–'3' or 'overall'")
    meta = models.JSONField(default=dict, blank=True, help_text="e.g. the two feedbacks compared")
    template_version = models.CharField(
        max_length=80, blank=True,
        help_text="Judge prompt template version, or '<HIT type>@<version>' for a crowd vote")
    prompt_hash = models.CharField(max_length=64, blank=True,
                                   help_text="SHA-256 of the prompt(s) behind a judge verdict")
    import_file = models.CharField(max_length=200, blank=True,
                                   help_text="File an imported judgment came from")
    imported_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    rejected = models.BooleanField(
        default=False, help_text="Its assignment was rejected: kept, never counted")
    # The study of the judged item (its comparison's or response's instance), copied here so a
    # study's votes are one index range (``judgment_study_time``) instead of a join through
    # every study's comparisons: a board or report costs what its own study holds. Filled on
    # every write (``save``, ``bulk_create``); an instance never changes study.
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT, related_name="+",
                              db_index=False, editable=False)

    with_rejected = models.Manager.from_queryset(JudgmentQuerySet)()
    objects = CountedJudgments()

    class Meta:
        default_manager_name = "objects"
        base_manager_name = "with_rejected"
        indexes = [# A source's votes in time order with their ids: what ``judging.elo_state``
                   # folds forward (the newer votes) and checks (the older ones' count and id
                   # sum) reads from the index alone.
                   models.Index(fields=["source", "created_at", "id"], name="judgment_source_time"),
                   # The same within one study: a study's state, check and newer votes
                   # (``judging.folded_counts``) and its boards' and reports' reads. With
                   # ``rejected`` beside the key, a study's counted judgments are counted
                   # from the index alone (not by reading every study's rows).
                   models.Index(fields=["study", "source", "created_at", "id"],
                                include=["rejected"], name="judgment_study_time"),
                   # the rating cache's key: a source's newest judgment (judging/rating_cache.py)
                   models.Index(fields=["source", "id"], name="judgment_source_latest"),
                   # A verdict's generations on one item (``selectors.current_verdicts``): the
                   # correlated check is one index descent, whatever the planner's statistics
                   # say (without it a freshly written table was scanned per verdict).
                   models.Index(fields=["comparison", "source", "kind", "turn"],
                                name="judgment_comparison_generation",
                                condition=Q(comparison__isnull=False)),
                   models.Index(fields=["response", "source", "kind", "turn"],
                                name="judgment_response_generation",
                                condition=Q(response__isnull=False))]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "turn"], name="one_judgment_per_assignment_turn"
            ),
            # An adjudication is its own source and nothing else is: no judge's verdict can
            # pass for a ruling, no ruling for a judge's verdict.
            models.CheckConstraint(
                condition=Q(kind="adjudication", source="adjudication")
                | (~Q(kind="adjudication") & ~Q(source="adjudication")),
                name="adjudication_is_its_own_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.annotator} {self.choice or self.score}"

    def save(self, *args, **kwargs):
        if self.study_id is None:
            Judgment.with_studies([self])
        super().save(*args, **kwargs)

    @staticmethod
    def with_studies(judgments: list["Judgment"], chunk: int = 5000) -> None:
        """Give each of ``judgments`` without a study its item's: from the loaded comparison or
        response when its instance is loaded, else one query per ``chunk`` items."""
        items = {"comparison": {}, "response": {}}
        for j in judgments:
            if j.study_id is None:
                field = "comparison" if j.comparison_id is not None else "response"
                item_id = getattr(j, f"{field}_id")
                if item_id is None:
                    continue  # refused by the database (NOT NULL): a judgment judges an item
                item = getattr(j, field) if Judgment._meta.get_field(field).is_cached(j) else None
                if item is not None and type(item).instance.is_cached(item):
                    j.study_id = item.instance.study_id
                else:
                    items[field].setdefault(item_id, []).append(j)
        for model, wanted in ((Comparison, items["comparison"]), (Response, items["response"])):
            ids = list(wanted)
            for start in range(0, len(ids), chunk):
                for pk, study_id in model.objects.filter(pk__in=ids[start:start + chunk]) \
                        .values_list("pk", "instance__study_id"):
                    for j in wanted[pk]:
                        j.study_id = study_id

    @staticmethod
    def _folded(name: str) -> str:
        folded = unicodedata.normalize("NFKC", name).casefold()
        return "".join(c for c in folded if not c.isspace() and unicodedata.category(c) != "Cf")

    @classmethod
    def is_human_name(cls, name: str) -> bool:
        """Whether ``name`` reads as ``HUMAN`` whatever its case, width or spacing ("Human",
        " HUMAN ", "hu man", full-width letters). Only human votes carry that source; an
        automatic judge (or an imported source) so named would be counted as human."""
        return cls._folded(name) == cls.HUMAN

    @classmethod
    def is_reserved_name(cls, name: str) -> bool:
        """Whether ``name`` reads as ``HUMAN`` or ``ADJUDICATION`` (in any spelling, as above):
        neither may name an automatic judge or an imported source."""
        return cls._folded(name) in (cls.HUMAN, cls.ADJUDICATION)
