"""Prolific: ``provider`` (one study per batch, over its REST API), the arrival of a session
(``arrival``, ``views``, ``urls``: mounted at ``ext/prolific/``), signed status hooks
(``hooks``, ``signing``), statuses and review rules (``statuses``), pay (``pay``), the
audience's validators (``audience``: the models and migrations name them) and the launch
page's facts (``launch_page``). Import-free: the models import ``audience`` at start-up."""
