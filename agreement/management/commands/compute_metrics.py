"""python manage.py compute_metrics [--metrics bleu4,rouge_l,...] [--seed N] [--bert-model M]
[--bert-layers L] [--queue]"""
from django.core.management.base import BaseCommand, CommandError

from agreement import metric_provenance
from agreement.services.metric_scores import DEFAULT_METRICS, metric_run_start, metric_run_work
from agreement.tasks import compute_metrics
from annotation.core.jobs import JobsBusy
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Score every response of the study that has a reference with the reference "
            "metrics, against the study's reference (cached).")

    def add_arguments(self, parser):
        parser.add_argument("--metrics", default=",".join(DEFAULT_METRICS))
        parser.add_argument("--seed", type=int, default=0, help="Seed of the random metric")
        parser.add_argument("--bert-model", default=None, help="BERTScore model (offline)")
        parser.add_argument("--bert-layers", type=int, default=None,
                            help="BERTScore layer (default: bert_score's for the model)")
        parser.add_argument("--queue", action="store_true",
                            help="Queue the Celery task for a worker instead of working here "
                                 "(without a broker the command works the run itself)")
        add_study_argument(parser)

    def handle(self, *args, **o):
        study = study_option(o)
        metrics = [m.strip() for m in o["metrics"].split(",") if m.strip()]
        options = {"seed": o["seed"],
                   **({"bert_model": o["bert_model"]} if o["bert_model"] else {}),
                   **({"bert_num_layers": o["bert_layers"]} if o["bert_layers"] else {})}
        # Without a broker there is no worker to queue for: the command does the work itself.
        queue = o["queue"] and not compute_metrics.app.conf.task_always_eager
        try:
            run = metric_run_start(metrics, options=options, created_by="manage.py",
                                   queue=queue, study=study)
        except (ValueError, RuntimeError) as exc:
            raise CommandError(str(exc)) from exc
        except JobsBusy as exc:  # --queue: admitted by the job caps
            raise CommandError(exc.message) from exc
        if queue:
            self.stdout.write(f"Queued metric run {run.uuid} ({run.total} scores)")
        else:
            run = metric_run_work(run.pk)
            self.stdout.write(f"Metric run {run.uuid}: {run.done} scores, {run.cached} from cache")
        for line in metric_provenance.notes(metric_provenance.provenance(run.configs)):
            self.stdout.write(self.style.WARNING(line))
