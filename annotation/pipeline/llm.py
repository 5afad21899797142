"""The reference step's provider, from settings. The client itself is ``annotation.core.clients.llm``
(shared with the judges); this module only turns settings into its ``LlmEndpoint``."""
from __future__ import annotations

from django.conf import settings

from annotation.core.clients.llm import ChatClient, LlmEndpoint


def llm_configured() -> bool:
    return bool(settings.LLM_BASE_URL)


def llm_endpoint() -> LlmEndpoint:
    return LlmEndpoint(
        base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY or None,
        model=settings.LLM_MODEL, timeout_s=settings.LLM_TIMEOUT,
        max_retries=settings.LLM_MAX_RETRIES,
    )


def reference_client() -> ChatClient:
    return ChatClient(llm_endpoint())
