"""Builders for the home-page tests: a submitted assignment with given timing and review
status, and inline rows of every rating HIT type (no stored comparisons needed)."""
from datetime import timedelta

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment


def submit(batch, worker, data=None, *, seconds=30.0, status=None):
    """Claim the worker's next task of ``batch`` and submit ``data`` ``seconds`` after the
    claim, through the real services; ``status`` then sets a review outcome (approved,
    rejected) as a marketplace sync would. Returns the stored assignment."""
    assignment = task_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment=assignment, data=data or {"choice": "A"},
                      now=assignment.claimed_at + timedelta(seconds=seconds))
    if status is not None:
        Assignment.objects.filter(pk=assignment.pk).update(status=status)
    return Assignment.objects.get(pk=assignment.pk)


INLINE_ROWS = {
    "pairwise_ab": {"instruction": "Which colour is the car?",
                    "image_urls": ["https://example.org/car.png"],
                    "response_a": "Red.", "response_b": "Blue."},
    "multiturn_ab": {"image_urls": ["https://example.org/kitchen.png"], "turns": [
        {"instruction": "What appliances can you see?", "response_a": "A kettle.",
         "response_b": "A toaster."},
        {"instruction": "Which makes tea?", "response_a": "The kettle.",
         "response_b": "The toaster."},
        {"instruction": "Caption it.", "response_a": "A kitchen.",
         "response_b": "A room."}]},
    "rubric_score": {"instruction": "Count the apples.", "response_text": "There are three.",
                     "image_urls": ["https://example.org/apples.png"],
                     "criteria": "Is the count right?", "score1": "Wrong.", "score2": "Off.",
                     "score3": "Close.", "score4": "Nearly.", "score5": "Exact."},
    "feedback_ab": {"instruction": "Count the apples.", "response_text": "There are three.",
                    "image_urls": ["https://example.org/apples.png"],
                    "feedback_a": "Correct count, well grounded.",
                    "feedback_b": "Wrong: there are four."},
}
