"""The studies migrations put every existing row into the default study with nothing lost: the
board read from the rows before the migration equals the default study's board after it."""
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from judging import ratings
from judging.leaderboards import leaderboard_build
from studies.models import default_study_forget
from tests.support.migrations import migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0015_prolific_audience_hooks"), ("judging", "0012_judgment_rejected"),
          ("agreement", "0003_report_progress"), ("studies", "0001_initial")]
AFTER = [("annotation", "0016_study"), ("judging", "0017_judgment_study"), ("agreement", "0004_study")]
VOTES = {("llava", "reference"): ["A", "A", "B", "A", "B"],
         ("blip", "reference"): ["B", "B", "B", "A", "tie"],
         ("llava", "blip"): ["A", "A", "A", "B", "B"]}


def _old_rows(apps):
    """What existed before studies: models (one the reference), comparisons, human votes, a
    batch, a judge run, a report and a metric run."""
    EvalModel = apps.get_model("judging", "EvalModel")
    Instance = apps.get_model("annotation", "Instance")
    Response = apps.get_model("judging", "Response")
    Comparison = apps.get_model("judging", "Comparison")
    Judgment = apps.get_model("judging", "Judgment")
    models = {n: EvalModel.objects.create(name=n, is_reference=n == "reference")
              for n in ("llava", "blip", "reference")}
    now = timezone.now()
    for (a, b), votes in VOTES.items():
        inst = Instance.objects.create(instruction=f"{a} or {b}?", stage="done")
        comparison = Comparison.objects.create(
            instance=inst, response_a=Response.objects.create(instance=inst, model=models[a]),
            response_b=Response.objects.create(instance=inst, model=models[b]))
        for k, choice in enumerate(votes):
            Judgment.objects.create(source="human", annotator=f"w{k}", kind="pairwise",
                                    comparison=comparison, choice=choice,
                                    created_at=now + timedelta(seconds=len(votes) * k))
    apps.get_model("annotation", "Batch").objects.create(hit_type="pairwise_ab", title="old")
    judge = apps.get_model("judging", "Judge").objects.create(name="old-judge", kind="pairwise")
    apps.get_model("judging", "JudgeRun").objects.create(judge=judge, scope="comparisons",
                                                        created_at=now)
    apps.get_model("agreement", "Report").objects.create(title="old report", created_at=now)
    apps.get_model("agreement", "MetricRun").objects.create(created_at=now)
    apps.get_model("annotation", "WebhookEndpoint").objects.create(
        name="old hook", url="https://example.org/hook", secret_env="HOOK_SECRET")
    rows = Judgment.objects.order_by("created_at", "pk").values_list(
        "comparison__response_a__model__name", "comparison__response_b__model__name",
        "choice", "created_at")
    return ratings.leaderboard(ratings.encode(list(rows)), reference="reference",
                               bootstrap_rounds=30, seed=0)


def test_every_row_joins_the_default_study_and_the_board_is_unchanged(back_to_latest):
    before = _old_rows(migrate_to(BEFORE))

    apps = migrate_to(AFTER)
    default = apps.get_model("studies", "Study").objects.get(slug=settings.DEFAULT_STUDY_SLUG)
    for app, model in [("annotation", "Instance"), ("annotation", "Batch"),
                       ("annotation", "WebhookEndpoint"), ("judging", "EvalModel"),
                       ("judging", "JudgeRun"), ("agreement", "Report"),
                       ("agreement", "MetricRun")]:
        rows = apps.get_model(app, model).objects
        assert rows.count() > 0 and rows.filter(study=default).count() == rows.count(), model
    assert apps.get_model("judging", "EvalModel").objects.get(is_reference=True).name == \
        "reference"

    default_study_forget()  # the process may remember another database's default study
    after = leaderboard_build("human", bootstrap_rounds=30, seed=0)
    assert [(r.model, r.bt_rating, r.ci_low, r.ci_high, r.elo, r.matches,
             r.win_rate_vs_reference) for r in before] == \
        [(r["model"], r["rating"], r["ci_low"], r["ci_high"], r["elo"], r["matches"],
          r["win_rate_vs_reference"]) for r in after.rows]
