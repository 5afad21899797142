"""The per-submission cap (issue #26, item 4): ``SUBMISSION_BUDGET_CAP`` becomes a judge run's
budget, so a value no run could take (NaN, infinite, negative, above ``MAX_JUDGE_BUDGET_USD``,
finer than the column's 6 places) closes submissions with a message naming it and writes
nothing; before, NaN raised a bare ``decimal.InvalidOperation`` from the cost comparison."""
import itertools
from decimal import Decimal

import pytest
from hypothesis import given

from judging.judges.models import JudgeRun
from judging.submissions.services import SubmissionRefused, submission_create
from tests.judging.submissions.test_submissions import (  # noqa: F401  (bench is a fixture)
    _counts,
    _jsonl,
    _submitter,
    bench,
)
from tests.support.amounts import ANY_AMOUNT, PROPERTY, as_number, check_refusal

pytestmark = pytest.mark.django_db
_n = itertools.count(1)


class TestSubmissionCap:
    @pytest.mark.parametrize("cap", [float("nan"), float("inf"), -1.0, 1e9, 1e-7])
    def test_an_unusable_cap_closes_submissions_naming_the_setting(
            self, bench, settings, cap):  # noqa: F811  (the fixture imported above)
        settings.SUBMISSION_BUDGET_CAP = cap
        before = _counts()
        with pytest.raises(SubmissionRefused) as refused:
            submission_create(submitter=_submitter(), name="Capped", file_name="p.jsonl",
                              data=_jsonl(bench["instances"][:2]))
        check_refusal(refused.value, "SUBMISSION_BUDGET_CAP")
        assert _counts() == before

    @PROPERTY
    @given(cap=ANY_AMOUNT)
    def test_any_cap_is_refused_cleanly_or_becomes_the_runs_budget(
            self, bench, settings, cap):  # noqa: F811
        settings.SUBMISSION_BUDGET_CAP = cap
        # every accepted example queues a run no worker takes: the job caps are not the subject
        settings.JOBS_MAX_PER_USER = settings.JOBS_MAX_GLOBAL = 10_000
        n = next(_n)
        user = _submitter(f"s{n}")
        before = _counts()
        try:
            submission = submission_create(submitter=user, name=f"Capped{n}",
                                           file_name="p.jsonl",
                                           data=_jsonl(bench["instances"][:1]))
        except SubmissionRefused as exc:
            assert _counts() == before
            if "over this study's cap" not in exc.messages[0]:
                check_refusal(exc, "SUBMISSION_BUDGET_CAP")
            return
        run = JudgeRun.objects.get(pk=submission.run_id)
        assert run.budget == as_number(cap) <= Decimal("10000")
