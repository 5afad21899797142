"""The report's wide tables read on a 1,280 px page: a table too wide for it is shown as one
card per row (every column still there, labelled), narrow tables stay tables, HIT types are
named by the registry's titles, and the heatmap's labels are set large enough to read."""
import re

import pytest
from django.template.loader import render_to_string

from agreement.reports import plots
from agreement.reports.html import hit_type_label, table_block
from agreement.services.reports import report_generate
from annotation.engine.hit_types import get_hit_type

pytestmark = pytest.mark.django_db


def test_a_table_too_wide_for_the_page_becomes_one_card_per_row():
    columns = [f"stat_{i}" for i in range(18)]
    rows = [{"source": s, **{c: 0.123456 for c in columns}} for s in ("J1", "J2")]
    block = table_block("accuracy", rows)
    assert block["cards"]
    html = render_to_string("agreement/report_table.html", {"table": block, "small_n": 10})
    assert "<table" not in html
    assert html.count('<article class="row-card') == 2
    assert html.count("<dt>") == 2 * 18  # every column of every row, labelled
    narrow = table_block("paired_tests", [{"judge_a": "J1", "judge_b": "J2", "n": 30}])
    assert not narrow["cards"]
    assert "<table" in render_to_string("agreement/report_table.html",
                                        {"table": narrow, "small_n": 10})


def test_hit_types_are_named_by_the_registry():
    title = get_hit_type("pairwise_ab").title
    assert title and title != "pairwise_ab"
    assert hit_type_label("pairwise_ab") == title
    assert hit_type_label("scores (all)") == "scores (all)"  # not a HIT type: as it is
    cell = table_block("reliability", [{"hit_type": "pairwise_ab", "n_items": 4}])
    assert cell["rows"][0]["cells"][0] == {"text": title, "title": "pairwise_ab", "cls": "txt"}


def test_report_page_shows_the_accuracy_table_as_cards_and_hit_titles(study, analyst_client):
    report = report_generate({"metrics": ["length"], "bootstrap_rounds": 20, "seed": 0})
    page = analyst_client.get(f"/reports/{report.uuid}/").content.decode()
    assert re.search(r'<div class="row-cards" id="table-accuracy" data-columns="1\d"', page)
    assert "(pairwise_ab)" not in page and "<td class=\"txt\">pairwise_ab" not in page


def test_heatmap_labels_are_readable():
    fig = plots.agreement_heatmap("all", {"sources": ["human", "J1"],
                                          "matrix": [[1, 0.5], [0.5, 1]],
                                          "counts": [[4, 4], [4, 4]]})
    ax = fig.axes[0]
    sizes = [t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert min(sizes) >= 11
    assert min(t.get_fontsize() for t in ax.texts) >= 10
