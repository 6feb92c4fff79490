"""Typed errors the engine raises for bad input.

Every error carries a one-line ``message`` that says what is wrong and what to
do about it; the CLI prints it as is and the GUI shows it in a dialog.
"""

from __future__ import annotations


class SplitscopeError(Exception):
    """Base class: a problem with the user's input, not a bug in Splitscope."""

    def __init__(self, message: str) -> None:
        # One line, always: names from a damaged file may hold newlines or control characters.
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        super().__init__(message)
        self.message = message


class ModelLoadError(SplitscopeError):
    """The file could not be read as an ONNX model."""


class ModelNotFoundError(ModelLoadError):
    """The path does not exist or is not a file."""


class ModelDecodeError(ModelLoadError):
    """The bytes are not a (complete) ONNX protobuf."""


class ExternalDataError(ModelLoadError):
    """An external-data file the model names is missing or too short."""


class InvalidGraphError(ModelLoadError):
    """The graph is structurally broken (cycle, dangling output, no nodes)."""


class CyclicGraphError(InvalidGraphError):
    """The graph has a cycle, which ONNX forbids."""


class EmptyGraphError(InvalidGraphError):
    """The graph has no nodes."""


class UnsupportedOpsetError(ModelLoadError):
    """The model imports an opset version this installation does not know."""


class ParserUnavailableError(SplitscopeError):
    """The requested TensorRT parser is not installed or failed to import."""


class JobCancelledError(SplitscopeError):
    """The user cancelled a running job."""

    def __init__(self, message: str = "Cancelled.") -> None:
        super().__init__(message)


class BackendUnavailableError(SplitscopeError):
    """The backend asked for cannot run here (not installed, no GPU)."""
