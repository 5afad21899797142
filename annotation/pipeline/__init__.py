"""The VisIT-Bench construction pipeline: instruction → captions → LLM reference → human
verification. Each stage transition is one service in ``services``; Celery tasks in ``tasks``."""
