"""Demo extension: cache reference metrics for the demo responses and build one report, so
`make demo` opens /reports/ with a finished report (the lead wires this into load_demo)."""
from . import metrics
from .models import Report
from .services.metric_scores import LEXICAL_METRICS
from .services.reports import report_generate

DEMO_TITLE = "Demo: judges and metrics vs the crowd"


def extend_demo(rnd=None) -> dict:
    """Idempotent: does nothing when the demo report exists. BERTScore is left out so the demo
    needs no torch model load; add it from the reports page."""
    existing = Report.objects.filter(title=DEMO_TITLE, status=Report.Status.DONE).first()
    if existing is not None:
        return {"created": False, "report": str(existing.uuid)}
    seed = rnd.randrange(1000) if rnd is not None else 0
    names = list(LEXICAL_METRICS)
    try:
        metrics.find_wordnet()
    except metrics.WordNetMissing:  # METEOR needs `make wordnet`; the rest works without
        names.remove("meteor")
    report = report_generate({"metrics": names, "seed": seed,
                              "bootstrap_rounds": 500}, title=DEMO_TITLE, created_by="demo")
    return {"created": True, "report": str(report.uuid),
            "items": report.snapshot["counts"]["items"],
            "metric_scores": report.snapshot["database"]["metric_scores"]}
