"""Agreement reports: the data (``data``), its tables (``tables``), plots (``plots``) and the
self-contained HTML (``html``). ``data.build_report_data`` is the only part reading the database."""
