"""Write operations of the judging app: one function per operation, called by every entry point
(commands, views, API, admin, the demo)."""
