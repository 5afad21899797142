"""The one exception of the backup service: every refusal carries a message an operator can act on."""


class BackupError(Exception):
    """An export or a restore was refused or failed; nothing was written."""
