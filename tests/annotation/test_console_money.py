"""A batch's money page in the product, through HTTP and the real services: spend with fees,
approve everything submitted (or by the review filter), bonuses with a reason refused above the
budget, and payment — approving pays on Mechanical Turk (a Stubbed client), a local batch's
payouts are recorded once per worker ("mark paid"), with the CSV of what is owed."""
import csv
import io
import threading
from decimal import Decimal

import pytest
from django.db import connection, connections
from django.urls import reverse

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Bonus, LocalPayout, Worker
from annotation.providers.models import ProviderAction
from annotation.providers.services import local_payout_record
from tests.annotation.providers.conftest import https_base, mturk  # noqa: F401 (fixtures)
from tests.annotation.providers.test_mturk import work
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db(transaction=True)  # money calls run outside transactions

D = Decimal


def _answers(batch, worker, count, choice="A"):
    for _ in range(count):
        lease = task_claim_next(batch=batch, worker=worker)
        assignment_submit(assignment=lease, data={"choice": choice})


def _url(name, batch, *args):
    return reverse(f"console:{name}", args=[batch.uuid, *args])


def _money(client, batch):
    response = client.get(_url("money", batch))
    assert response.status_code == 200
    return response


def _bonus(client, batch, worker, amount, reason="Careful work", key="k1"):
    return client.post(_url("money_bonus", batch), {
        "worker": str(worker.uuid), "amount": amount, "reason": reason, "key": key})


def _owed(client, batch) -> dict[str, dict[str, str]]:
    body = client.get(_url("money_export", batch)).content.decode()
    return {row["worker_id"]: row for row in csv.DictReader(io.StringIO(body))}


def test_a_local_batch_from_submitted_to_paid(admin_client_):
    batch = make_batch(3, n=2, reward=D("0.40"), budget=D("10"))
    ann, bea = make_workers(2)
    _answers(batch, ann, 3)
    _answers(batch, bea, 2)
    page = _money(admin_client_, batch)
    assert page.context["submitted"] == 5 and page.context["owed"] == 0
    assert 'id="pending">$2.00<' in page.content.decode()

    admin_client_.post(_url("money_approve", batch), {"reason": ""})
    assert Assignment.objects.filter(batch=batch, status="approved").count() == 5
    assert _bonus(admin_client_, batch, ann, "0.50").status_code == 302
    assert _bonus(admin_client_, batch, ann, "0.50").status_code == 302  # same form again
    assert Bonus.objects.filter(batch=batch).count() == 1  # a double submit pays once

    owed = _owed(admin_client_, batch)
    assert owed[ann.external_id]["owed_usd"] == "1.70"  # 3 × 0.40 + 0.50, no fees
    assert owed[bea.external_id]["owed_usd"] == "0.80"
    assert owed[bea.external_id]["approved_answers"] == "2"

    admin_client_.post(_url("money_payout", batch), {"worker": str(ann.uuid),
                                                     "reference": "SEPA 0042"})
    admin_client_.post(_url("money_payout", batch), {"worker": str(ann.uuid)})  # double click
    (payout,) = LocalPayout.objects.filter(batch=batch)
    assert (payout.worker_id, payout.amount, payout.reference) == (ann.pk, D("1.70"), "SEPA 0042")
    owed = _owed(admin_client_, batch)
    assert (owed[ann.external_id]["paid_usd"], owed[ann.external_id]["owed_usd"]) == (
        "1.70", "0.00")

    admin_client_.post(_url("money_payout", batch), {"worker": "all", "reference": "batch 1"})
    assert sorted(LocalPayout.objects.values_list("amount", flat=True)) == [D("0.80"),
                                                                          D("1.70")]
    page = _money(admin_client_, batch)
    assert page.context["owed"] == 0 and page.context["paid"] == D("2.50")
    assert ProviderAction.objects.filter(batch=batch, action="payout").count() == 2


def test_approve_by_the_review_filter_approves_only_what_it_lists(admin_client_):
    batch = make_batch(4, n=2)
    yes, no = make_workers(2)
    _answers(batch, yes, 3, "A")
    _answers(batch, no, 3, "B")
    admin_client_.post(_url("money_approve", batch) + "?answer=choice:A", {})
    assert set(Assignment.objects.filter(batch=batch, status="approved")
               .values_list("worker", flat=True)) == {yes.pk}
    assert Assignment.objects.filter(worker=no, status="submitted").count() == 3


def test_a_bonus_above_the_budget_is_refused_and_nothing_is_written(admin_client_):
    batch = make_batch(1, n=1, reward=D("1.00"), budget=D("1.50"))
    (worker,) = make_workers(1)
    _answers(batch, worker, 1)
    response = _bonus(admin_client_, batch, worker, "0.75")
    assert response.status_code == 400
    assert "would pass the batch budget of $1.50" in response.content.decode()
    assert not Bonus.objects.exists()
    response = _bonus(admin_client_, batch, worker, "0.50", reason="   ")
    assert response.status_code == 400 and "needs a reason" in response.content.decode()
    assert _bonus(admin_client_, batch, worker, "0.50").status_code == 302  # exactly the budget
    assert Bonus.objects.get().amount == D("0.50")


def test_worker_text_on_the_money_page_is_escaped(admin_client_):
    batch = make_batch(1, n=1, budget=D("5"))
    (worker,) = make_workers(1)
    Worker.objects.filter(pk=worker.pk).update(external_id="<b>mallory</b>")
    _answers(batch, Worker.objects.get(pk=worker.pk), 1)
    _bonus(admin_client_, batch, worker, "0.10", reason="<script>alert(1)</script>")
    html = _money(admin_client_, batch).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<b>mallory</b>" not in html


def test_payouts_are_for_local_batches_only(admin_client_, mturk):  # noqa: F811
    batch = make_batch(1, n=1, provider="mturk", budget=D("5"))
    response = admin_client_.post(_url("money_payout", batch), {"worker": "all"})
    assert response.status_code == 404
    (worker,) = make_workers(1, provider="mturk")
    with pytest.raises(Exception, match="paid on Mechanical Turk"):
        local_payout_record(batch, worker)
    assert not LocalPayout.objects.exists()


def test_a_long_reference_is_refused_before_anything_is_recorded():
    batch = make_batch(1, n=1)
    (worker,) = make_workers(1)
    _answers(batch, worker, 1)
    Assignment.objects.filter(batch=batch).update(status="approved")
    with pytest.raises(Exception, match="at most 200"):
        local_payout_record(batch, worker, reference="x" * 201)
    assert local_payout_record(batch, worker, reference="ok").amount == D("0.10")
    assert local_payout_record(batch, worker) is None  # nothing left to pay


def test_on_mechanical_turk_approving_pays_and_a_failed_bonus_is_sent_again(
        admin_client_, mturk):  # noqa: F811
    batch = make_batch(2, n=1, provider="mturk", budget=D("10"), reward=D("0.50"))
    t1, t2 = batch.tasks.order_by("position")
    a1, a2 = work(t1, "W1", "ASG1"), work(t2, "W2", "ASG2")
    for a in (a1, a2):
        mturk.add_response("approve_assignment", {}, {"AssignmentId": a.provider_assignment_id})
    admin_client_.post(_url("money_approve", batch), {})
    assert Assignment.objects.filter(batch=batch, status="approved").count() == 2
    page = _money(admin_client_, batch)
    assert page.context["paid"] == D("1.20")  # 2 × (0.50 + 20 % fee)

    mturk.add_client_error("send_bonus", "RequestError", "Insufficient funds.",
                           http_status_code=400)
    _bonus(admin_client_, batch, a1.worker, "1.00")
    bonus = Bonus.objects.get()
    assert bonus.status == "failed"
    assert _owed(admin_client_, batch)["W1"]["owed_usd"] == "1.00"
    mturk.add_response("send_bonus", {}, {
        "WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "ASG1",
        "Reason": "Careful work", "UniqueRequestToken": bonus.token})
    admin_client_.post(_url("money_bonus_retry", batch, bonus.uuid))
    bonus.refresh_from_db()
    assert bonus.status == "paid"
    assert _money(admin_client_, batch).context["paid"] == D("2.40")  # + 1.00 + 0.20 fee
    assert _owed(admin_client_, batch)["W1"]["owed_usd"] == "0.00"


def test_the_batch_page_downloads_results_with_their_inputs(admin_client_):
    batch = make_batch(2, n=1)
    (worker,) = make_workers(1)
    _answers(batch, worker, 2, "B")
    page = admin_client_.get(_url("batch", batch)).content.decode()
    link = reverse("console:results", args=[batch.uuid, "csv"])
    assert f'href="{link}"' in page and 'id="money-link"' in page
    body = b"".join(admin_client_.get(link).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [row["answer.choice"] for row in rows] == ["B", "B"]
    assert {row["input.instruction"] for row in rows} == {
        "Describe what is unusual in image 1.", "Describe what is unusual in image 2."}
    assert admin_client_.get(reverse("console:results", args=[batch.uuid, "xls"])
                             ).status_code == 404


def test_eight_admins_marking_one_worker_paid_at_once_record_one_payout():
    """The worker's row is locked while the amount is computed and written (PostgreSQL)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (make test starts one)")
    batch = make_batch(2, n=1, reward=D("0.30"))
    (worker,) = make_workers(1)
    _answers(batch, worker, 2)
    Assignment.objects.filter(batch=batch).update(status="approved")
    barrier, results, errors = threading.Barrier(8), [], []

    def pay():
        try:
            barrier.wait()
            results.append(local_payout_record(batch, worker, actor="racer"))
        except Exception as exc:  # surfaced to the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=pay) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sum(result is not None for result in results) == 1
    assert list(LocalPayout.objects.values_list("amount", flat=True)) == [D("0.60")]
