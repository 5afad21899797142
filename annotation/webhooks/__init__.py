"""Signed webhooks: a study tells other systems when something they wait for has happened
(a batch finished, a judge run done, a budget reached, a report ready), retried with backoff
and logged per delivery."""
