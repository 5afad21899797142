"""Edge cases for the judge-output parsers (formats: see judging/parsers.py)."""

import pytest

from judging.parsers import (
    combine_orderings,
    parse_direct_grade,
    parse_extraction,
    parse_pairwise,
    parse_rubric_score,
)

# --------------------------------------------------------------------------
# parse_pairwise

VISIT_SAMPLE = """Step 1: Response A describes the pizza without addressing the comment.
Step 2: Response B addresses the implied sarcasm.

Overall, Response B is better.
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (VISIT_SAMPLE, "B"),
        ("Overall, Response A is better.", "A"),
        ("reasoning...\nOverall, Response A is better", "A"),  # no full stop
        ("reasoning...\noverall, response b is better.", "B"),  # lower case
        ("reasoning...\nOVERALL, RESPONSE A IS BETTER.", "A"),
        ("reasoning\n**Overall, Response A is better.**", "A"),  # bold line
        ("reasoning\nOverall, Response **B** is better.", "B"),  # bold letter
        ("reasoning\n_Overall, Response A is better._", "A"),
        ("reasoning\nOverall, Response A is better!  \n\n   \n", "A"),  # trailing blanks
        ("reasoning\nOverall, Response A is better...", "A"),
        ("reasoning\nOverall Response B is better.", "B"),  # missing comma
        ("reasoning\n- Overall, Response A is better.", "A"),  # bullet
        ("reasoning\n### Overall, Response B is better.", "B"),  # heading
        ('reasoning\n"Overall, Response A is better."', "A"),  # quoted
        ("reasoning\r\nOverall, Response B is better.\r\n", "B"),  # CRLF
    ],
)
def test_pairwise_accepts(text, expected):
    assert parse_pairwise(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   \n\n ",
        # verdict not on the final line
        "Overall, Response A is better.\nBut honestly both are weak.",
        # both letters on the final line
        "Overall, Response A is better than Response B.",
        "Overall, Response A is better. Response B is worse.",
        # a different sentence
        "Overall, Response A is slightly better.",
        "Overall, Response A is better in some ways.",
        "I think Response A is better.",
        "Response A is better.",
        "Overall, Response X is better.",
        "Overall, Response C is better.",
        "Overall, both responses are equally good.",
        "Overall, Response AB is better.",
        # verdict embedded in a longer line (VisIT-Bench Fig. 17 sample) -> extraction
        "Step 5: Response A is wrong, while Response B is closer. Overall, Response B is better.",
        "Overall, Response A is better.\nOverall, Response B is better.\nTie.",
    ],
)
def test_pairwise_rejects(text):
    assert parse_pairwise(text) is None


def test_pairwise_uses_only_last_line_when_verdicts_conflict():
    # Earlier verdicts are reasoning; the final line is the answer.
    text = "Overall, Response A is better.\n\nOn reflection:\nOverall, Response B is better."
    assert parse_pairwise(text) == "B"


# --------------------------------------------------------------------------
# parse_extraction


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Final Answer: A", "A"),
        ("Final Answer: B", "B"),
        ("Final Answer: B.", "B"),
        ("final answer: a", "unknown"),  # bare lower-case 'a' is an article
        ("Final Answer: Response a", "A"),
        ("**Final Answer:** B", "B"),
        ("Final Answer: (A)", "A"),
        ("Final answer:B", "B"),
        # VisIT-Bench Fig. 18, example one: answer in the wrong format -> B
        (
            "Final Answer: Response B is slightly better, but it should also explain "
            "how the situation indicates that people should stop.",
            "B",
        ),
        # Fig. 18, example two
        ("Final Answer: Unknown.", "unknown"),
        ("Final Answer: unknown", "unknown"),
        ("Final Answer: Tie", "unknown"),
        ("Final Answer: a tie", "unknown"),
        ("Final Answer: Neither", "unknown"),
        ("Final Answer: Response A and Response B are equal", "unknown"),
        ("Final Answer: A or B", "unknown"),
        ("Final Answer: A\nFinal Answer: B", "unknown"),  # conflicting
        ("Final Answer: A\nFinal Answer: A", "A"),  # repeated, consistent
        ("Final Answer:", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
        ("I cannot decide.", "unknown"),
        # no marker: bare letter or a proper verdict sentence
        ("A", "A"),
        ("B.", "B"),
        ("Response B", "B"),
        ("a", "unknown"),
        ("Overall, Response A is better.", "A"),
    ],
)
def test_extraction(text, expected):
    assert parse_extraction(text) == expected


# --------------------------------------------------------------------------
# parse_rubric_score


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Feedback: Accurate and concise. [RESULT] 4", ("Accurate and concise.", 4)),
        ("Feedback: Good.\n[RESULT] 5", ("Good.", 5)),
        ("Feedback: Poor. [RESULT] 1", ("Poor.", 1)),
        ("Feedback: ok [RESULT] (3)", ("ok", 3)),
        ("Feedback: ok [RESULT]: 3", ("ok", 3)),
        ("Feedback: ok [RESULT] 3/5", ("ok", 3)),
        ("Feedback: ok [RESULT] 3.", ("ok", 3)),  # full stop, not a decimal
        ("**Feedback:** ok **[RESULT] 2**", ("ok", 2)),
        ("feedback: ok [result] 2", ("ok", 2)),
        ("No label here. [RESULT] 2", ("No label here.", 2)),
        ("[RESULT] 2", ("", 2)),
        ("Feedback: first. [RESULT] 4\nSo again: [RESULT] 4", ("first.", 4)),  # same twice
    ],
)
def test_rubric_accepts(text, expected):
    assert parse_rubric_score(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "Feedback: no score given.",
        "Feedback: score is 4",  # no [RESULT] marker
        "Feedback: ok [RESULT] 0",
        "Feedback: ok [RESULT] 6",
        "Feedback: ok [RESULT] 10",
        "Feedback: ok [RESULT] -1",
        "Feedback: ok [RESULT] 4.5",
        "Feedback: ok [RESULT] 4,5",
        "Feedback: ok [RESULT] four",
        "Feedback: ok [RESULT]",
        "Feedback: ok [RESULT] 3-4",
        "Feedback: ok [RESULT] 3 or 4",
        "Feedback: ok [RESULT] 3\n[RESULT] 4",  # two different scores
        "Feedback: ok [RESULT] (an integer number between 1 and 5)",  # template echo
    ],
)
def test_rubric_rejects(text):
    assert parse_rubric_score(text) is None


# --------------------------------------------------------------------------
# parse_direct_grade (ConvBench "Rating: X", 0..10)

CONVBENCH_SAMPLE = """- The first turn response was accurate, earning a rating of 9.
- The second turn response ... resulting in a rating of 8.
Overall, considering the combination of these individual scores, I would rate:
Rating: 7.
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (CONVBENCH_SAMPLE, 7.0),  # prose "rating of 9" ignored
        ("...hence deserving a high rating. Rating: 9", 9.0),  # inline, ConvBench Fig.
        ("Rating: 0", 0.0),
        ("Rating: 10", 10.0),
        ("Rating: 10.", 10.0),
        ("Rating:5", 5.0),
        ("Rating:{5}", 5.0),
        ("Rating:(5)", 5.0),
        ("Rating: [[6]]", 6.0),
        ("[[6]]", 6.0),
        ("Rating: 3.", 3.0),
        ("Rating: 8,", 8.0),
        ("Final Rating: 4", 4.0),  # ConvBench extraction output
        ("rating: 4", 4.0),
        ("**Rating: 8**", 8.0),
        ("Rating: 7/10", 7.0),
        ("Rating: 7.5", 7.5),  # decimals accepted
        ("Rating: 0.0", 0.0),
        ("Rating: 6\nFinal Rating: 6", 6.0),  # repeated, consistent
    ],
)
def test_direct_grade_accepts(text, expected):
    assert parse_direct_grade(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "The response deserves a rating of 9.",  # no "Rating:" label
        "Rating:X",  # template echo
        "Rating: seven",
        "Rating: 11",
        "Rating: -1",
        "Rating: 10.5",
        "Rating: 100",
        "[[11]]",
        "Rating: 7-8",
        "Rating: 7 or 8",
        "Rating: 7\nRating: 8",  # conflicting
        "Rating: 7 [[8]]",
        "Overrating: 5",  # not the label
    ],
)
def test_direct_grade_rejects(text):
    assert parse_direct_grade(text) is None


# --------------------------------------------------------------------------
# combine_orderings: verdict_ab in original order, verdict_ba with responses swapped


@pytest.mark.parametrize(
    "ab, ba, expected",
    [
        ("A", "B", "A"),  # A wins both queries
        ("B", "A", "B"),  # B wins both queries
        ("A", "A", "tie"),  # position bias: each ordering picked the first slot
        ("B", "B", "tie"),  # each ordering picked the second slot
        ("A", "tie", "A"),
        ("A", "unknown", "A"),
        ("tie", "B", "A"),
        ("unknown", "A", "B"),
        ("B", "tie", "B"),
        ("tie", "tie", "tie"),
        ("unknown", "unknown", "tie"),
        ("tie", "unknown", "tie"),
        (None, None, "tie"),
        ("a", "b", "A"),  # case-insensitive
        (" B ", " A ", "B"),
    ],
)
def test_combine_orderings_truth_table(ab, ba, expected):
    assert combine_orderings(ab, ba) == expected


def test_combine_is_symmetric_under_relabelling():
    flip = {"A": "B", "B": "A", "tie": "tie", "unknown": "unknown"}
    for ab in flip:
        for ba in flip:
            assert combine_orderings(flip[ab], flip[ba]) == flip[combine_orderings(ab, ba)]
