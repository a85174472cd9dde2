"""Compose mode: the same three services from compose.yaml, on a Docker engine.

stack.py: the lifecycle (up, reuse, down, status); images.py: official or built offline;
containers.py: the container faults; docker_cli.py: the command lines."""

from lab.stack.compose.stack import ComposeStack

__all__ = ["ComposeStack"]
