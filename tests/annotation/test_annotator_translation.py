"""The annotator's pages in French: chosen by the browser's language or the language cookie
(the switch's), English otherwise; the catalogue is complete (compiled, nothing untranslated),
and no English caption is left on the French pages."""
import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.workers import worker_for_user
from annotation.models import Batch
from tests.factories import make_batch
from tests.support.homes import submit

pytestmark = pytest.mark.django_db
CATALOGUE = Path(settings.BASE_DIR) / "locale" / "fr" / "LC_MESSAGES"
# Captions of the annotator's pages that must not survive in French.
ENGLISH = ["Available work", "Reward per task", "Start working", "Left for you", "My work",
           "History", "Pending review", "Skip this task", "Report a problem", "Instructions",
           "Which response better", "Response A", "Submit", "Time left", "Task 1 of",
           "Side by side", "Your feedback", "Score the", "Newest first"]


def _visible(html: str) -> str:
    """The page's text outside tags, scripts and the navigation bar (the project's own)."""
    html = re.sub(r"<script.*?</script>|<header class=\"topbar\">.*?</header>", "", html,
                  flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def _unquote(chunk: str) -> str:
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', chunk)).replace('\\"', '"')


def test_the_catalogue_is_complete_and_its_compiled_file_current():
    po = (CATALOGUE / "django.po").read_text()
    entries = po.split("\n\n")[1:]
    assert len(entries) > 150
    untranslated = [e for e in entries  # an empty msgstr not continued on the next line
                    if re.search(r'^msgstr(\[\d\])? ""\n(?!")', e + "\n", re.M)]
    assert not untranslated, untranslated[:3]
    with (CATALOGUE / "django.mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for entry in entries:  # the .mo says what the .po says (msgfmt was run after the edit)
        single = re.search(r'^msgid ((?:".*"\n)+)msgstr ((?:".*"\n?)+)', entry + "\n", re.M)
        if single:
            assert compiled.gettext(_unquote(single.group(1))) == _unquote(single.group(2))


def test_the_browsers_language_picks_french_and_english_stays_the_default(client, alice):
    make_batch(2, n=1)
    client.force_login(alice)
    english = client.get(reverse("annotation:available")).content.decode()
    assert "Available work" in english and "Tâches disponibles" not in english
    french = client.get(reverse("annotation:available"),
                        HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9").content.decode()
    assert "Tâches disponibles" in french and "Rémunération par tâche" in french
    assert '<html lang="fr">' in french and '<html lang="en">' in english


@pytest.mark.parametrize("slug", ["pairwise_ab", "rubric_score", "multiturn_ab", "feedback_ab"])
def test_the_annotators_pages_leave_no_english_caption_in_french(client, alice, bob, slug):
    batch = batch_create_from_rows(hit_type=slug, title="Lot", min_seconds=0,
                                   rows=get_hit_type(slug).example_rows, assignments_per_task=2)
    batch_set_status(batch, Batch.Status.ACTIVE)
    submit(make_batch(1, n=1), worker_for_user(alice))  # a history row
    lease = task_claim_next(batch=batch, worker=worker_for_user(alice))
    client.force_login(alice)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"  # what the switch sets
    pages = {
        "available": client.get(reverse("annotation:available")).content.decode(),
        "my work": client.get(reverse("annotation:my_work")).content.decode(),
        "task": client.get(reverse("annotation:assignment", args=[lease.uuid])).content.decode(),
    }
    assert "Tâche 1 sur" in pages["task"] and "Passer cette tâche" in pages["task"]
    assert "Historique" in pages["my work"]
    for name, html in pages.items():
        text = _visible(html)
        left = [phrase for phrase in ENGLISH if phrase in text]
        assert not left, (name, left)
