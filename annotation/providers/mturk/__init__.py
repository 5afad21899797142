"""Mechanical Turk: ``provider`` (HIT types and ExternalQuestion HITs), ``client`` (the one
module that imports boto3), ``fees``, and the arrival page (``views``, ``urls``: mounted at
``ext/mturk/``) through which a worker's HIT opens our task page."""
