"""Public submission of a new model: upload predictions, an automatic judge run against the
reference, a status page, the leaderboards; withdrawal and versions."""
