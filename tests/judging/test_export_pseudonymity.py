"""No person of the study is named anywhere in the published dataset.

A database with accounts (usernames, e-mails, full names), crowd workers with MTurk- and
Prolific-style marketplace ids, live votes, imported votes under raw annotator strings, a
submission whose notes name its submitter, an analyst's ruling whose note names people, and a
launched batch whose title names a worker is exported; every file, read back in full, holds
none of those strings, every person appears under the one keyed pseudonym (the same one wherever
they appear), and two exports under one key agree while another key gives other pseudonyms."""
import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotation.models import Batch, Worker
from judging.dataset.export import FILES, dataset_export
from judging.dataset.identities import PSEUDONYM, SCRUBBED_MIN, Identities, pseudonym
from judging.models import Comparison, EvalModel, Judgment
from judging.services.adjudication import item_adjudicate
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.judgments.record import judgment_record
from judging.submissions.models import Submission
from tests.agreement.study import build_study
from tests.judging import builders

MTURK, PROLIFIC = "A1B2C3D4E5F6G7", "5f8d0c2b9a7e6d4c3b2a1f0e"
IMPORTED_MTURK, IMPORTED_PROLIFIC = "A3MTURKIMPORT77", "60a1b2c3d4e5f60718293a4b"
KNOWN_IN_IMPORT = "A9Z8Y7X6W5V4U3"  # a worker of ours whose votes also came in a file


def _import_file(comparison: Comparison) -> bytes:
    inst = comparison.instance
    a, b = comparison.response_a, comparison.response_b
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for n, annotator in enumerate((IMPORTED_MTURK, IMPORTED_PROLIFIC, "jane.doe.annotator",
                                   KNOWN_IN_IMPORT)):
        writer.writerow({"item_id": inst.external_id, "instruction": "", "image_urls": "",
                         "model_a": a.model.name, "response_a": a.text,
                         "model_b": b.model.name, "response_b": b.text,
                         "annotator": annotator, "source": "human", "choice": "AB"[n % 2],
                         "score": "", "turn": "", "timestamp": f"2026-02-01T10:0{n}:00+00:00"})
    return out.getvalue().encode()


def _strings(value, found: list[str]) -> list[str]:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(k, found)
            _strings(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, found)
    return found


def _read_back(folder) -> dict[str, str]:
    """Every exported file as text: a Parquet file's every value (decoded from its compressed
    pages) and its schema metadata, plus its raw bytes; other files as they are."""
    texts = {}
    for path in sorted(folder.iterdir()):
        raw = path.read_bytes().decode("utf-8", errors="replace")
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
            values = _strings([table.to_pylist(), meta], [])
            texts[path.name] = raw + "\n" + "\n".join(values)
        else:
            texts[path.name] = raw
    return texts


def _identities() -> list[str]:
    """Every string in the database that names a person."""
    found = []
    for user in User.objects.all():
        found += [user.username, user.email, user.get_full_name()]
    for worker in Worker.objects.all():
        found += [worker.external_id, str(worker), str(worker.uuid)]
    found += Judgment.objects.filter(source__in=("human", "adjudication")).exclude(
        annotator__regex=r"^anon-").values_list("annotator", flat=True)
    return sorted({s for s in found if s})


@pytest.mark.django_db
class TestExportPseudonymity:
    @pytest.fixture(autouse=True)
    def _study(self):
        comparisons = build_study()  # imported votes of annotators w1…w5, h1, h2
        self.alice = User.objects.create_user("alice.analyst", email="alice.analyst@uni.example",
                                              is_staff=True)
        self.bob = User.objects.create_user("bob_submitter", email="bob.sub@lab.example",
                                            first_name="Robert", last_name="Submitterson")
        carol = User.objects.create_user("carol-crowd", email="carol@crowd.example")
        self.carol = Worker.objects.create(provider=Worker.Provider.LOCAL,
                                           external_id=f"user-{carol.pk}", user=carol)
        self.mturk = Worker.objects.create(provider=Worker.Provider.MTURK, external_id=MTURK)
        self.prolific = Worker.objects.create(provider=Worker.Provider.PROLIFIC,
                                              external_id=PROLIFIC)
        self.known = Worker.objects.create(provider=Worker.Provider.MTURK,
                                           external_id=KNOWN_IN_IMPORT)
        c1 = comparisons["c1"]
        for worker, feedback in ((self.mturk, f"I am {MTURK}, please bonus me"),
                                 (self.prolific, f"prolific id {PROLIFIC}."),
                                 (self.carol, "Ask carol@crowd.example about it")):
            judgment_record(source=Judgment.HUMAN, annotator=str(worker), worker=worker,
                            comparison=c1, choice="A", feedback=feedback,
                            created_at=timezone.now())
        judgments_import("bob_submitter-votes.csv", _import_file(comparisons["c2"]))
        # A submission from before owners: notes named the submitter, as they used to.
        model = EvalModel.objects.create(name="bob_submitter-vlm v1", version="1",
                                         owner=self.bob, notes="Submitted by bob_submitter")
        builders.respond(c1.instance, model, text="Questions to bob.sub@lab.example please.")
        Submission.objects.create(submitter=self.bob, name="bob_submitter-vlm", version=1,
                                  model=model, file_name="preds.jsonl",
                                  status=Submission.Status.DONE)
        item_adjudicate(comparison=comparisons["c3"], turn="", choice="A",
                        analyst=self.alice.username,
                        note=f"Checked with carol-crowd and Robert Submitterson; {MTURK} "
                             "clicked through.")
        Batch.objects.create(hit_type="pairwise", title="Pilot for carol-crowd",
                             status=Batch.Status.ACTIVE)

    def test_no_file_names_anyone(self, tmp_path):
        dataset_export(tmp_path)
        assert {p.name for p in tmp_path.iterdir()} == {f"{t}.parquet" for t in FILES} | {
            "README.md"}
        texts = _read_back(tmp_path)
        people = _identities()
        assert {MTURK, PROLIFIC, IMPORTED_MTURK, IMPORTED_PROLIFIC, "alice.analyst",
                "bob.sub@lab.example", "Robert Submitterson"} <= set(people)
        for name, text in texts.items():
            folded = text.lower()
            leaks = [p for p in people if len(p) >= SCRUBBED_MIN and p.lower() in folded]
            assert not leaks, f"{name} names {leaks}"
        judgments = pq.read_table(tmp_path / "judgments.parquet").to_pylist()
        for row in judgments:  # also the short imported annotators (w1, h2) too common to scan
            if row["source"] in ("human", "adjudication"):
                assert PSEUDONYM.fullmatch(row["annotator"]), row
            assert "import_key" not in json.loads(row["meta"])

    def test_each_person_has_one_pseudonym_everywhere(self, tmp_path):
        dataset_export(tmp_path)
        judgments = pq.read_table(tmp_path / "judgments.parquet").to_pylist()
        by_feedback = {r["feedback"]: r["annotator"] for r in judgments if r["feedback"]}
        mturk, carol = pseudonym("worker", self.mturk.pk), pseudonym("worker", self.carol.pk)
        assert by_feedback[f"I am {mturk}, please bonus me"] == mturk
        assert by_feedback[f"Ask {carol} about it"] == carol  # the account is the worker
        ruling = next(r for r in judgments if r["kind"] == "adjudication")
        bob = pseudonym("user", self.bob.pk)
        assert ruling["annotator"] == pseudonym("user", self.alice.pk)
        assert ruling["feedback"] == f"Checked with {carol} and {bob}; {mturk} clicked through."
        imported = {r["annotator"] for r in judgments if r["source"] == "human"
                    and json.loads(r["meta"]).get("import") == f"{bob}-votes.csv"}
        assert imported == {pseudonym("annotator", IMPORTED_MTURK),
                            pseudonym("annotator", IMPORTED_PROLIFIC),
                            pseudonym("annotator", "jane.doe.annotator"),
                            pseudonym("worker", self.known.pk)}  # a known worker is that worker
        models = {m["name"]: m for m in pq.read_table(tmp_path / "models.parquet").to_pylist()}
        assert models[f"{bob}-vlm v1"]["notes"] == f"Submitted by {bob}"
        responses = pq.read_table(tmp_path / "responses.parquet").to_pylist()
        assert {r["model"] for r in responses} <= set(models)  # the tables still join
        assert f"| Pilot for {carol} |" in (tmp_path / "README.md").read_text()

    def test_pseudonyms_are_stable_under_one_key_and_change_with_it(self, tmp_path, settings):
        dataset_export(tmp_path / "a")
        dataset_export(tmp_path / "b")
        for table in FILES:
            assert pq.read_table(tmp_path / "a" / f"{table}.parquet").to_pylist() == \
                pq.read_table(tmp_path / "b" / f"{table}.parquet").to_pylist(), table
        settings.SECRET_KEY = "another-deployment-key-" + "x" * 40
        dataset_export(tmp_path / "c")
        first, other = ({r["uuid"]: r["annotator"] for r in
                         pq.read_table(tmp_path / d / "judgments.parquet").to_pylist()
                         if r["source"] == "human"} for d in ("a", "c"))
        assert first.keys() == other.keys()
        assert all(first[u] != other[u] for u in first)

    def test_json_text_is_scrubbed_where_it_escapes_a_name(self):
        rater = 'Rater "Q7" of lab'
        judgment_record(source=Judgment.HUMAN, annotator=rater, choice="B",
                        comparison=Comparison.objects.first(), created_at=timezone.now())
        people = Identities()
        text = json.dumps({"note": f"from {rater}, and Bob.Sub@LAB.example"})
        scrubbed = json.loads(people.scrub(text))["note"]
        assert scrubbed == (f"from {pseudonym('annotator', rater)}, and "
                            f"{pseudonym('user', self.bob.pk)}")
        # whole words only: a name inside a longer word is another word
        assert people.scrub("carol-crowdsourcing") == "carol-crowdsourcing"
