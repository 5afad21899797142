"""Study backup: export, wipe, restore — and every report number comes back identical.

The proof test builds the demo study through the real services (crowd through claim/submit, the
construction pipeline, six automatic judges through the loopback judge server, cached metrics and
a stored report), computes every number the platform reports, exports, empties the database
(``flush``: auth users included) and the media storage, restores, recomputes and compares with
``==``. The other tests drive each refusal path on a small study and check nothing was written.
"""
import hashlib
import io
import json
import random
import zipfile
from dataclasses import asdict
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import override_settings
from django.utils import timezone

from agreement.backup import BackupError, export_study, import_study, importer
from agreement.backup.contents import all_tables_models, study_models, tables_that_must_be_empty
from agreement.backup.manifest import FORMAT_VERSION, MANIFEST
from agreement.backup.migration_state import database_state, latest_applied
from agreement.models import MetricScore, Report
from agreement.reports.params import ReportParams
from agreement.services.reports import report_data_compute, report_generate
from annotation.engine.selectors import batch_cost, worker_gold_accuracy
from annotation.models import Batch, Image, Worker
from annotation.pipeline.selectors import stage_counts, verification_report
from annotation.providers.selectors import batch_costs
from judging.judges.ablation import ablation_table
from judging.judges.selectors import (
    judges_with_verdicts,
    parse_path_counts,
    run_progress,
)
from judging.leaderboards import category_win_rates, leaderboard_build
from judging.models import Comparison, Judge, JudgeRun, Judgment
from judging.selectors import judge_names
from tests.agreement.study import build_study

# Real commits: the restore's transaction, deferred constraint checks and sequences behave
# exactly as in production, and `flush` empties the database for real.
pytestmark = pytest.mark.django_db(transaction=True)
METRICS = ["bleu4", "rouge_l", "cider_d", "length", "random"]


@pytest.fixture
def media(settings, tmp_path):
    """A fresh media root per test; ``switch()`` moves to another (a new machine's storage)."""
    class Media:
        def switch(self, name: str) -> Path:
            settings.MEDIA_ROOT = str(tmp_path / name)
            return Path(settings.MEDIA_ROOT)

    m = Media()
    m.root = m.switch("media")
    return m


def _counts() -> dict[str, int]:
    return {m._meta.label_lower: m._base_manager.count() for m in study_models()}


def _assert_empty():
    assert [m._meta.db_table for m in tables_that_must_be_empty()
            if m._base_manager.exists()] == []


def _wipe():
    """A freshly migrated database: no study data, only the default study that ``migrate``
    (and so ``flush``) makes, which a restore replaces with the archive's studies."""
    call_command("flush", interactive=False, verbosity=0)
    assert not User.objects.exists() and not Group.objects.exists()
    assert {k: n for k, n in _counts().items() if n} == {"studies.study": 1}


def _small_study() -> dict:
    """The hand-computable study plus an account-backed worker, a grouped user and an image."""
    comparisons = build_study()
    user = User.objects.create_user("carol", password="carol-pw")
    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    user.user_permissions.add(Permission.objects.get(codename="view_batch"))
    Worker.objects.create(provider="local", external_id="carol", user=user)
    image = Image(sha256="ab" * 32, fetch_status=Image.FetchStatus.OK)
    image.file.save("small.png", ContentFile(b"\x89PNG not really"), save=False)
    image.save()
    return {"comparisons": comparisons, "user": user, "image": image}


def _rewrite(src: Path, dst: Path, *, drop=(), replace=None, manifest=None, extra=None):
    """Copy an archive member by member, optionally changing it (a deliberate tamper)."""
    replace = replace or {}
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for name in zin.namelist():
            if name in drop:
                continue
            data = replace.get(name, zin.read(name))
            if name == MANIFEST and manifest is not None:
                data = json.dumps(manifest(json.loads(data))).encode()
            zout.writestr(name, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)
    return dst


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stored_sha(name: str) -> str:
    with default_storage.open(name, "rb") as fh:
        return _sha(fh.read())


# ------------------------------------------------------------------ the proof


def _demo_study():
    from annotation.pipeline.demo import extend_demo as pipeline_demo
    from judging.demo import load_demo
    from judging.judges.demo import extend_demo as judges_demo

    rnd = random.Random(7)
    load_demo(seed=7)
    pipeline_demo(rnd)
    judges_demo(rnd)
    report_generate({"metrics": METRICS, "seed": 5, "bootstrap_rounds": 100},
                    title="Backup proof", created_by="test")


def _every_number() -> dict:
    data, _ = report_data_compute(ReportParams.from_dict(
        {"metrics": METRICS, "seed": 11, "bootstrap_rounds": 200}))
    data["snapshot"].pop("generated_at")  # the only legitimately new value
    judges = judge_names()
    return {
        "agreement_report": data,
        "leaderboards": {f"{j}/{split}": leaderboard_build(j, split, bootstrap_rounds=200,
                                                           seed=3).as_dict()
                         for j in judges for split in ("all", "single", "multi")},
        "category_win_rates": {j: category_win_rates(j) for j in judges},
        "table2": verification_report(),
        "pipeline_stages": stage_counts(),
        "batch_costs": {str(b.uuid): {"reward": batch_cost(b),
                                      "estimate": asdict(batch_costs(b).estimate),
                                      "spent": batch_costs(b).spent}
                        for b in Batch.objects.all()},
        "gold_accuracy": {str(w.uuid): worker_gold_accuracy(w) for w in Worker.objects.all()},
        "judge_leaderboards": {j: leaderboard_build(j, bootstrap_rounds=100, seed=2).as_dict()
                               for j in judges_with_verdicts()},
        "ablation_tables": {j.ident: ablation_table(j) for j in Judge.objects.all()},
        "judge_runs": {str(r.uuid): (run_progress(r), parse_path_counts(r))
                       for r in JudgeRun.objects.select_related("judge")},
        "stored_reports": {str(r.uuid): [r.title, r.params, r.status, r.snapshot, r.data,
                                         r.created_at, r.finished_at,
                                         {f.name: _sha(bytes(f.content)) for f in r.files.all()}]
                           for r in Report.objects.all()},
        "judge_idents": sorted(Judge.objects.values_list("name", "version")),
        "judgment_times": sorted(Judgment.objects.values_list("uuid", "created_at")),
        "media": {i.file.name: _stored_sha(i.file.name) for i in Image.objects.exclude(file="")},
        "logins": sorted(User.objects.values_list("username", "password", "is_staff")),
        "roles": sorted(User.objects.values_list("username", "groups__name")),
        "rows": _counts(),
    }


@pytest.mark.slow
def test_demo_study_round_trip_reproduces_every_number(media, tmp_path):
    _demo_study()
    before = _every_number()
    assert before["rows"]["judging.judgment"] > 500 and before["rows"]["annotation.image"] > 30
    assert len(before["leaderboards"]) >= 3 * 4 and before["stored_reports"]
    assert before["agreement_report"]["ratings"] and before["table2"]
    assert len(before["judge_leaderboards"]) >= 3 and before["judge_runs"]
    scores = MetricScore.objects.count()

    manifest = export_study(tmp_path / "study.zip")
    assert manifest["rows"] == before["rows"]
    _wipe()
    media.switch("new-machine")  # the restore target has no media either
    import_study(tmp_path / "study.zip")
    after = _every_number()

    assert MetricScore.objects.count() == scores  # every metric came from the restored cache
    for key in before:
        assert after[key] == before[key], key
    assert after == before


# ------------------------------------------------------------------ the archive


def test_manifest_records_format_migrations_counts_and_hashes(media, tmp_path):
    _small_study()
    path = tmp_path / "s.zip"
    manifest = export_study(path)
    with zipfile.ZipFile(path) as zf:
        assert json.loads(zf.read(MANIFEST)) == manifest
        members = {n: zf.read(n) for n in zf.namelist() if n != MANIFEST}
        users = zf.read("data/auth.user.jsonl").decode()
    assert manifest["version"] == FORMAT_VERSION and manifest["created_at"]
    assert set(manifest["migrations"]) == {"contenttypes", "auth", "studies", "annotation",
                                           "judging", "agreement"}
    assert manifest["rows"] == _counts()
    assert manifest["rows"]["judging.judgment"] == 40 and manifest["rows"]["auth.user"] == 1
    assert {n: _sha(d) for n, d in members.items()} == {
        n: e["sha256"] for n, e in manifest["files"].items()}
    assert "media/images/small.png" in members
    assert not any("session" in n or "token" in n for n in members)
    assert User.objects.get().password in users and "carol-pw" not in users  # hash, not password


def test_timestamps_keep_their_microseconds(media, tmp_path):
    _small_study()
    at = timezone.now().replace(microsecond=123457)
    Judgment.objects.update(created_at=at)
    export_study(tmp_path / "s.zip")
    _wipe()
    import_study(tmp_path / "s.zip")
    assert set(Judgment.objects.values_list("created_at", flat=True)) == {at}


def test_restore_keeps_logins_roles_and_media(media, tmp_path):
    study = _small_study()
    export_study(tmp_path / "s.zip")
    old_file = (media.root / "images" / "small.png").read_bytes()
    _wipe()
    new_root = media.switch("target")
    # what `migrate` (annotation.0002_roles) creates; other ids than in the archive
    Group.objects.create(name="analyst")
    Group.objects.create(name="annotator")
    import_study(tmp_path / "s.zip")
    user = User.objects.get(username="carol")
    assert user.pk == study["user"].pk and user.check_password("carol-pw")
    assert list(user.groups.values_list("name", flat=True)) == ["annotator"]
    assert list(user.user_permissions.values_list("codename", flat=True)) == ["view_batch"]
    assert Worker.objects.get(user=user).external_id == "carol"
    assert (new_root / "images" / "small.png").read_bytes() == old_file


def test_commands_back_up_and_restore(media, tmp_path):
    _small_study()
    out = io.StringIO()
    call_command("backup_study", str(tmp_path / "s.zip"), stdout=out)
    assert f"{sum(_counts().values())} rows" in out.getvalue()
    with pytest.raises(CommandError, match="non-empty database"):
        call_command("restore_study", str(tmp_path / "s.zip"))
    _wipe()
    out = io.StringIO()
    call_command("restore_study", str(tmp_path / "s.zip"), stdout=out)
    assert "Restored" in out.getvalue() and Judgment.objects.count() == 40


def test_export_refuses_a_missing_media_file_and_leaves_no_archive(media, tmp_path):
    study = _small_study()
    default_storage.delete(study["image"].file.name)
    with pytest.raises(BackupError, match="images/small.png"):
        export_study(tmp_path / "s.zip")
    assert list(tmp_path.glob("s.zip*")) == []


# ------------------------------------------------------------------ refusals


def test_restore_refuses_a_non_empty_database_naming_a_table(media, tmp_path):
    _small_study()
    export_study(tmp_path / "s.zip")
    before = _counts()
    with pytest.raises(BackupError, match=r"non-empty database: table \w+ has rows"):
        import_study(tmp_path / "s.zip")
    assert _counts() == before
    _wipe()
    Worker.objects.create(provider="mturk", external_id="W1")
    with pytest.raises(BackupError, match="table annotation_worker has rows"):
        import_study(tmp_path / "s.zip")


def test_restore_refuses_another_migration_state(media, tmp_path):
    _small_study()
    export_study(tmp_path / "s.zip")
    _wipe()
    target = media.switch("target")

    def newer(m):
        m["migrations"]["agreement"] = ["0099_future"]
        return m

    bad = _rewrite(tmp_path / "s.zip", tmp_path / "bad.zip", manifest=newer)
    with pytest.raises(BackupError, match=r"'agreement': archive at 0099_future"):
        import_study(bad)
    _assert_empty()
    assert not target.exists()


def test_migration_state_is_the_latest_applied_migrations():
    parents = {("a", "0002"): [("a", "0001"), ("b", "0001")], ("a", "0003"): [("a", "0002")],
               ("a", "0002b"): [("a", "0001")]}
    applied = [("a", "0001"), ("a", "0002"), ("a", "0002b"), ("b", "0001")]
    assert latest_applied(applied, parents) == {"a": ["0002", "0002b"], "b": ["0001"]}
    assert latest_applied(applied + [("a", "0003")], parents)["a"] == ["0002b", "0003"]


def test_migration_state_reads_django_migrations_when_it_has_rows():
    """With the real migration files loaded, recorded rows decide the state."""
    recorder = MigrationRecorder(connection)
    recorder.ensure_schema()
    with override_settings(MIGRATION_MODULES={}):
        leaves = database_state()
        assert len(leaves["agreement"]) == 1  # nothing recorded: the code's leaf migration
        assert len(leaves["annotation"]) == 1 and leaves["annotation"][0] > "0002_roles"
        # django_migrations is not flushed between tests, and earlier tests may have run
        # `migrate`: set the annotation rows this test needs, then put the old ones back.
        earlier = list(recorder.migration_qs.filter(app="annotation")
                       .values_list("name", flat=True))
        recorder.migration_qs.filter(app="annotation").delete()
        try:
            recorder.record_applied("annotation", "0001_initial")
            recorder.record_applied("annotation", "0002_roles")
            state = database_state()
        finally:
            recorder.migration_qs.filter(app="annotation").delete()
            for name in earlier:
                recorder.record_applied("annotation", name)
    assert state["annotation"] == ["0002_roles"]  # the latest recorded, not the code's leaf
    assert state["agreement"] == leaves["agreement"]  # nothing recorded: the code's leaves


def _archive(tmp_path) -> Path:
    _small_study()
    path = tmp_path / "s.zip"
    export_study(path)
    _wipe()
    return path


CORRUPTIONS = {
    "truncated": "not a readable zip archive",
    "crc": "corrupt",
    "tampered": "sha256 mismatch for member data/judging.judgment.jsonl",
    "no manifest": "has no manifest.json",
    "manifest not json": "not valid JSON",
    "wrong version": "Unsupported archive format version 2",
    "wrong format": "format is 'something-else'",
    "missing member": "data/judging.judgment.jsonl is listed in the manifest but missing",
    "extra member": "media/evil.txt is not listed in the manifest",
    "unsafe media name": "Unsafe media member name",
    "missing file": "No archive at",
}


def _corrupt(kind: str, path: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"{kind.replace(' ', '-')}.zip"
    judgments = "data/judging.judgment.jsonl"
    if kind == "truncated":
        out.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif kind == "crc":
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(judgments)
        raw = bytearray(path.read_bytes())
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 20
        raw[start:start + 8] = bytes(b ^ 0xFF for b in raw[start:start + 8])
        out.write_bytes(bytes(raw))
    elif kind == "tampered":
        with zipfile.ZipFile(path) as zf:
            data = zf.read(judgments).replace(b'"choice": "A"', b'"choice": "B"', 1)
        _rewrite(path, out, replace={judgments: data})
    elif kind == "no manifest":
        _rewrite(path, out, drop={MANIFEST})
    elif kind == "manifest not json":
        _rewrite(path, out, replace={MANIFEST: b"{not json"})
    elif kind == "wrong version":
        _rewrite(path, out, manifest=lambda m: {**m, "version": 2})
    elif kind == "wrong format":
        _rewrite(path, out, manifest=lambda m: {**m, "format": "something-else"})
    elif kind == "missing member":
        _rewrite(path, out, drop={judgments})
    elif kind == "extra member":
        _rewrite(path, out, extra={"media/evil.txt": b"x"})
    elif kind == "unsafe media name":
        def unsafe(m):
            m["files"]["media/../evil.txt"] = {"sha256": _sha(b"x"), "bytes": 1}
            return m
        _rewrite(path, out, manifest=unsafe, extra={"media/../evil.txt": b"x"})
    elif kind == "missing file":
        out = tmp_path / "nothing-here.zip"
    return out


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_a_bad_archive_is_refused_and_nothing_is_written(kind, media, tmp_path):
    good = _archive(tmp_path)
    target = media.switch("target")
    with pytest.raises(BackupError) as caught:
        import_study(_corrupt(kind, good, tmp_path))
    assert CORRUPTIONS[kind] in str(caught.value)
    _assert_empty()
    assert not target.exists() or not any(target.rglob("*"))


def test_rows_that_break_a_foreign_key_roll_everything_back(media, tmp_path):
    good = _archive(tmp_path)
    target = media.switch("target")
    member = "data/judging.comparison.jsonl"
    with zipfile.ZipFile(good) as zf:
        first, rest = zf.read(member).split(b"\n", 1)
    row = json.loads(first)
    row["fields"]["instance"] = 10 ** 9  # an instance that is not in the archive
    data = json.dumps(row).encode() + b"\n" + rest

    def fix(m):
        m["files"][member] = {"sha256": _sha(data), "bytes": len(data)}
        return m

    bad = _rewrite(good, tmp_path / "fk.zip", replace={member: data}, manifest=fix)
    with pytest.raises(BackupError, match="constraint|foreign key|FOREIGN KEY"):
        import_study(bad)
    _assert_empty()
    assert not (target / "images" / "small.png").exists()


def test_a_failure_after_media_were_written_removes_them(media, tmp_path, monkeypatch):
    good = _archive(tmp_path)
    target = media.switch("target")
    seen = {}

    def fail(using="default"):
        seen["file"] = (target / "images" / "small.png").exists()
        raise RuntimeError("disk full")

    monkeypatch.setattr(importer, "reset_sequences", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        import_study(good)
    assert seen == {"file": True}  # the media were written before the failure ...
    assert not (target / "images" / "small.png").exists()  # ... and removed after it
    _assert_empty()


def test_an_existing_media_file_with_other_content_is_refused(media, tmp_path):
    good = _archive(tmp_path)
    target = media.switch("target")
    (target / "images").mkdir(parents=True)
    (target / "images" / "small.png").write_bytes(b"someone else's file")
    with pytest.raises(BackupError, match="images/small.png already exists"):
        import_study(good)
    _assert_empty()
    assert (target / "images" / "small.png").read_bytes() == b"someone else's file"


# ------------------------------------------------------------------ sequences


@pytest.mark.postgres
def test_sequences_are_reset_so_new_rows_do_not_collide(media, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("sequences are a PostgreSQL matter (set TEST_DATABASE_URL)")
    _small_study()
    export_study(tmp_path / "s.zip")
    _wipe()  # TRUNCATE ... RESTART IDENTITY: every sequence starts at 1 again
    import_study(tmp_path / "s.zip")
    lagging = []
    with connection.cursor() as cursor:
        for model in all_tables_models():
            table = model._meta.db_table
            cursor.execute(f'SELECT MAX(id) FROM "{table}"')  # noqa: S608 - table from models
            top = cursor.fetchone()[0]
            if top is None:
                continue
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [table])
            if cursor.fetchone()[0] <= top:
                lagging.append(table)
    assert lagging == []
    # and through the ORM: new rows in restored tables, an m2m link included
    user = User.objects.create_user("dave")
    user.groups.add(Group.objects.get(name="annotator"))
    Worker.objects.create(provider="local", external_id="dave", user=user)
    comparison = Comparison.objects.first()
    Judgment.objects.create(comparison=comparison, source="human", choice="A",
                            annotator="dave", created_at=timezone.now())
