"""Migration 0005 moves VisIT-Bench labels out of the reference of databases imported before it."""
import pytest

from tests.support.migrations import migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0004_claim_indexes")]
AFTER = [("annotation", "0005_reference_convention")]


def test_labels_leave_the_reference_and_ratings_are_recorded(back_to_latest):
    apps = migrate_to(BEFORE)
    Instance = apps.get_model("annotation", "Instance")
    common = {"source": "visitbench", "extra": {"layout": "multi"}, "stage": "done",
              "kind": "multi"}
    Instance.objects.create(instruction="Which image?", reference_output="Image 2",
                            candidate_reference="The second image, because …",
                            reference_status="verified", external_id="v1", **common)
    Instance.objects.create(instruction="Is it odd?", reference_output="Yes",
                            candidate_reference="No.", reference_status="rejected",
                            rejection_reason="response_wrong", external_id="v2", **common)
    Instance.objects.create(instruction="Unrated", reference_output="Yes",
                            candidate_reference="Maybe.", reference_status="pending",
                            external_id="v3", **common)
    Instance.objects.create(instruction="Written by a person", kind="single",
                            source="visitbench", extra={"layout": "single"},
                            reference_output="A human answer.", reference_status="verified",
                            external_id="s1", stage="done")
    Instance.objects.create(instruction="Crowd-verified", kind="single", source="crowd",
                            reference_output="Checked.", candidate_reference="Checked.",
                            reference_status="verified", external_id="c1", stage="done")

    apps = migrate_to(AFTER)
    Instance = apps.get_model("annotation", "Instance")
    got = {i.external_id: (i.reference_output, i.source_label, i.reference_rated_by)
           for i in Instance.objects.all()}
    assert got == {
        "v1": ("The second image, because …", "Image 2", "imported"),
        "v2": ("", "Yes", "imported"),
        "v3": ("", "Yes", ""),
        "s1": ("A human answer.", "", ""),
        "c1": ("Checked.", "", "crowd"),
    }
