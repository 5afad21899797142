"""The admin's batch pages (mounted at /batches/); every view is ``admin_required``."""
from django.urls import path

from . import review, views

app_name = "console"

urlpatterns = [
    path("", views.batch_list, name="batches"),
    path("new/", views.batch_upload_page, name="upload"),
    path("new/sample/", views.batch_upload_sample, name="upload_sample"),
    path("<uuid:batch_uuid>/", views.batch_detail, name="batch"),
    path("<uuid:batch_uuid>/status/", views.batch_status, name="status"),
    path("<uuid:batch_uuid>/images/", views.batch_images, name="images"),
    path("<uuid:batch_uuid>/preview/<int:position>/", views.task_preview, name="preview"),
    path("<uuid:batch_uuid>/launch/", views.batch_launch_page, name="launch"),
    path("<uuid:batch_uuid>/review/", review.batch_review, name="review"),
    path("<uuid:batch_uuid>/review/block/", review.worker_block_page, name="block"),
]
