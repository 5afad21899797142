"""python manage.py pipeline_advance [--stage STAGE] [--limit N] [--fetch-images]"""
from django.core.management.base import BaseCommand

from annotation.core.background import wait_for_jobs
from annotation.pipeline.services import PUSHABLE, images_fetch_queue, pipeline_push
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Push pipeline stages forward: queue caption/verification tasks and the LLM step."

    def add_arguments(self, parser):
        parser.add_argument("--stage", choices=PUSHABLE, action="append",
                            help="Stage to push (repeatable; default: all)")
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--fetch-images", action="store_true",
                            help="Also queue downloads of pending image URLs (of every "
                                 "study: images are shared)")
        add_study_argument(parser)

    def handle(self, *args, stage, limit, fetch_images, **opts):
        study = study_option(opts)
        for name in stage or PUSHABLE:
            self.stdout.write(f"{name}: queued {pipeline_push(name, limit=limit, study=study)}")
        if fetch_images:
            self.stdout.write(f"images: queued {images_fetch_queue(limit=limit)} downloads")
        wait_for_jobs()  # without a broker the jobs are this process's threads: finish them
