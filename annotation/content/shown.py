"""How an instance's images are shown on a task page: one shape for every HIT type (the
construction types and the rating types alike), in the instance's order."""
from annotation.models import Instance


def instance_images(instance: Instance) -> list[dict]:
    """Per image: its number (1-based), URL, caption, the caption field a construction task
    writes (``caption_<n>``) and its label (the image's external id, shown when it is
    missing)."""
    return [
        {"n": ii.position + 1, "url": ii.image.display_url, "caption": ii.caption,
         "field": f"caption_{ii.position + 1}", "label": ii.image.external_id or ""}
        for ii in instance.instance_images.select_related("image").order_by("position")
    ]
