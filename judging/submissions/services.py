"""A new model joins the benchmark without an e-mail: one service per operation.

A submission belongs to one study (None: the default study): its model is created there, its
rows match only that study's items, it is judged against that study's reference with the
study's judge, budget cap and daily quota (each empty one falls back to the setting of the same
name: ``SUBMISSION_JUDGE``, ``SUBMISSION_BUDGET_CAP``, ``SUBMISSIONS_PER_DAY``). A model line
belongs to its submitter within a study; the same name in another study is another line.

``submission_create`` checks everything before writing (the study's judge, file size, the
submitter's daily quota and one-in-flight rule, one prediction per row, the name), then in one
transaction registers the model's new version, stores its responses, pairs each with the
human-verified reference on the same instance (sides randomised), prices the judge run and
refuses it above the cap, and queues the run once everything has committed. A refusal writes
nothing and says why.

The judge compares against the reference, as VisIT-Bench's automatic evaluation does; the
optional human batch (appendix F: the new model against a randomly chosen existing model on
every instance) waits for an admin's approval because it costs crowd money.
"""
from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from annotation.core.db_text import storage_problem
from annotation.core.money import MoneyField
from annotation.engine.services.batches import RowError, rows_from_upload
from studies.models import Study, study_pk

from .. import rating_cache
from ..judges.models import Judge, JudgeRun
from ..judges.services import judge_estimate, judge_run_cancel, judge_run_start
from ..models import Comparison, EvalModel, Judgment, Response
from ..services.comparisons import comparison_batch_create, comparison_new
from ..services.errors import ImportRejected
from ..services.responses import REFERENCE_ALIASES, SUFFIX, predictions_import_rows
from .models import IN_FLIGHT, Submission

SAMPLING = "submission"
HUMAN_SAMPLING = "submission-human"


class SubmissionRefused(ValidationError):
    """The submission was not taken; the message says why. Nothing was written."""


def submission_study(study=None) -> Study:
    """The study a submission goes to: a Study, an id, or None (the default study)."""
    return study if isinstance(study, Study) else Study.objects.get(pk=study_pk(study))


def submission_judge(study=None) -> Judge:
    """The study's judge for submissions (its ``submission_judge``, else ``SUBMISSION_JUDGE``:
    a judge name; its newest version is used)."""
    name = submission_study(study).effective_submission_judge()
    judge = Judge.objects.filter(name=name).order_by("-pk").first() if name else None
    if judge is None:
        raise SubmissionRefused("Submissions are closed: no judge is configured for them "
                                "(the study's submission judge, or SUBMISSION_JUDGE).")
    if not judge.spec.judges_submissions:
        raise SubmissionRefused(f"Submissions are closed: judge {name!r} is not a single-turn "
                                "pairwise judge.")
    return judge


def _check_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not 1 <= len(name) <= 80:
        raise SubmissionRefused("Give the model a name of 1–80 characters.")
    if storage_problem(name) or not name.isprintable():
        raise SubmissionRefused("The model name has characters that cannot be stored.")
    if name in REFERENCE_ALIASES or Judgment.is_human_name(name):
        raise SubmissionRefused(f"{name!r} is reserved.")
    return name


def _line_models(name: str, study: Study) -> list[EvalModel]:
    """The study's models of the line ``name`` in any letter case, oldest first: the submitted
    versions, and a model an admin added under the bare name or as ``<name> v<k>``."""
    near = (EvalModel.objects.in_study(study).filter(Q(submission__name__iexact=name) | Q(name__iexact=name)
                                     | Q(name__istartswith=f"{name} v"))
            .select_related("submission").order_by("pk"))
    return [m for m in near if hasattr(m, "submission") or m.name.casefold() == name.casefold()
            or m.name[len(name) + 2:].isdigit()]


def _check_line_owner(name: str, submitter, study: Study) -> tuple[str, object]:
    """A model line belongs to whoever started it (its oldest model's owner); only they or an
    admin may add a version. A line without an owner (an admin added it, or its owner's
    account is gone) only an admin may extend. Returns the line's spelling and owner; the
    refusal never names the owner."""
    line = _line_models(name, study)
    if not line:
        return name, submitter
    first = line[0]
    spelling = first.submission.name if hasattr(first, "submission") else name
    if submitter.is_staff or (first.owner_id is not None and first.owner_id == submitter.pk):
        return spelling, first.owner
    if first.owner_id is None:
        raise SubmissionRefused(f"A model named {name!r} is held by the site's admins; only an "
                                "admin may add a version to it. Choose another name.")
    raise SubmissionRefused(f"A model named {name!r} belongs to another submitter; "
                            "choose another name.")


def _check_quota(submitter, study: Study) -> None:
    if Submission.objects.filter(submitter=submitter, status__in=IN_FLIGHT).exists():
        raise SubmissionRefused("You already have a submission being judged; wait for it to "
                                "finish (or ask an admin to withdraw it).")
    since = timezone.now() - timedelta(days=1)
    recent = Submission.objects.filter(submitter=submitter, study=study,
                                       created_at__gte=since).count()
    per_day = study.effective_submissions_per_day()
    if recent >= per_day:
        raise SubmissionRefused(f"At most {per_day} submissions per day; try again tomorrow.")


def _one_prediction_rows(rows: list[dict], model_name: str) -> list[dict]:
    """Each row's single prediction, renamed to the submission's model version."""
    out = []
    for number, row in enumerate(rows, start=1):
        named = [k for k in row if isinstance(k, str) and k.endswith(SUFFIX) and k != "prediction"]
        if "prediction" in row and not named:
            text = row["prediction"]
        elif len(named) == 1 and "prediction" not in row:
            text = row[named[0]]
        else:
            raise SubmissionRefused(
                f"Row {number}: give exactly one prediction (a 'prediction' key, or one "
                f"'<model> prediction' column); found {len(named) + ('prediction' in row)}.")
        kept = {k: v for k, v in row.items() if k not in named and k not in ("model", "prediction")}
        out.append({**kept, "model": model_name, "prediction": text})
    return out


def _pair_with_reference(responses: list[Response], rnd: random.Random,
                         study: Study) -> list[Comparison]:
    reference = EvalModel.objects.in_study(study).filter(is_reference=True).first()
    if reference is None:
        return []
    refs = {r.instance_id: r for r in Response.objects.filter(
        model=reference, turn=0, instance_id__in=[r.instance_id for r in responses])}
    comparisons = [comparison_new(r.instance_id, r, refs[r.instance_id], rnd, SAMPLING)
                   for r in responses if r.turn == 0 and r.instance_id in refs]
    return Comparison.objects.bulk_create(comparisons)


SUBMISSION_CAP = MoneyField.of_column(JudgeRun, "budget", "per-submission cap (SUBMISSION_BUDGET_CAP)",
                                     limit_setting="MAX_JUDGE_BUDGET_USD")


def submission_cap(study=None) -> Decimal:
    """The study's cap (else ``SUBMISSION_BUDGET_CAP``) as the run budget it becomes; a value
    no run could take (NaN, above ``MAX_JUDGE_BUDGET_USD``) closes submissions with that
    reason."""
    try:
        return SUBMISSION_CAP.parse(submission_study(study).effective_submission_budget_cap())
    except ValidationError as exc:
        raise SubmissionRefused(f"Submissions are closed: {exc.messages[0]}") from exc


def submission_create(*, submitter, name: str, file_name: str, data: bytes,
                      human_eval: bool = False, study=None) -> Submission:
    """Take a predictions file (VisIT-Bench submission CSV or JSONL) for a new model version
    in ``study`` (None: the default study) and queue its automatic judge run; raises
    ``SubmissionRefused`` (nothing written)."""
    study = submission_study(study)
    judge = submission_judge(study)
    cap = submission_cap(study)
    name, owner = _check_line_owner(_check_name(name), submitter, study)
    if len(data) > settings.SUBMISSION_MAX_BYTES:
        raise SubmissionRefused(f"The file is larger than {settings.SUBMISSION_MAX_BYTES:,} bytes.")
    _check_quota(submitter, study)
    try:
        rows = rows_from_upload(file_name, data)
    except RowError as exc:
        raise SubmissionRefused("; ".join(exc.messages)) from exc
    if len(rows) > settings.SUBMISSION_MAX_ROWS:
        raise SubmissionRefused(f"At most {settings.SUBMISSION_MAX_ROWS:,} rows per submission.")
    try:
        with transaction.atomic():
            return _create(study, judge, submitter, owner, name, file_name, rows, human_eval,
                           cap)
    except ImportRejected as exc:
        raise SubmissionRefused(str(exc)) from exc
    except IntegrityError as exc:  # a concurrent submission of this user, or of this version
        raise SubmissionRefused("Another submission was taken at the same moment; "
                                "wait for it to finish.") from exc


def _create(study, judge, submitter, owner, name, file_name, rows, human_eval, cap) -> Submission:
    # Two submissions of one name at once: the (study, name, version) constraint refuses the
    # second.
    version = (Submission.objects.filter(study=study, name=name)
               .aggregate(v=Max("version"))["v"] or 0) + 1
    model_name = f"{name} v{version}"
    if EvalModel.objects.in_study(study).filter(name=model_name).exists():
        raise SubmissionRefused(f"A model named {model_name!r} already exists; choose another name.")
    # The line's owner, also when an admin adds the version; who submitted is the Submission's.
    model = EvalModel.objects.create(name=model_name, version=str(version), owner=owner,
                                     notes="Public submission", study=study)
    report = predictions_import_rows(_one_prediction_rows(rows, model_name), skip_unmatched=True,
                                     study=study)
    if not report.responses:
        raise SubmissionRefused("No row matched an instance of the benchmark: "
                                + "; ".join(report.unmatched[:5]))
    rnd = random.Random(f"{model_name}:{len(rows)}")
    comparisons = _pair_with_reference(report.responses, rnd, study)
    if not comparisons:
        raise SubmissionRefused("None of the matched instances has a verified reference to "
                                "judge against.")
    items = [c.uuid for c in comparisons]
    estimate = judge_estimate(judge=judge, item_uuids=items, study=study)
    if estimate.cost > cap:
        raise SubmissionRefused(f"Judging this submission would cost about ${estimate.cost:.2f}, "
                                f"over this study's cap of ${cap:.2f} per submission.")
    submission = Submission.objects.create(
        study=study, submitter=submitter, name=name, version=version,
        model=model, file_name=file_name[-200:],
        rows=len(rows), responses=len(report.responses), unmatched=report.unmatched[:500],
        estimated_cost=estimate.cost, human_eval_requested=human_eval)
    submission.run = judge_run_start(judge=judge, item_uuids=items, budget=cap,
                                     created_by=f"submission {submission.uuid}",
                                     estimate=estimate, study=study)
    submission.save(update_fields=["run"])
    return submission


def submission_run_finished(run: JudgeRun) -> None:
    """Called when a judge run finishes: its submission (if any) is on the boards now —
    also one whose run an admin resumed after it had stopped."""
    Submission.objects.filter(
        run=run, status__in=[Submission.Status.JUDGING, Submission.Status.FAILED]).update(
        status=Submission.Status.DONE, error="", finished_at=timezone.now())


def submission_run_stopped(run: JudgeRun, why: str) -> None:
    """Called when a run stops before finishing (budget, cancelled): its submission failed,
    which also frees the submitter's one place in flight."""
    Submission.objects.filter(run=run, status=Submission.Status.JUDGING).update(
        status=Submission.Status.FAILED, error=f"Judging stopped: {why}.",
        finished_at=timezone.now())


def submission_withdraw(submission: Submission, *, reason: str = "") -> Submission:
    """Take a submission off the leaderboards (its judgments stay stored, nothing is deleted);
    a run still in progress is cancelled."""
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        if locked.status == Submission.Status.WITHDRAWN:
            return locked
        locked.status = Submission.Status.WITHDRAWN
        locked.withdrawn_at = timezone.now()
        locked.withdrawn_reason = reason[:500]
        locked.save(update_fields=["status", "withdrawn_at", "withdrawn_reason"])
        if locked.run and locked.run.status in (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING):
            judge_run_cancel(locked.run)
    # Its judgments leave the boards: no judgment changed, so tell the cache.
    for source in {Judgment.HUMAN, *(locked.run and [locked.run.judge.name] or [])}:
        rating_cache.source_changed(source)
    return locked


def submission_human_batch_create(submission: Submission, *, seed: int = 0):
    """The approved human evaluation: on every instance the new model answered, a comparison
    with a randomly chosen existing model (not the reference, not another submission), in a
    draft batch of 5 votes per comparison for the admin to activate."""
    if submission.human_batch_id:
        raise SubmissionRefused("This submission already has its human batch.")
    if submission.status == Submission.Status.WITHDRAWN:
        raise SubmissionRefused("A withdrawn submission gets no human batch.")
    rnd = random.Random(f"{submission.uuid}:{seed}")
    ours = list(Response.objects.filter(model=submission.model, turn=0))
    others: dict[int, list[Response]] = {}
    for r in (Response.objects.filter(instance_id__in=[o.instance_id for o in ours], turn=0)
              .exclude(model=submission.model).exclude(model__is_reference=True)
              .filter(model__submission__isnull=True).order_by("pk")):
        others.setdefault(r.instance_id, []).append(r)
    comparisons = [comparison_new(o.instance_id, o, rnd.choice(others[o.instance_id]), rnd,
                                  HUMAN_SAMPLING) for o in ours if others.get(o.instance_id)]
    if not comparisons:
        raise SubmissionRefused("No existing model answered these instances.")
    with transaction.atomic():
        comparisons = Comparison.objects.bulk_create(comparisons)
        batch = comparison_batch_create(
            comparisons=comparisons, title=f"Human evaluation: {submission.model.name}",
            study=submission.study)
        Submission.objects.filter(pk=submission.pk).update(human_batch=batch)
    submission.refresh_from_db()
    return batch
