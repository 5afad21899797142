"""Marketplace operations: one service per operation, called by admin, commands and Celery;
each module holds one concern, and this package names the operations callers use.

Rules every function here keeps:
- every external call runs OUTSIDE a database transaction (``require_outside_transaction`` checks);
  each database write is a short autocommit statement or a conditional ``UPDATE``;
- a row is written *before* a money-moving call (HIT in ``creating``, bonus in ``sending``), so
  an interrupted run resumes without publishing or paying twice;
- launches and bonuses pass the budget guard first; every call is logged in ``ProviderAction``.

What only one marketplace does (Prolific's session arrival and status hooks) lives in its
subpackage (``annotation.providers.<name>``), not here.
"""
from .arrivals import HitNotPublished, task_arrival_claim
from .bonuses import BonusRow, bonus_rows_parse, bonus_token, worker_bonus
from .common import (
    LaunchIncomplete,
    LaunchReport,
    SyncReport,
    config_for,
    launch_context,
    launch_guard,
)
from .launch import (
    batch_expire,
    batch_extend,
    batch_filter_set_choose,
    batch_launch,
    batch_pause,
    batch_resume,
)
from .local_review import local_assignment_approve, local_assignment_reject, local_auto_approve
from .payouts import local_payout_record
from .review import (
    assignment_approve,
    assignment_reject,
    batch_review,
    batch_sync,
    sync_all,
    worker_block_and_reject,
)
from .workers import (
    provider_worker_block,
    provider_worker_unblock,
    qualification_push,
    worker_marketplace_block,
    workers_notify,
)

__all__ = [
    "batch_filter_set_choose",
    "batch_review",
    "HitNotPublished",
    "task_arrival_claim",
    "BonusRow",
    "LaunchIncomplete",
    "LaunchReport",
    "SyncReport",
    "assignment_approve",
    "assignment_reject",
    "batch_expire",
    "batch_extend",
    "batch_launch",
    "batch_pause",
    "batch_resume",
    "batch_sync",
    "bonus_rows_parse",
    "bonus_token",
    "config_for",
    "launch_context",
    "launch_guard",
    "local_assignment_approve",
    "local_assignment_reject",
    "local_auto_approve",
    "local_payout_record",
    "provider_worker_block",
    "worker_block_and_reject",
    "provider_worker_unblock",
    "qualification_push",
    "sync_all",
    "worker_bonus",
    "worker_marketplace_block",
    "workers_notify",
]
