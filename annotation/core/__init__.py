"""Shared plumbing every app may import (annotation is the base app: judging and agreement
depend on it, never the other way). Domain-free: nothing here imports a model."""
