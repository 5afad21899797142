"""Models of the annotation app: the engine and the benchmark content."""
from .content import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from .engine import (
    Assignment,
    Batch,
    Qualification,
    QualificationGrant,
    Task,
    Worker,
)

__all__ = [
    "Assignment",
    "Batch",
    "ConversationTurn",
    "Image",
    "Instance",
    "InstanceImage",
    "InstructionFamily",
    "Qualification",
    "QualificationGrant",
    "ScoreRubric",
    "Task",
    "Worker",
]
