"""Images: register a URL without touching the network, store validated bytes (sha256 dedupe,
thumbnail), and fetch a pending URL through the SSRF-safe fetcher.

Offline machines must still import: registering a URL only writes a ``pending`` row; fetching
is a separate step (lazy, Celery) that marks the row ``ok`` or ``failed`` with the reason.
"""
from __future__ import annotations

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from annotation.content.formats.common import image_url_problem
from annotation.core import image_fetch
from annotation.core.image_fetch import FetchedImage, ImageFetchError
from annotation.models import Image, InstanceImage, InstructionFamily

_EXT = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp"}


def fetch_options() -> dict:
    """Caps from settings; loopback only when the (code-only) test flag is on."""
    return {
        "timeout": settings.IMAGE_FETCH_TIMEOUT,
        "max_bytes": settings.IMAGE_MAX_BYTES,
        "max_pixels": settings.IMAGE_MAX_PIXELS,
        "allow_loopback_for_tests": bool(getattr(settings, "IMAGE_FETCH_ALLOW_LOOPBACK", False)),
    }


def image_for_url(url: str, *, license: str = "", attribution: str = "") -> Image:
    """The image row for ``url`` (created ``pending`` if new); no network access. Refuses
    anything but an http(s) URL (callers check first, to name the bad row)."""
    if (problem := image_url_problem(url)) is not None:
        raise ValueError(problem)
    image = Image.objects.filter(source_url=url).order_by("pk").first()
    if image is None:
        image = Image.objects.create(source_url=url, license=license, attribution=attribution)
    return image


def image_for_external_id(external_id: str) -> Image:
    """A placeholder for a file we do not have (e.g. a ConvBench image missing from the folder)."""
    image = Image.objects.filter(external_id=external_id, source_url="").order_by("pk").first()
    if image is None:
        image = Image.objects.create(
            external_id=external_id, fetch_error="no file for this image id"
        )
    return image


def image_store_bytes(
    data: bytes, *, source_url: str = "", external_id: str = "", license: str = "",
    attribution: str = "",
) -> Image:
    """Validate ``data`` (Pillow, pixel cap) and store it once per sha256, with a thumbnail."""
    fetched = image_fetch.validate_image_bytes(
        data, settings.IMAGE_MAX_PIXELS, max_bytes=settings.IMAGE_MAX_BYTES
    )
    existing = Image.objects.filter(sha256=fetched.sha256).first()
    if existing is not None:
        return existing
    image = Image(source_url=source_url, external_id=external_id, license=license,
                  attribution=attribution)
    _fill(image, fetched)
    image.save()
    return image


def image_fetch_and_store(url: str, *, license: str = "", attribution: str = "") -> Image:
    """Fetch ``url`` now (SSRF-safe) and store it; raises ``ImageFetchError`` when refused."""
    fetched = image_fetch.fetch_image(url, **fetch_options())
    existing = Image.objects.filter(sha256=fetched.sha256).first()
    if existing is not None:
        return existing
    image = Image.objects.filter(source_url=url, sha256__isnull=True).first() or Image(
        source_url=url, license=license, attribution=attribution
    )
    _fill(image, fetched)
    image.license = image.license or license
    image.attribution = image.attribution or attribution
    image.save()
    return image


def image_fetch_pending(image_id: int) -> str:
    """Fetch one ``pending``/``failed`` image; safe to run twice. Returns the new status.

    When the bytes equal an image we already hold, the instances and families using this row are
    pointed at that image and this row is deleted (sha256 dedupe).
    """
    image = Image.objects.filter(pk=image_id).first()
    if image is None or image.fetch_status == Image.FetchStatus.OK or not image.source_url:
        return image.fetch_status if image else "missing"
    try:
        fetched = image_fetch.fetch_image(image.source_url, **fetch_options())
    except ImageFetchError as exc:
        Image.objects.filter(pk=image.pk).exclude(fetch_status=Image.FetchStatus.OK).update(
            fetch_status=Image.FetchStatus.FAILED, fetch_error=str(exc)[:300]
        )
        return Image.FetchStatus.FAILED
    with transaction.atomic():
        image = Image.objects.select_for_update().get(pk=image.pk)
        if image.fetch_status == Image.FetchStatus.OK:
            return image.fetch_status
        twin = Image.objects.filter(sha256=fetched.sha256).exclude(pk=image.pk).first()
        if twin is not None:
            InstanceImage.objects.filter(image=image).update(image=twin)
            for family in InstructionFamily.objects.filter(seed_images=image):
                family.seed_images.remove(image)
                family.seed_images.add(twin)
            image.delete()
            return Image.FetchStatus.OK
        _fill(image, fetched)
        image.save()
    return Image.FetchStatus.OK


def _fill(image: Image, fetched: FetchedImage) -> None:
    ext = _EXT.get(fetched.format, "img")
    name = fetched.sha256[:24]
    image.sha256 = fetched.sha256
    image.width, image.height, image.format = fetched.width, fetched.height, fetched.format
    image.fetch_status, image.fetch_error = Image.FetchStatus.OK, ""
    image.file.save(f"{name}.{ext}", ContentFile(fetched.bytes), save=False)
    thumb, thumb_format = image_fetch.make_thumbnail(fetched.bytes)
    image.thumbnail.save(f"{name}.{'png' if thumb_format == 'PNG' else 'jpg'}",
                         ContentFile(thumb), save=False)
