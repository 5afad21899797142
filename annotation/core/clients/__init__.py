"""Clients for the services we call: OpenAI-compatible chat endpoints and Mechanical Turk."""
