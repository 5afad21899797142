"""Models of the annotation app: the engine and the benchmark content."""
from annotation.models.content import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from annotation.models.engine import (
    Assignment,
    Batch,
    Qualification,
    QualificationGrant,
    Task,
    TaskProblem,
    Worker,
)
from annotation.providers.models import (  # marketplace-side records, in the providers room
    Bonus,
    LocalPayout,
    MarketplaceBatch,
    ProlificHookEvent,
    ProviderAction,
    ProviderConfig,
    ProviderHit,
    ProviderSubmission,
    QualificationPush,
    ScreenOut,
)
from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint

__all__ = [
    "Assignment",
    "Batch",
    "ConversationTurn",
    "Image",
    "Instance",
    "InstanceImage",
    "InstructionFamily",
    "LocalPayout",
    "Qualification",
    "QualificationGrant",
    "ScoreRubric",
    "Task",
    "TaskProblem",
    "Worker",
    "Bonus",
    "MarketplaceBatch",
    "ProlificHookEvent",
    "ProviderAction",
    "ProviderConfig",
    "ProviderHit",
    "ProviderSubmission",
    "QualificationPush",
    "ScreenOut",
    "WebhookDelivery",
    "WebhookEndpoint",
]
