"""Build a rubric batch (responses) or a feedback batch (pairs of score judgments of the same
response) from a model and split, or from a file of ids; the batch is created as a draft."""
from decimal import Decimal
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judging.services.rating_batches import (
    SPLITS,
    RatingBatchError,
    feedback_batch_create,
    responses_selected,
    rubric_batch_create,
    score_judgments_selected,
)
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Make a rubric-score batch from responses, or a which-feedback-is-better batch from "
            "pairs of score judgments of the same response (sides at random).")

    def add_arguments(self, parser):
        parser.add_argument("--kind", choices=["rubric", "feedback"], required=True)
        parser.add_argument("--title", required=True)
        parser.add_argument("--model", help="Only responses of this model (name)")
        parser.add_argument("--split", default="all", help=f"One of: {', '.join(SPLITS)}")
        parser.add_argument("--ids", type=Path, help="File of response (rubric) or judgment "
                            "(feedback) uuids, one per line; # starts a comment")
        parser.add_argument("--sources", nargs="*", help="Feedback: only judgments by these "
                            "sources (human, judge names)")
        parser.add_argument("--n", type=int, default=5, help="Assignments per task")
        parser.add_argument("--reward", type=Decimal, default=Decimal("0"))
        parser.add_argument("--lease", type=int, default=1800, help="Lease in seconds")
        parser.add_argument("--seed", type=int, help="Feedback: seed of the side draw")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        study = study_option(opts)
        ids = self._ids(opts["ids"]) if opts["ids"] else None
        batch_options = {"title": opts["title"], "assignments_per_task": opts["n"],
                         "reward": opts["reward"], "lease_seconds": opts["lease"],
                         "study": study}
        try:
            if opts["kind"] == "rubric":
                batch = rubric_batch_create(
                    responses=responses_selected(model=opts["model"], split=opts["split"],
                                                 ids=ids, study=study), **batch_options)
            else:
                batch = feedback_batch_create(
                    judgments=score_judgments_selected(model=opts["model"], split=opts["split"],
                                                       ids=ids, sources=opts["sources"],
                                                       study=study),
                    seed=opts["seed"], **batch_options)
        except RatingBatchError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Batch {batch.uuid} ({batch.hit_type}, {batch.title}): "
                          f"{batch.tasks.count()} tasks, a draft.")

    @staticmethod
    def _ids(path: Path) -> list[str]:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        return [line.split("#", 1)[0].strip() for line in lines
                if line.split("#", 1)[0].strip()]
