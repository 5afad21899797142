"""Finding the benchmark instance a row of an outside file is about.

Rows name an instance by id (our public uuid or the source's ``external_id``), or by its
instruction together with its image URLs; the instruction alone is used only when it is unique.
"""
from collections import defaultdict

from annotation.imports.images import image_for_url
from annotation.models import Instance, InstanceImage


def _norm(text: str) -> str:
    return " ".join((text or "").split())


class InstanceIndex:
    """All instances, indexed once per import (an import is one query, not one per row)."""

    def __init__(self):
        self.by_id: dict[str, Instance] = {}
        self.by_text: dict[tuple, list[Instance]] = defaultdict(list)
        self.by_instruction: dict[str, list[Instance]] = defaultdict(list)
        urls = defaultdict(list)
        for ii in InstanceImage.objects.select_related("image").order_by("instance_id", "position"):
            urls[ii.instance_id].append(ii.image.source_url or ii.image.display_url)
        for instance in Instance.objects.select_related("family"):
            self.add(instance, urls.get(instance.pk, []))

    def add(self, instance: Instance, image_urls: list[str]) -> None:
        self.by_id[str(instance.uuid)] = instance
        if instance.external_id:
            self.by_id.setdefault(instance.external_id, instance)
        instruction = _norm(instance.instruction)
        self.by_text[(instruction, tuple(image_urls))].append(instance)
        self.by_instruction[instruction].append(instance)

    def find(self, *, item_id: str = "", instruction: str = "",
             image_urls: list[str] | None = None) -> tuple[Instance | None, str]:
        """(instance, "") or (None, why not)."""
        if item_id:
            found = self.by_id.get(str(item_id).strip())
            if found is not None:
                return found, ""
            if not instruction:
                return None, f"no instance with id {item_id!r}"
        instruction = _norm(instruction)
        if not instruction:
            return None, "no item_id and no instruction"
        if image_urls:
            hits = self.by_text.get((instruction, tuple(image_urls)), [])
            if len(hits) == 1:
                return hits[0], ""
            if len(hits) > 1:
                return None, "several instances have this instruction and these images"
        hits = self.by_instruction.get(instruction, [])
        if len(hits) == 1 and not image_urls:
            return hits[0], ""
        if len(hits) > 1:
            return None, "the instruction matches several instances (give item_id or images)"
        return None, "no instance with this instruction" + (" and images" if image_urls else "")

    def create(self, *, item_id: str, instruction: str, image_urls: list[str],
               conversation: bool = False) -> Instance:
        """An instance for an imported item we do not hold yet (images stored as URLs only)."""
        kind = (Instance.Kind.CONVERSATION if conversation
                else Instance.Kind.MULTI if len(image_urls) > 1 else Instance.Kind.SINGLE)
        instance = Instance.objects.create(
            kind=kind, instruction=instruction, source="import", external_id=item_id or "",
            stage=Instance.Stage.DONE)
        for position, url in enumerate(image_urls):
            InstanceImage.objects.create(instance=instance, image=image_for_url(url),
                                         position=position)
        self.add(instance, list(image_urls))
        return instance
