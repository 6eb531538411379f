"""Errors that the CLI reports as one line and exit code 2, and the library raises as they are."""

from __future__ import annotations


class TokprofError(Exception):
    """A problem with the user's input or configuration, reported without a traceback."""


class InputError(TokprofError, ValueError):
    """Bad input (a log, a message, a tools file): names the file, the place in it, and what is wrong."""

    def __init__(self, path: str, where: str | None, what: str):
        self.path = path
        self.where = where
        self.what = what
        location = f"{path}: {where}" if where else path
        super().__init__(f"{location}: {what}")


class ModelError(TokprofError):
    """A model, tokenizer or chat template that cannot be found or used."""
