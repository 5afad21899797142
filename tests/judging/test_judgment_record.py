"""The one writer of judgments (``judging.services.judgments.record``) and the reserved name
"human": no automatic judge, imported source or stored row may spell it another way."""
import csv
import io
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from judging.judges.models import Judge, JudgeRun
from judging.judges.services import judge_estimate, judge_run_resume, judge_run_start
from judging.models import Comparison, Judgment
from judging.services.errors import ImportRejected
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.judgments.record import judgment_record, judgments_record
from tests.judging import builders

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
HUMAN_SPELLINGS = ["Human", "HUMAN", " human ", "hu man", "human\t", "ｈｕｍａｎ", "hu\u200bman"]


def _judge(name: str, **kw) -> Judge:
    """A judge row written without the admin's check (as the ORM, a script or an old row)."""
    fields = {"name": name, "version": "1", "kind": Judge.Kind.PAIRWISE,
              "base_url": "http://127.0.0.1:9/v1", "model_name": "m"} | kw
    return Judge.objects.create(**fields)


def _comparison():
    models = builders.models("m1", "m2")
    inst = builders.instance()
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, models["m1"]),
                                     response_b=builders.respond(inst, models["m2"]))


@pytest.mark.parametrize("name", [Judgment.HUMAN, *HUMAN_SPELLINGS])
def test_every_spelling_of_human_reads_as_human(name):
    assert Judgment.is_human_name(name)


@pytest.mark.parametrize("name", ["humane", "human-eval", "humans", "gpt4-human-prompt", ""])
def test_other_names_do_not(name):
    assert not Judgment.is_human_name(name)


@pytest.mark.parametrize("name", [Judgment.HUMAN, *HUMAN_SPELLINGS])
def test_a_judge_cannot_be_named_human(name):
    judge = Judge(name=name, kind=Judge.Kind.PAIRWISE, base_url="http://x/v1", model_name="m")
    with pytest.raises(ValidationError) as info:
        judge.full_clean()
    assert "reserved for human judgments" in str(info.value.message_dict["name"])


def test_the_admin_refuses_a_judge_named_human(admin_client_):
    data = {"name": "Human", "version": "1", "kind": "pairwise", "base_url": "http://x/v1",
            "model_name": "m", "temperature": "0", "max_tokens": "10", "k": "1",
            "extraction_max_tokens": "8", "price_in_per_1k": "0", "price_out_per_1k": "0",
            "expected_output_tokens": "10", "concurrency": "1", "timeout_s": "5",
            "max_retries": "0", "backoff_base_s": "0.1", "backoff_max_s": "1",
            "template_overrides": "{}"}
    page = admin_client_.post("/admin/judging/judge/add/", data)
    assert page.status_code == 200 and "reserved for human judgments" in page.content.decode()
    assert not Judge.objects.exists()
    data["name"] = "human-eval judge"
    assert admin_client_.post("/admin/judging/judge/add/", data).status_code == 302
    assert Judge.objects.get().name == "human-eval judge"


def test_a_judge_row_named_human_is_never_run_estimated_or_resumed():
    comparison = _comparison()
    judge = _judge(" Human")
    with pytest.raises(ValidationError, match="reserved for human judgments"):
        judge_run_start(judge=judge, item_uuids=[comparison.uuid], dispatch=False)
    with pytest.raises(ValidationError, match="reserved"):
        judge_estimate(judge=judge, item_uuids=[comparison.uuid])
    run = JudgeRun.objects.create(judge=judge, scope=JudgeRun.Scope.COMPARISONS,
                                  status=JudgeRun.Status.BUDGET_STOPPED,
                                  created_at=comparison.created_at)
    with pytest.raises(ValidationError, match="reserved"):
        judge_run_resume(run, dispatch=False)
    with pytest.raises(CommandError, match="reserved for human judgments"):
        call_command("judge_run", "--judge", " Human", "--quiet", stdout=StringIO())
    with pytest.raises(CommandError, match="reserved for human judgments"):
        call_command("judge_estimate", "--judge", " Human", stdout=StringIO())
    assert not JudgeRun.objects.exclude(pk=run.pk).exists()


def test_the_writer_refuses_a_judge_or_a_source_named_human():
    comparison = _comparison()
    with pytest.raises(ValidationError, match="reserved"):
        judgments_record([{"comparison": comparison, "choice": "A"}], judge=_judge("HUMAN"))
    for source in HUMAN_SPELLINGS:
        with pytest.raises(ValidationError, match="reserved"):
            judgment_record(source=source, annotator="x", comparison=comparison, choice="A")
    assert not Judgment.objects.exists()
    stored = judgment_record(source=Judgment.HUMAN, annotator="w1", comparison=comparison,
                             choice="B")
    assert stored.pk and stored.created_at and stored.source == Judgment.HUMAN


@pytest.mark.parametrize("fields, message", [
    ({"kind": Judgment.Kind.PAIRWISE}, "hangs on a comparison"),
    ({"kind": Judgment.Kind.SCORE, "score": 3.0}, "hangs on a response"),
    ({"kind": Judgment.Kind.FEEDBACK, "choice": "A", "comparison": True}, "hangs on a response"),
    ({"source": "", "comparison": True}, "names its source"),
])
def test_the_writer_refuses_a_judgment_without_what_it_judges(fields, message):
    if fields.pop("comparison", None):
        fields["comparison"] = _comparison()
    with pytest.raises(ValidationError, match=message):
        judgment_record(**{"source": "j", "annotator": "j@1"} | fields)


def test_the_writer_keeps_provenance_and_cuts_to_the_columns():
    comparison = _comparison()
    [row] = judgments_record([{
        "source": "s" * 150, "annotator": "a" * 250, "comparison": comparison, "choice": "tie",
        "template_version": "t" * 100, "prompt_hash": "f" * 64,
        "import_file": "dir/" * 60 + "votes.csv"}])
    row.refresh_from_db()
    assert (len(row.source), len(row.annotator), len(row.template_version)) == (100, 200, 80)
    assert row.prompt_hash == "f" * 64 and row.import_file.endswith("votes.csv")
    assert len(row.import_file) == 200


def test_a_judges_new_verdicts_replace_only_its_same_generation():
    comparison = _comparison()
    judge = _judge("j")
    existing = Judgment.objects.filter(comparison=comparison)

    def write(version, choice):
        return judgments_record([{"comparison": comparison, "choice": choice,
                                  "template_version": version}],
                                judge=judge, supersedes=existing)

    write("pairwise@v1", "A")
    write("pairwise@v2", "B")
    write("pairwise@v1", "tie")  # a re-run of v1 replaces v1's row only
    rows = sorted(existing.values_list("template_version", "choice", "source", "annotator"))
    assert rows == [("pairwise@v1", "tie", "j", "j@1"), ("pairwise@v2", "B", "j", "j@1")]
    with pytest.raises(ValueError, match="give the judge"):
        judgments_record([], supersedes=existing)


def _csv(rows) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.mark.parametrize("source", ["Human", "HUMAN", "hu man", "ｈｕｍａｎ"])
def test_an_import_refuses_a_source_spelled_like_human(source, tmp_path):
    row = {"item_id": "i1", "instruction": "Describe.", "image_urls": "", "model_a": "m1",
           "response_a": "r1", "model_b": "m2", "response_b": "r2", "annotator": "w1",
           "source": Judgment.HUMAN, "choice": "A", "score": "", "turn": "", "timestamp": ""}
    bad = [row, {**row, "annotator": "w2", "source": source}]
    with pytest.raises(ImportRejected, match=f"Row 2: source {re.escape(repr(source))} is "
                                             "reserved"):
        judgments_import("votes.csv", _csv(bad), create_missing=True)
    path = tmp_path / "votes.csv"
    path.write_bytes(_csv(bad))
    with pytest.raises(CommandError, match="reserved"):
        call_command("import_judgments", str(path), "--create-missing", stdout=StringIO())
    assert not Judgment.objects.exists()
    assert judgments_import("votes.csv", _csv([row, {**row, "source": " human "}]),
                            create_missing=True).created == 2
    assert set(Judgment.objects.values_list("source", flat=True)) == {Judgment.HUMAN}


def test_only_the_record_service_creates_judgment_rows():
    """Every writer (crowd HIT hook, judge runs, imports, demos) goes through the record
    service; the study backup restores rows as they were (a copy, not new judgments)."""
    writes = re.compile(r"(?<!class )\bJudgment\(|Judgment\.objects\."
                        r"(create|bulk_create|get_or_create|update_or_create)\b")
    allowed = {"judging/services/judgments/record.py"}
    offenders = []
    for app in ("annotation", "judging", "agreement"):
        for path in (ROOT / app).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or rel in allowed:
                continue
            offenders += [f"{rel}:{n}" for n, line in
                          enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                          if writes.search(line)]
    assert offenders == []


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["adjudication", " Adjudication ", "ADJUDICATION"])
def test_adjudication_is_reserved_for_analysts_rulings(name):
    from judging.judges.models import validate_judge_name

    comparison = _comparison()
    with pytest.raises(ValidationError, match="reserved"):
        validate_judge_name(name)
    with pytest.raises(ValidationError, match="reserved"):
        judgment_record(source=name, annotator="x", comparison=comparison, choice="A")
    with pytest.raises(ValidationError, match="reserved"):  # the ruling kind under another name
        judgment_record(source="judge-x", annotator="x", comparison=comparison, choice="A",
                        kind=Judgment.Kind.ADJUDICATION)
    assert not Judgment.objects.exists()
