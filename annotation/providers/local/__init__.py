"""Local work: in-house accounts log in and take tasks; nothing is published or paid through
an API. Its operations (approve and reject by MTurk's rules, payouts recorded by hand) are the
generic services' ``local_review`` and ``payouts``, which the admin and console call."""
