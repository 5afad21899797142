"""Reference metrics, agreement statistics, bias analyses and analyst reports."""
