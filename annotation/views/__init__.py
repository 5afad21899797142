"""Pages of the annotation app."""
