"""Agreement reports. The data (report.json) is gathered and computed by ``assemble``
(``build_report_data``) from ``verdicts`` (every source's pairwise verdicts, read once) and the
sections ``accuracy``, ``reliability``, ``scores``, ``leaderboards``, ``biases`` and
``snapshot``; ``params`` holds what a report is asked for. Its tables (``tables``), plots
(``plots``) and self-contained HTML (``html``) are rendered from that dict. Nothing here writes:
metric scores come in computed (``services.reports.report_data_compute``)."""
