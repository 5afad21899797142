"""One images partial for every page that shows an item: a rating HIT (stored or inline row),
a construction HIT and the review page render the same gallery (numbered alt text, the zoom
label images.js reads, an image's number for the viewer), with hostile text escaped."""
import re

import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.models import Batch, Image, Instance
from judging.models import Comparison
from judging.services.comparisons import comparison_batch_create
from tests.judging import builders

pytestmark = pytest.mark.django_db

HOSTILE_URL = 'https://example.org/a.png?q="><script>alert(1)</script>'


def _page(client, batch) -> str:
    batch_set_status(batch, Batch.Status.ACTIVE)
    page = client.get(reverse("annotation:batch_next", args=[batch.uuid]), follow=True)
    assert page.status_code == 200
    return page.content.decode()


def _comparison(*urls) -> Comparison:
    ms = builders.models("LLaVA", "BLIP")
    inst = builders.instance(urls=list(urls))
    return Comparison.objects.create(
        instance=inst, response_a=builders.respond(inst, ms["LLaVA"]),
        response_b=builders.respond(inst, ms["BLIP"]))


def _gallery(html: str) -> str:
    match = re.search(r'<div class="images[^"]*" id="images".*?\n</div>', html, re.S)
    assert match, "no images gallery on the page"
    return match.group(0)


def test_a_stored_comparison_shows_each_image_numbered_with_zoom(alice_client):
    comparison = _comparison("https://example.org/p1.png", "https://example.org/p2.png")
    batch = comparison_batch_create(comparisons=[comparison], title="Votes", min_seconds=0)
    gallery = _gallery(_page(alice_client, batch))
    assert 'class="images multi"' in gallery
    assert re.findall(r'data-image="(\d)"', gallery) == ["1", "2"]
    assert re.findall(r'alt="([^"]*)"', gallery) == ["Image 1 of 2", "Image 2 of 2"]
    assert gallery.count('data-zoom-label="zoom"') == 2
    assert '<img src="https://example.org/p2.png"' in gallery


def test_an_inline_row_numbers_its_image_and_escapes_a_hostile_url(alice_client):
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="t", min_seconds=0, rows=[
        {"instruction": "Count the shapes.", "image_urls": [HOSTILE_URL],
         "model_a": "m1", "response_a": "Four.", "model_b": "m2", "response_b": "Three."}])
    html = _page(alice_client, batch)
    gallery = _gallery(html)
    assert 'data-image="1"' in gallery and 'alt="Image"' in gallery
    # a lone image on a rating page is captioned "Image", as before the partials were merged
    assert re.search(r'data-zoom-label="zoom">Image · <a', gallery)
    assert "<script>alert(1)" not in html
    assert 'src="https://example.org/a.png?q=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in gallery


def test_a_row_without_images_shows_no_gallery(alice_client):
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="t", min_seconds=0, rows=[
        {"instruction": "Say hello.", "image_urls": [],
         "model_a": "m1", "response_a": "Hello.", "model_b": "m2", "response_b": "Hi."}])
    html = _page(alice_client, batch)
    assert 'id="instruction">Say hello.' in html
    assert 'class="images' not in html


def test_a_construction_hit_numbers_a_lone_image_and_escapes_a_missing_ones_label(alice_client):
    hostile = '<img src=x onerror="alert(2)">'
    instance = Instance.objects.create(instruction="Which image has more dots?",
                                       stage="verification", kind="multi",
                                       candidate_reference="Image 2 has more dots.")
    shown = Image.objects.create(source_url="https://example.org/dots.png")
    missing = Image.objects.create(source_url="", external_id=hostile)
    instance.instance_images.create(image=shown, position=0, caption=hostile)
    instance.instance_images.create(image=missing, position=1, caption="Two dots.")
    batch = batch_create_from_rows(hit_type="reference_verification", title="t", min_seconds=0,
                                   rows=[{"instance": str(instance.uuid)}])
    html = _page(alice_client, batch)
    gallery = _gallery(html)
    assert re.findall(r'data-image="(\d)"', gallery) == ["1", "2"]
    assert re.findall(r'alt="([^"]*)"', gallery) == ["Image 1 of 2"]
    assert "Image 2 is not available (&lt;img src=x onerror=&quot;alert(2)&quot;&gt;)." in gallery
    assert 'id="caption-1"><strong>Image 1:</strong> &lt;img src=x onerror=' in html
    assert hostile not in html


def test_a_construction_hit_with_one_image_captions_it_with_its_number(alice_client):
    instance = builders.instance(urls=["https://example.org/one.png"])
    instance.stage = "captioning"
    instance.save(update_fields=["stage"])
    batch = batch_create_from_rows(hit_type="instruction_caption", title="t", min_seconds=0,
                                   rows=[{"instance": str(instance.uuid)}])
    gallery = _gallery(_page(alice_client, batch))
    assert 'alt="Image"' in gallery
    assert re.search(r'data-zoom-label="zoom">Image 1 · <a', gallery)


def test_the_review_page_shows_the_same_gallery(analyst_client):
    comparison = _comparison("https://example.org/r1.png", "https://example.org/r2.png")
    page = analyst_client.get(reverse("review:item", args=[comparison.uuid]))
    assert page.status_code == 200
    gallery = _gallery(page.content.decode())
    assert re.findall(r'alt="([^"]*)"', gallery) == ["Image 1 of 2", "Image 2 of 2"]
    assert re.findall(r'data-image="(\d)"', gallery) == ["1", "2"]
