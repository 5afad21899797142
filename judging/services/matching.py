"""Finding the benchmark instance a row of an outside file is about.

Two identity rules, one per kind of file:

- **By id** (``find_item``): a row's ``item_id`` is the item's identity within its dataset (the
  instance's ``source``): our public uuid, or the ``external_id`` stored for that dataset. Each
  id is its own instance even when instruction text repeats across ids — public pairwise test
  sets ask the same question of many inputs and model pairs. An id stored with another
  instruction is refused (two files reusing ids "0", "1", … must not merge).
- **By content** (``find``): an instruction together with its image URLs; the instruction alone
  only when it is unique. Used for files without ids (VisIT-Bench's human-preference CSV) and as
  the fallback of the predictions import.
"""
from collections import defaultdict

from annotation.content.imports.images import image_for_url
from annotation.models import Instance, InstanceImage

IMPORT_SOURCE = "import"  # the dataset of items created from a file that names none


class Unknown(str):
    """A reason that means "no such instance" (an importer may create it), as opposed to a
    conflict (ambiguous or inconsistent id), which it must not paper over."""


def _norm(text: str) -> str:
    return " ".join((text or "").split())


def same_instruction(text: str, instance: Instance) -> bool:
    """Whether ``text`` is ``instance``'s instruction (whitespace folded)."""
    return _norm(text) == _norm(instance.instruction)


class InstanceIndex:
    """All instances (of one study, when given), indexed once per import (an import is one
    query, not one per row)."""

    def __init__(self, study=None):
        self.by_uuid: dict[str, Instance] = {}
        self.by_source_id: dict[tuple[str, str], Instance] = {}
        self.by_external_id: dict[str, list[Instance]] = defaultdict(list)
        self.by_text: dict[tuple, list[Instance]] = defaultdict(list)
        self.by_instruction: dict[str, list[Instance]] = defaultdict(list)
        urls = defaultdict(list)
        images = InstanceImage.objects.select_related("image")
        instances = Instance.objects.select_related("family")
        if study is not None:
            images = images.filter(instance__study=study)
            instances = instances.filter(study=study)
        for ii in images.order_by("instance_id", "position"):
            urls[ii.instance_id].append(ii.image.source_url or ii.image.display_url)
        for instance in instances:
            self.add(instance, urls.get(instance.pk, []))

    def add(self, instance: Instance, image_urls: list[str]) -> None:
        self.by_uuid[str(instance.uuid)] = instance
        if instance.external_id:
            self.by_source_id[(instance.source, instance.external_id)] = instance
            self.by_external_id[instance.external_id].append(instance)
        instruction = _norm(instance.instruction)
        self.by_text[(instruction, tuple(image_urls))].append(instance)
        self.by_instruction[instruction].append(instance)

    def _by_id(self, item_id: str, dataset: str | None) -> tuple[Instance | None, str]:
        item_id = str(item_id).strip()
        if item_id in self.by_uuid:
            return self.by_uuid[item_id], ""
        if dataset:
            found = self.by_source_id.get((dataset, item_id))
            return found, "" if found else Unknown(f"no instance with id {item_id!r} in "
                                                   f"dataset {dataset!r}")
        hits = self.by_external_id.get(item_id, [])
        if len(hits) > 1:
            sources = sorted({i.source for i in hits})
            return None, (f"id {item_id!r} names instances of several datasets {sources}; "
                          "say which (the dataset column or --dataset)")
        return (hits[0], "") if hits else (None, Unknown(f"no instance with id {item_id!r}"))

    def find_item(self, *, item_id: str, dataset: str | None = None,
                  instruction: str = "") -> tuple[Instance | None, str]:
        """The instance a row's ``item_id`` names (see the module docstring), or (None, why)."""
        found, why = self._by_id(item_id, dataset)
        if found is not None and instruction and not same_instruction(instruction, found):
            return None, (f"id {item_id!r} is stored with another instruction "
                          f"({found.instruction[:60]!r}); ids from another file? give its "
                          "dataset name (the dataset column or --dataset)")
        return found, why

    def find(self, *, item_id: str = "", instruction: str = "",
             image_urls: list[str] | None = None) -> tuple[Instance | None, str]:
        """By id when one is given and known, else by content: (instance, "") or (None, why)."""
        if item_id:
            found, why = self._by_id(item_id, None)
            if found is not None or not instruction:
                return found, why
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
        return None, Unknown("no instance with this instruction"
                             + (" and images" if image_urls else ""))

    def create(self, *, item_id: str, instruction: str, image_urls: list[str],
               conversation: bool = False, dataset: str | None = None) -> Instance:
        """An instance for an imported item we do not hold yet (images stored as URLs only)."""
        kind = (Instance.Kind.CONVERSATION if conversation
                else Instance.Kind.MULTI if len(image_urls) > 1 else Instance.Kind.SINGLE)
        instance = Instance.objects.create(
            kind=kind, instruction=instruction, source=dataset or IMPORT_SOURCE,
            external_id=item_id or "", stage=Instance.Stage.DONE)
        for position, url in enumerate(image_urls):
            InstanceImage.objects.create(instance=instance, image=image_for_url(url),
                                         position=position)
        self.add(instance, list(image_urls))
        return instance
