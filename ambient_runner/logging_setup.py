"""Plain one-line logs on stderr, with every configured secret removed from every log record."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ambient_runner.stream.encoding import Redactor

# Loggers whose INFO lines are noise in the runner's log: every model request (httpx's "HTTP Request: POST ..."),
# uvicorn's start-up chatter (the runner says itself when it is ready, with its URL). Shown at DEBUG.
QUIET_AT_INFO = ("httpx", "uvicorn.error")


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in QUIET_AT_INFO:
        logging.getLogger(name).setLevel(logging.DEBUG if level.lower() == "debug" else logging.WARNING)


class RedactingFilter(logging.Filter):
    """Replaces secret values in a record's message and exception text (e.g. a CLI's stderr in a warning)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        message = record.getMessage()
        redacted = self.redactor(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor(record.stack_info)
        return True


def install_redaction(redactor: Redactor) -> Callable[[], None]:
    """Apply ``RedactingFilter`` to every record created from now on, whichever logger or handler it goes to
    (a filter on the record factory, since logger filters do not see records of child loggers). Returns the
    function that removes it again."""
    previous = logging.getLogRecordFactory()
    redacting = RedactingFilter(redactor)

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redacting.filter(record)
        return record

    logging.setLogRecordFactory(factory)

    def uninstall() -> None:
        if logging.getLogRecordFactory() is factory:
            logging.setLogRecordFactory(previous)

    return uninstall
