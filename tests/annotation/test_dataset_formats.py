"""Tests for annotation.content.formats on the real benchmark files and on bad input."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.content.formats import (
    CONVBENCH_COLUMNS,
    VISIT_MULTI_COLUMNS,
    VISIT_SINGLE_COLUMNS,
    ConvBenchRecord,
    FormatError,
    HumanVerification,
    ImageRef,
    PrometheusRecord,
    Rubric,
    VisitDataset,
    VisitRecord,
    build_prometheus_prompt,
    human_verification_rates,
    parse_convbench_xlsx,
    parse_prometheus_jsonl,
    parse_visit_csv,
    write_convbench_xlsx,
    write_prometheus_jsonl,
    write_visit_csv,
)
from tests.support.shared_data import SHARED_DATA

DATA = SHARED_DATA
SINGLE = DATA / "visit_bench" / "visit_fully_annotated_example.csv"
MULTI = DATA / "visit_bench" / "visit_bench_multi_images.csv"
CONVBENCH = DATA / "convbench" / "ConvBench.xlsx"
CONVBENCH_IMAGES = DATA / "convbench" / "images"
PROMETHEUS = DATA / "prometheus_vision" / "sample_eval_data.jsonl"


@pytest.fixture(scope="module")
def data_dir():
    if not DATA.is_dir():
        pytest.skip(f"real benchmark data not available at {DATA}")
    return DATA


@pytest.fixture(scope="module")
def multi(data_dir):
    return parse_visit_csv(MULTI)


@pytest.fixture(scope="module")
def convbench(data_dir):
    return parse_convbench_xlsx(CONVBENCH, CONVBENCH_IMAGES)


# ====================================================================== real files


def test_visit_single_real_file(data_dir):
    ds = parse_visit_csv(SINGLE)
    # The file has 18 text lines but 10 records: several answers span lines.
    # (The data README's "17 instances" is the line count minus the header.)
    assert ds.format == "single"
    assert len(ds.records) == 10
    first = ds.records[0]
    assert first.category == "Animals"
    assert first.instruction == "What is the relationship between the animals in the image?"
    assert first.images[0].url.endswith("/Animals/9d473083f5b0286d.png")
    assert first.images[0].caption.startswith("In this picture I can see there are a few sheep")
    assert first.candidate_reference is None and first.human_verification is None
    counting = ds.records[5]
    assert counting.category == "Counting"
    assert "$25 + $10 + $10 = $45." in counting.reference_output  # multi-line cell kept intact
    assert ds.records[8].category == "Gestures Understanding"
    assert " " in ds.records[1].images[0].url  # "Architectural Styles/": spaces kept verbatim


def test_visit_multi_real_file(multi):
    assert multi.format == "multi"
    assert len(multi.records) == 100
    assert Counter(r.category for r in multi.records) == {
        c: 10
        for c in ["rcc", "spot_the_diff", "irfl_metaphor", "winogavil", "irfl_idiom",
                  "nlvr2", "imagecode", "vasr", "pickapick", "winoground"]
    }
    assert Counter(len(r.images) for r in multi.records) == {2: 50, 4: 20, 5: 10, 7: 10, 10: 10}
    first = multi.records[0]
    assert [i.url.rsplit("/", 1)[1] for i in first.images] == [
        "450_rcc_clevr_default_006594.png",
        "451_rcc_clevr_semantic_006594.png",
    ]
    assert first.reference_output == "the tiny cylinder changed to brown"
    assert first.candidate_reference.startswith("In the BEFORE image, there is a small matte purple cylinder")
    assert first.images[1].blip2_caption == "a 3d model of an egg, a cube and a cuboid"
    assert first.human_verification == HumanVerification(True, False, False)
    # NaN padding (10 entries) is gone: exactly one caption per image, all present.
    assert all(i.caption for r in multi.records for i in r.images)
    # imagecode: 10 images, original gold label kept as reference_output.
    imagecode = multi.records[60]
    assert imagecode.category == "imagecode" and len(imagecode.images) == 10
    assert imagecode.reference_output == "Image 10"
    # Blank reference_output (irfl_metaphor, winogavil, irfl_idiom) -> None.
    assert Counter(r.category for r in multi.records if r.reference_output is None) == {
        "irfl_metaphor": 10, "winogavil": 10, "irfl_idiom": 10
    }
    # '["",""]' blip2 cells -> None captions.
    assert any(i.blip2_caption is None for r in multi.records for i in r.images)
    assert all(r.public_images_metadata == {} for r in multi.records)


def test_visit_multi_human_ratings_match_paper_table_2(multi):
    """VisIT-Bench Table 2, multi-image column: 63.0 / 6.0 / 30.0 (%)."""
    rates = human_verification_rates(multi.records)
    assert rates["n"] == 100
    assert rates["gpt4_correct"] == pytest.approx(63.0)
    assert rates["problem_in_caption"] == pytest.approx(6.0)
    assert rates["problem_in_gpt4"] == pytest.approx(30.0)
    # The flags are mutually exclusive; one rcc row (spreadsheet row 4) has none set.
    flags = [r.human_verification for r in multi.records]
    assert all(h.gpt4_correct + h.problem_in_caption + h.problem_in_gpt4 <= 1 for h in flags)
    none_set = [i + 2 for i, h in enumerate(flags) if not (h.gpt4_correct or h.problem_in_caption or h.problem_in_gpt4)]
    assert none_set == [4]


@pytest.mark.parametrize("path", [SINGLE, MULTI], ids=["single", "multi"])
def test_visit_round_trip(data_dir, path):
    parsed = parse_visit_csv(path)
    written = write_visit_csv(parsed)
    assert parse_visit_csv(written) == parsed
    assert parse_visit_csv(written.encode("utf-8")) == parsed
    assert parse_visit_csv(io.StringIO(written)) == parsed


def test_convbench_real_file(convbench):
    records = convbench.records
    # The xlsx holds 578 conversations (IDs 1..578); the paper says 577.
    assert len(records) == 578
    assert [r.id for r in records] == list(range(1, 579))
    assert len({r.image_id for r in records}) == 574
    first = records[0]
    assert first.image_id == "30_tested_skill_catchy_titles_4ca5b82782903f1c.png"
    assert first.turns[0] == "What kind of vehicle is shown the image? What texts are written on the car?"
    assert first.turns[2].startswith("Combine that with the previous question, create a slogan for the hummer")
    assert first.image_path == CONVBENCH_IMAGES / first.image_id
    assert records[525].id == 526
    assert records[525].turns[0] == "What is the name of this historic monument？"  # full-width "？"
    # Only 40 images ship with the data: 534 distinct image ids have no file.
    assert sum(r.image_path is not None for r in records) == 40
    assert len(convbench.missing_image_ids) == 534
    assert "303_tested_skill_tour_guide_architecture-travel-statue-monument.png" in convbench.missing_image_ids


def test_convbench_without_images_dir(data_dir):
    ds = parse_convbench_xlsx(CONVBENCH)
    assert len(ds.records) == 578
    assert ds.missing_image_ids == [] and all(r.image_path is None for r in ds.records)


def test_convbench_round_trip(convbench):
    written = write_convbench_xlsx(convbench.records)
    again = parse_convbench_xlsx(written, CONVBENCH_IMAGES)
    assert again == convbench
    workbook = openpyxl.load_workbook(io.BytesIO(written), read_only=True)
    assert workbook.sheetnames == ["multi_turn_benchmark"]
    header = next(workbook["multi_turn_benchmark"].iter_rows(values_only=True))
    assert tuple(header) == CONVBENCH_COLUMNS
    workbook.close()


def test_prometheus_real_file(data_dir):
    records = parse_prometheus_jsonl(PROMETHEUS)
    assert [r.image for r in records] == ["../mmmu/9900.png", "../mmmu/3215.png", "../train2017/000000562014.jpg"]
    first = records[0]
    assert first.instruction.startswith("Describe in detail the molecular structure depicted")
    assert first.response.startswith("The molecular structure depicted is an organic compound")
    assert first.reference_answer.startswith("The image displays a molecular structure")
    assert first.rubric.criteria == (
        "Evaluates the model's ability to identify and describe the objects or subjects presented in the image accurately."
    )
    assert first.rubric.score_descriptions[0] == (
        "The model fails to provide any correct identification or description of the image content."
    )
    assert len(first.rubric.score_descriptions) == 5
    # Every part equals the file's own orig_* copy (the parser checks this too).
    raw = [json.loads(line) for line in PROMETHEUS.read_text(encoding="utf-8").splitlines() if line]
    for record, obj in zip(records, raw, strict=True):
        assert record.instruction == obj["orig_instruction"]
        assert record.response == obj["original_response"]
        assert record.reference_answer == obj["orig_reference_answer"]
        assert record.rubric.score_descriptions[4] == obj["orig_score5_description"]
        assert build_prometheus_prompt(record) == obj["instruction"]


def test_prometheus_round_trip(data_dir):
    text = PROMETHEUS.read_text(encoding="utf-8")
    records = parse_prometheus_jsonl(text)
    written = write_prometheus_jsonl(records)
    assert parse_prometheus_jsonl(written) == records
    assert [json.loads(x) for x in written.splitlines()] == [json.loads(x) for x in text.splitlines() if x]


# ====================================================================== malformed input


def _visit_multi_row(**overrides) -> dict:
    row = {
        "instruction_category": "nlvr2",
        "images": json.dumps(["https://example.com/a.png", "https://example.com/b.png"]),
        "is_multiple_images": "True",
        "instruction": "Is the left image brighter?",
        "gpt4_prediction": "Yes.",
        "images_dense_captions": json.dumps(["A bright room.", "A dark room.", float("nan")]),
        "images_blip2_captions": json.dumps(["a room", "a room"]),
        "reference_output": "True",
        "human_ratings_gpt4_correct": "True",
        "human_ratings_problem_in_caption": "False",
        "human_ratings_problem_in_gpt4": "False",
        "public_images_metadata": "{}",
    }
    row.update(overrides)
    return row


def _csv(rows: list[dict], columns=VISIT_MULTI_COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _error(parse, source) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse(source)
    return info.value


def test_synthetic_multi_file_parses():
    ds = parse_visit_csv(_csv([_visit_multi_row(), _visit_multi_row(human_ratings_gpt4_correct="",
                                                                    human_ratings_problem_in_caption="",
                                                                    human_ratings_problem_in_gpt4="")]))
    assert ds.records[0].images[1] == ImageRef("https://example.com/b.png", "A dark room.", "a room")
    assert ds.records[1].human_verification is None


def test_missing_column_names_header_row():
    columns = [c for c in VISIT_MULTI_COLUMNS if c != "instruction"]
    row = {k: v for k, v in _visit_multi_row().items() if k != "instruction"}
    err = _error(parse_visit_csv, _csv([row], columns))
    assert (err.row_number, err.column) == (1, "instruction")


def test_unknown_header():
    err = _error(parse_visit_csv, "foo,bar\n1,2\n")
    assert err.row_number == 1


@pytest.mark.parametrize(
    "overrides,column",
    [
        ({"images": "[not json"}, "images"),
        ({"images": '{"a": 1}'}, "images"),
        ({"images": "[]"}, "images"),
        ({"images": json.dumps(["file:///etc/passwd", "https://x/b.png"])}, "images"),
        ({"images": json.dumps([f"https://example.com/{i}.png" for i in range(11)])}, "images"),
        ({"instruction": "   "}, "instruction"),
        ({"instruction_category": ""}, "instruction_category"),
        ({"is_multiple_images": "False"}, "is_multiple_images"),
        ({"images_dense_captions": json.dumps(["a", "b", "c"])}, "images_dense_captions"),
        ({"images_dense_captions": "[1, 2]"}, "images_dense_captions"),
        ({"human_ratings_problem_in_gpt4": "maybe"}, "human_ratings_problem_in_gpt4"),
        ({"human_ratings_problem_in_gpt4": ""}, "human_ratings_problem_in_gpt4"),
        ({"public_images_metadata": "[1]"}, "public_images_metadata"),
    ],
)
def test_bad_multi_row_is_named(overrides, column):
    rows = [_visit_multi_row(), _visit_multi_row(), _visit_multi_row(**overrides), _visit_multi_row()]
    err = _error(parse_visit_csv, _csv(rows))
    assert (err.row_number, err.column) == (4, column)  # header is row 1, third data row is 4
    assert f"row 4, column '{column}'" in str(err)


def test_ragged_row_and_blank_lines():
    text = _csv([_visit_multi_row()]) + "\n" + "rcc,only,three\n"
    err = _error(parse_visit_csv, text)
    assert err.row_number == 4  # row 3 is the blank line
    assert err.column is None


def test_bad_single_row():
    good = {
        "image_url": "https://example.com/a.jpg",
        "image_dense_caption": "A cat.",
        "instruction_category": "Animals",
        "instruction": "What animal is this?",
        "output_human_annotated": "A cat.",
    }
    text = _csv([good, {**good, "instruction": ""}], VISIT_SINGLE_COLUMNS)
    err = _error(parse_visit_csv, text)
    assert (err.row_number, err.column) == (3, "instruction")


def test_not_utf8_and_empty():
    assert _error(parse_visit_csv, b"image_url\n\xff\xfe\x00").row_number == 2
    assert _error(parse_visit_csv, "").row_number == 1


def test_single_writer_refuses_lossy_records():
    record = VisitRecord("c", "i", [ImageRef("https://x/a"), ImageRef("https://x/b")], "r")
    with pytest.raises(ValueError):
        write_visit_csv(VisitDataset("single", [record]))


def _convbench_xlsx(rows, header=CONVBENCH_COLUMNS, sheet="multi_turn_benchmark") -> bytes:
    workbook = openpyxl.Workbook()
    ws = workbook.active
    ws.title = sheet
    ws.append(list(header))
    for row in rows:
        ws.append(list(row))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


GOOD_CONV = (1, "1_cat.png", "What is this?", "Why?", "Write a poem.")


@pytest.mark.parametrize(
    "bad,column",
    [
        ((3, "3_x.png", "What?", "", "Poem."), "The_second_turn_instruction"),
        ((3, "3_x.png", "What?", "Why?", None), "The_third_turn_instruction"),
        (("three", "3_x.png", "What?", "Why?", "Poem."), "ID"),
        ((1, "3_x.png", "What?", "Why?", "Poem."), "ID"),  # duplicate of row 2
        ((3, "../../etc/passwd", "What?", "Why?", "Poem."), "image_id"),
        ((3, None, "What?", "Why?", "Poem."), "image_id"),
    ],
)
def test_bad_convbench_row_is_named(bad, column):
    data = _convbench_xlsx([GOOD_CONV, (2, "2_dog.png", "a", "b", "c"), bad])
    err = _error(parse_convbench_xlsx, data)
    assert (err.row_number, err.column) == (4, column)


def test_convbench_missing_column_and_not_xlsx(tmp_path):
    err = _error(parse_convbench_xlsx, _convbench_xlsx([GOOD_CONV[:4]], CONVBENCH_COLUMNS[:4]))
    assert (err.row_number, err.column) == (1, "The_third_turn_instruction")
    assert _error(parse_convbench_xlsx, b"PK\x03\x04 not really a zip").row_number == 1
    assert _error(parse_convbench_xlsx, b"ID,image_id\n").row_number == 1


def test_convbench_images_dir_and_blank_rows(tmp_path):
    (tmp_path / "1_cat.png").write_bytes(b"x")
    data = _convbench_xlsx([GOOD_CONV, (None,) * 5, (2, "2_dog.png", "a", "b", "c")])
    ds = parse_convbench_xlsx(data, tmp_path)
    assert [r.id for r in ds.records] == [1, 2]
    assert ds.records[0].image_path == tmp_path / "1_cat.png"
    assert ds.missing_image_ids == ["2_dog.png"]
    assert parse_convbench_xlsx(write_convbench_xlsx(ds.records), tmp_path) == ds


def _prometheus_line(**overrides) -> str:
    record = PrometheusRecord(
        image="x.png",
        instruction="Describe the image.",
        response="A cat.",
        reference_answer="A black cat on a mat.",
        rubric=Rubric("Is it accurate?", ["bad", "poor", "ok", "good", "great"]),
    )
    obj = json.loads(write_prometheus_jsonl([record]))
    obj.update(overrides)
    return json.dumps(obj)


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p.replace("Score 3: ", "Score 7: "),
        lambda p: p.replace("\nScore 5: great", ""),
        lambda p: p.replace("Score 4: good", "Score 4: "),
        lambda p: p.replace("great", "great\nScore 6: extra"),
        lambda p: p.replace("###Reference Answer (Score 5):", "###Reference:"),
        lambda p: p.replace("###Feedback:", ""),
        lambda p: p.replace("Describe the image.", " "),
    ],
)
def test_bad_prometheus_prompt_is_named(edit):
    prompt = json.loads(_prometheus_line())["instruction"]
    lines = [_prometheus_line(), "", _prometheus_line(instruction=edit(prompt))]
    lines[2] = json.dumps({k: v for k, v in json.loads(lines[2]).items() if not k.startswith("orig")})
    err = _error(parse_prometheus_jsonl, "\n".join(lines))
    assert (err.row_number, err.column) == (3, "instruction")


def test_prometheus_orig_field_mismatch_and_bad_json():
    err = _error(parse_prometheus_jsonl, _prometheus_line(orig_score3_description="different"))
    assert (err.row_number, err.column) == (1, "orig_score3_description")
    assert _error(parse_prometheus_jsonl, _prometheus_line() + "\n{oops").row_number == 2
    assert _error(parse_prometheus_jsonl, "[1, 2]").row_number == 1


# ====================================================================== property tests

_garbage_cell = st.text(max_size=40)


def _must_be_format_error_or_blank(text: str, rows: list[list[str]]) -> None:
    try:
        parse_visit_csv(text)
    except FormatError:
        return
    # Success is only acceptable when every garbage row was blank (skipped).
    assert all(not "".join(r).strip() for r in rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_garbage_cell, min_size=0, max_size=14), min_size=1, max_size=4))
def test_garbage_multi_rows_raise_format_error(rows):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(VISIT_MULTI_COLUMNS)
    writer.writerows(rows)
    _must_be_format_error_or_blank(out.getvalue(), rows)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_garbage_cell, min_size=5, max_size=5), min_size=1, max_size=4))
def test_garbage_single_rows_raise_format_error(rows):
    rows = [["not-a-url " + r[0], *r[1:]] for r in rows]
    out = io.StringIO()
    csv.writer(out).writerows([VISIT_SINGLE_COLUMNS, *rows])
    with pytest.raises(FormatError):
        parse_visit_csv(out.getvalue())


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200).filter(lambda s: not s.strip().startswith("[")), st.integers(0, 2))
def test_garbage_images_cell_names_row_and_column(images, position):
    rows = [_visit_multi_row() for _ in range(3)]
    rows[position]["images"] = images
    err = _error(parse_visit_csv, _csv(rows))
    assert (err.row_number, err.column) == (position + 2, "images")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash_the_parsers(data):
    for parse in (parse_visit_csv, parse_prometheus_jsonl):
        try:
            parse(data)
        except FormatError:
            pass


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_nonblank = _text.filter(lambda s: s.strip())
_optional = st.none() | _nonblank


@st.composite
def _visit_records(draw):
    n = draw(st.integers(1, 10))
    images = [
        ImageRef(f"https://img.example/{draw(st.integers(0, 10**6))}.png", draw(_optional), draw(_optional))
        for _ in range(n)
    ]
    hv = draw(st.none() | st.builds(HumanVerification, st.booleans(), st.booleans(), st.booleans()))
    return VisitRecord(
        category=draw(_nonblank),
        instruction=draw(_nonblank),
        images=images,
        reference_output=draw(_optional),
        candidate_reference=draw(_optional),
        human_verification=hv,
        public_images_metadata=draw(st.dictionaries(_text, _text, max_size=2)),
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(_visit_records(), max_size=4))
def test_multi_round_trip_property(records):
    ds = VisitDataset("multi", records)
    assert parse_visit_csv(write_visit_csv(ds)) == ds


_marker_free = _nonblank.filter(lambda s: "###" not in s and "\nScore" not in s)


@settings(max_examples=100, deadline=None)
@given(_marker_free, _text, _marker_free, _marker_free, st.lists(_marker_free, min_size=5, max_size=5))
def test_prometheus_round_trip_property(instruction, response, reference, criteria, scores):
    record = PrometheusRecord("img.png", instruction, response, reference, Rubric(criteria, scores))
    assert parse_prometheus_jsonl(write_prometheus_jsonl([record])) == [record]


_xlsx_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30).filter(lambda s: s.strip())


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_xlsx_text, _xlsx_text, _xlsx_text), max_size=5))
def test_convbench_round_trip_property(rows):
    records = [ConvBenchRecord(i + 1, f"{i}_img.png", list(turns)) for i, turns in enumerate(rows)]
    assert parse_convbench_xlsx(write_convbench_xlsx(records)).records == records


def test_convbench_writer_drops_control_characters_and_never_writes_formulas():
    record = ConvBenchRecord(1, "1.png", ["What\x08 is this?", "=HYPERLINK(\"http://x\")", "=1+1"])
    written = write_convbench_xlsx([record])
    assert parse_convbench_xlsx(written).records[0].turns == ["What is this?", *record.turns[1:]]
    workbook = openpyxl.load_workbook(io.BytesIO(written))
    assert [c.data_type for c in workbook.active[2]] == ["n", "s", "s", "s", "s"]
