"""The admin's batch pages (mounted at /batches/); every view is ``admin_required``."""
from django.urls import path

from . import money, review, views

app_name = "console"

urlpatterns = [
    path("", views.batch_list, name="batches"),
    path("new/", views.batch_upload_page, name="upload"),
    path("new/sample/", views.batch_upload_sample, name="upload_sample"),
    path("<uuid:batch_uuid>/", views.batch_detail, name="batch"),
    path("<uuid:batch_uuid>/status/", views.batch_status, name="status"),
    path("<uuid:batch_uuid>/results.<str:fmt>", views.batch_results, name="results"),
    path("<uuid:batch_uuid>/images/", views.batch_images, name="images"),
    path("<uuid:batch_uuid>/preview/<int:position>/", views.task_preview, name="preview"),
    path("<uuid:batch_uuid>/launch/", views.batch_launch_page, name="launch"),
    path("<uuid:batch_uuid>/review/", review.batch_review, name="review"),
    path("<uuid:batch_uuid>/review/block/", review.worker_block_page, name="block"),
    path("<uuid:batch_uuid>/money/", money.batch_money, name="money"),
    path("<uuid:batch_uuid>/money/approve/", money.money_approve, name="money_approve"),
    path("<uuid:batch_uuid>/money/bonus/", money.money_bonus, name="money_bonus"),
    path("<uuid:batch_uuid>/money/bonus/<uuid:bonus_uuid>/retry/", money.money_bonus_retry,
         name="money_bonus_retry"),
    path("<uuid:batch_uuid>/money/paid/", money.money_payout, name="money_payout"),
    path("<uuid:batch_uuid>/money/owed.csv", money.money_export, name="money_export"),
]
