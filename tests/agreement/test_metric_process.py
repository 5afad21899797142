"""METEOR and ROUGE-L (the metrics importing NLTK) are cached from a child process
(``agreement.metrics.isolated``): the same floats to the bit as in-process, never scored in the
caching process, and a failing child is a clear error that writes nothing."""
import dataclasses
import random
import sys

import pytest

from agreement import metrics
from agreement.metrics import isolated
from agreement.models import MetricRun, MetricScore, Report
from agreement.services import metric_scores as svc
from agreement.services.reports import report_generate
from judging.models import Response

WORDS = ("a man in a red jacket rides a bicycle down the busy city street past parked cars "
         "while two children with balloons wait at the crossing, it's raining; the dog barks "
         "running runner ran quickly quick happily photograph photographs café naïve well-known "
         "don't 3 42 percent!").split()


def _texts(rnd: random.Random, n: int) -> list[str]:
    return [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 30))).capitalize()
            + rnd.choice((".", "!", "", "?")) for _ in range(n)]


def _pairs(n: int = 1_100, seed: int = 0) -> tuple[list[str], list]:
    """Caption-like candidates against one reference or several (more than one chunk)."""
    rnd = random.Random(seed)
    candidates = _texts(rnd, n)
    references = [refs[0] if len(refs) == 1 else refs
                  for refs in (_texts(rnd, rnd.randint(1, 3)) for _ in range(n))]
    return candidates, references


@pytest.mark.parametrize("name,options", [("meteor", {}), ("rouge_l", {"use_stemmer": True})])
def test_the_child_scores_bit_for_bit_as_in_process(name, options):
    candidates, references = _pairs()
    in_process = metrics.get(name).fn(candidates, references, **options)
    with isolated.MetricProcess() as child:
        from_child = child.score(name, candidates, references, **options)
        assert child.settings(name, {}) == metrics.get(name).settings({})
        assert child.pid is not None
    assert [s.hex() for s in from_child] == [float(s).hex() for s in in_process]


def test_an_error_in_the_child_is_raised_here_with_its_traceback():
    with isolated.MetricProcess() as child, \
            pytest.raises(ValueError, match="a reference list is empty") as raised:
        child.score("meteor", ["a cat"], [[]])
    assert "in the metric process (score meteor)" in "".join(raised.value.__notes__)


def _in_process_fails(monkeypatch):
    """The NLTK metrics fail if scored, or their settings read, in this process (the child is
    a fresh interpreter, which the patch does not reach)."""
    def fail(*args, **kwargs):
        raise AssertionError("NLTK used in the caching process")

    for name in ("meteor", "rouge_l"):
        monkeypatch.setitem(metrics.METRICS, name,
                            dataclasses.replace(metrics.METRICS[name], fn=fail, settings=fail))


@pytest.mark.django_db
def test_caching_scores_meteor_and_rouge_in_the_child(study, monkeypatch):
    responses = list(Response.objects.select_related("instance").order_by("pk"))
    candidates = [r.text for r in responses]
    references = [r.instance.reference_output for r in responses]
    expected = {"meteor": metrics.meteor(candidates, references),
                "rouge_l": metrics.rouge_l(candidates, references)}
    _in_process_fails(monkeypatch)
    summary, scores = svc.metric_scores_ensure(["rouge_l", "meteor", "bleu4"])
    for name, want in expected.items():
        assert summary[name]["computed"] == len(responses) == 8
        assert [scores[name][r.pk] for r in responses] == want
        stored = dict(MetricScore.objects.filter(metric=name).values_list("response_id",
                                                                          "score"))
        assert [stored[r.pk] for r in responses] == want


@pytest.mark.django_db
def test_a_report_reads_the_nltk_metrics_settings_from_the_child(study, monkeypatch):
    settings = {name: metrics.get(name).settings({}) for name in ("meteor", "rouge_l")}
    _in_process_fails(monkeypatch)
    report = report_generate({"metrics": ["meteor", "rouge_l"], "seed": 0,
                              "bootstrap_rounds": 20})
    assert report.status == Report.Status.DONE
    for name, want in settings.items():
        assert report.data["metrics"][name]["config"] == {"metric": name,
                                                          "version": svc.METRIC_VERSION, **want}


def _crashing_child(self):
    """A metric process that dies on its first request (as if killed for memory)."""
    import subprocess

    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read(1); "
                             "sys.exit(3)"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


@pytest.mark.django_db
def test_a_child_that_dies_fails_the_run_clearly_and_writes_no_score(study, monkeypatch):
    run = svc.metric_run_start(["bleu4", "meteor"])
    monkeypatch.setattr(isolated.MetricProcess, "_start", _crashing_child)
    with pytest.raises(isolated.MetricProcessError, match=r"exited unexpectedly \(exit code 3\)"):
        svc.metric_run_work(run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.FAILED
    assert "exited unexpectedly" in run.error
    assert not MetricScore.objects.exists()  # the NLTK metric comes first: nothing scored


NO_WORDNET = """
import nltk
from agreement.metrics import meteor_nltk
meteor_nltk.DEFAULT_NLTK_DATA = meteor_nltk.Path("/nonexistent")
nltk.data.path[:] = []
"""


@pytest.mark.django_db
def test_without_wordnet_the_childs_error_reaches_the_caller_and_nothing_is_recorded(
        study, monkeypatch, tmp_path):
    """The child's own exception (WordNetMissing, raised in the child only: its startup hides
    every WordNet) reaches the caller, before any run or score is recorded."""
    (tmp_path / "sitecustomize.py").write_text(NO_WORDNET)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    with pytest.raises(metrics.WordNetMissing, match="make wordnet") as raised:
        svc.metric_run_start(["meteor"])
    assert "in the metric process (settings meteor)" in "".join(raised.value.__notes__)
    with pytest.raises(metrics.WordNetMissing):
        svc.metric_scores_ensure(["bleu4", "meteor"])
    assert not MetricRun.objects.exists()
    assert not MetricScore.objects.exists()
