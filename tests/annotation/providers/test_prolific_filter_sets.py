"""A batch's audience can name a Prolific filter set, against the loopback Prolific server: the
workspace's sets listed with their eligible counts on the launch page, the set chosen there and
stored, the study created with the set pinned to its current version, the eligible count asked
about the set's filters together with the batch's own, and an unknown or deleted set refused
with nothing written or published."""
import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.core.clients.errors import MarketplaceError
from annotation.models import ProviderAction, ProviderHit
from annotation.providers import services
from annotation.providers.prolific.provider import ProlificProvider

from .test_prolific import prolific_batch

pytestmark = pytest.mark.django_db(transaction=True)

ENGLISH = {"filter_id": "fluent-languages", "selected_values": ["19"]}


@pytest.fixture
def english_set(prolific):
    prolific.filter_sets["fs-english"] = {
        "id": "fs-english", "name": "Fluent English", "version": 3, "is_deleted": False,
        "eligible_participant_count": 41234, "filters": [ENGLISH]}
    prolific.filter_sets["fs-gone"] = {
        "id": "fs-gone", "name": "Old set", "version": 1, "is_deleted": True,
        "eligible_participant_count": 10, "filters": []}
    return prolific.filter_sets["fs-english"]


def launch_url(batch):
    return reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])


def test_the_workspace_sets_are_listed_without_deleted_ones(english_set):
    assert ProlificProvider().list_filter_sets() == [
        {"id": "fs-english", "name": "Fluent English", "eligible": 41234}]


def test_a_set_chosen_on_the_launch_page_is_stored_and_sent_pinned_to_its_version(
        prolific, english_set, admin_client_):
    batch = prolific_batch()
    page = admin_client_.get(launch_url(batch)).content.decode()
    assert "Fluent English (41234 eligible)" in page  # listed with its count before launch
    answer = admin_client_.post(launch_url(batch), {"confirm": "on", "filter_set": "fs-english"},
                                follow=True)
    assert answer.status_code == 200
    assert services.config_for(batch).audience_filter_set_id == "fs-english"
    (study,) = prolific.studies.values()
    assert (study["filter_set_id"], study["filter_set_version"]) == ("fs-english", 3)
    assert ENGLISH not in study["filters"]  # the set's filters stay in the set
    assert prolific.counted[-1][0] == ENGLISH  # but the eligible count includes them
    assert prolific.counted[-1][1:] == study["filters"]
    assert ProviderAction.objects.filter(action="filter_set", target="fs-english").exists()


def test_without_a_set_the_study_has_no_filter_set_fields(prolific, english_set):
    services.batch_launch(prolific_batch())
    (study,) = prolific.studies.values()
    assert "filter_set_id" not in study and "filter_set_version" not in study


def test_a_set_the_workspace_does_not_list_is_refused_and_nothing_is_written(
        prolific, english_set):
    batch = prolific_batch()
    for unknown in ("fs-gone", "fs-nope"):
        with pytest.raises(ValidationError, match="no filter set"):
            services.batch_filter_set_choose(batch, unknown)
    assert services.config_for(batch).audience_filter_set_id == ""
    assert not ProviderAction.objects.filter(action="filter_set").exists()


def test_a_set_deleted_after_it_was_chosen_refuses_the_launch(prolific, english_set):
    batch = prolific_batch()
    services.batch_filter_set_choose(batch, "fs-english")
    english_set["is_deleted"] = True
    with pytest.raises(MarketplaceError, match="fs-english was deleted"):
        services.batch_launch(batch)
    assert not prolific.studies and not ProviderHit.objects.filter(external_id__gt="").exists()


def test_the_set_counts_toward_the_audience_too_small_refusal(prolific, english_set,
                                                              admin_client_):
    batch = prolific_batch()  # 4 places
    services.batch_filter_set_choose(batch, "fs-english")
    prolific.eligible = 3
    html = admin_client_.post(launch_url(batch), {"confirm": "on", "filter_set": "fs-english"},
                              follow=True).content.decode()
    assert "Not launched: Audience too small: 3 participants" in html
    assert prolific.counted[-1][0] == ENGLISH
    assert not prolific.studies


def test_a_filter_set_id_with_path_characters_is_refused_on_save():
    config = services.config_for(prolific_batch())
    config.audience_filter_set_id = "../studies"
    with pytest.raises(ValidationError, match="letters, digits"):
        config.full_clean()
