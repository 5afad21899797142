"""People and access in the product: users, their roles and API tokens (admins), one's own
profile (everyone signed in). The Django admin stays for staff data fixes."""
