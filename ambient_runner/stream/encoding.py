"""Event -> wire JSON (camelCase, once per event), with every configured secret removed, and the SSE frame."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable
from enum import Enum
from json.encoder import encode_basestring

from ag_ui.core import BaseEvent
from pydantic import BaseModel

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


# scheme://<anything without whitespace up to the last @>: any userinfo, whatever its characters (a password with
# '/', '@' or '%' in it included); over-redacting an '@' in a path is the safe side.
CREDENTIALS_IN_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^\s'\"<>]*@")


def redact_url(text: str) -> str:
    """``text`` with the credentials of any ``scheme://userinfo@`` URL in it removed."""
    return CREDENTIALS_IN_URL.sub(r"\1[redacted]@", text) if "@" in text else text


def redact_url_value(url: str) -> str:
    """One URL (a configured remote): everything between its scheme and its last ``@`` removed, whatever it holds
    (spaces and quotes too, which no pattern over free text can bound)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}://[redacted]@{rest.rsplit('@', 1)[1]}" if sep and "@" in rest else url


# Well-known credential shapes, removed whether or not the runner knows the value; each with the length of real
# tokens, so that ordinary text (``sk-learn``, ``risk-free``, ``ghp_`` alone) is untouched.
TOKEN_SHAPES = (
    r"gh[pousr]_[A-Za-z0-9]{36,255}",  # GitHub: personal, OAuth, user-to-server, server-to-server, refresh
    r"github_pat_[A-Za-z0-9_]{40,255}",  # GitHub fine-grained personal access token
    r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab personal access token
    r"sk-ant-[A-Za-z0-9_-]{32,}",  # Anthropic
    r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}",  # OpenAI project / service account / admin keys
    r"sk-[A-Za-z0-9]{32,}",  # OpenAI (legacy key body)
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    r"xox[abpr]-[A-Za-z0-9-]{10,}",  # Slack
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # a signed JWT (OIDC, Kubernetes tokens)
    # "Authorization: Bearer <token>" (also as JSON or a header in a command line): the scheme is kept
    r"(?P<keep>(?i:authorization)\\?[\"']?\s*[:=]\s*\\?[\"']?(?i:bearer|token|basic)\s+)[A-Za-z0-9._~+/=-]{8,}",
    # the password of a URL's userinfo (user:password@), whatever it holds but whitespace, quotes and '@'
    r"(?<=://)[^\s'\"<>/@]+:[^\s'\"<>@]*(?=@)",
    # a private key block, also cut short (at most 16 KiB of it)
    r"-----BEGIN[A-Z ]*PRIVATE KEY-----(?:(?!-----END)[\s\S]){0,16384}(?:-----END[A-Z ]*PRIVATE KEY-----)?",
)
# Substrings one of the shapes needs: only text holding one (or a known secret) goes through the regex.
SHAPE_PROBES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "AIza", "xox", "AKIA", "eyJ",
                "uthorization", "UTHORIZATION", "PRIVATE KEY-----", "://")


_SHAPES = re.compile("|".join(TOKEN_SHAPES))
# Where a JSON list of objects joins its items (and opens and closes): no shape's match can hold one of them, so the
# items of such a list can be redacted one by one, unless a secret holds one.
ITEM_SEAMS = ("},", ",{", "[{", "}]")
# The one shape whose match can run on past the text it starts in (a private key block cut short takes up to
# 16 KiB after it): a text holding it is redacted only within the whole it belongs to.
RUNS_ON = "PRIVATE KEY-----"
_CLEAN_TOKENS, _CLEAN_TOKEN_CHARS = 512, 200  # at most this many tokens (of at most this length) known clean


class Redactor:
    """Replaces each secret value (and its JSON-escaped form) and each well-known token shape with ``[REDACTED]``:
    one regex pass, only over text that holds one of their substrings (a C-speed ``in`` test each)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._forms: tuple[str, ...] = ()
        self._secret_forms: tuple[str, ...] = ()  # the secrets' forms alone, longest first
        self._clean_tokens: set[str] = set()  # JSON string tokens seen to hold no shape probe (ids, event types)
        self._pattern = _SHAPES
        # Changes whenever the secrets do: what was redacted under another generation is redacted again.
        self.generation = object()
        self.items_alone = True  # whether each item of a JSON list of objects may be redacted on its own
        self.extend(secrets)

    def extend(self, secrets: Iterable[str]) -> None:
        """Add secrets (fetched credentials, the moment they are known); the redactor changes in place, so every
        holder of it (events, log records, spans) redacts them from now on."""
        fresh = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH} - self._secrets
        fresh = {s for s in fresh if not _SHAPES.fullmatch(s)}  # a shape covers it: the list stays short
        if not fresh:
            return
        self._secrets |= fresh
        forms = {form for secret in self._secrets for form in (secret, json.dumps(secret)[1:-1])}
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join([*map(re.escape, ordered), *TOKEN_SHAPES]))
        self._forms = (*ordered, *SHAPE_PROBES)
        self._secret_forms = tuple(ordered)
        self.generation = object()
        self.items_alone = not any(seam in form for form in ordered for seam in ITEM_SEAMS)

    def __call__(self, text: str) -> str:
        for form in self._forms or SHAPE_PROBES:  # a substring test each is much faster than the regex scan
            if form in text:
                return self._pattern.sub(_replacement, text)
        return text

    def item(self, item_json: str) -> str | None:
        """One object of a JSON list of objects, redacted on its own: what redacting the whole list leaves of it
        (a match never spans a seam between items: ``ITEM_SEAMS``); None when only the whole list can be redacted
        (a secret holds a seam, or the item holds the start of a match that may run on past it)."""
        return self(item_json) if self.items_alone and RUNS_ON not in item_json else None

    def json_tokens(self, text: str, tokens: list[str]) -> str:
        """``self(text)`` for a compact JSON text whose string tokens other than its keys are ``tokens`` (its keys
        holding no probe): the same result, with the shapes' probes looked for in those tokens only, and not
        again in a token seen before (a message's id, an event type). Exact, since no probe can lie across
        tokens: no probe holds a quote, a comma, a bracket or a brace, and ``://`` cannot start at a key's colon
        (a value never starts with ``/``); numbers, ``true``, ``false`` and ``null`` hold none. The secrets,
        whatever they hold, are looked for in the whole text."""
        for form in self._secret_forms:
            if form in text:
                return self._pattern.sub(_replacement, text)
        clean = self._clean_tokens
        for token in tokens:
            if token in clean:
                continue
            for probe in SHAPE_PROBES:
                if probe in token:
                    return self._pattern.sub(_replacement, text)
            if len(token) <= _CLEAN_TOKEN_CHARS:
                if len(clean) >= _CLEAN_TOKENS:  # bounded: deltas pass through it too
                    clean.clear()
                clean.add(token)
        return text

    def __bool__(self) -> bool:
        return True  # the token shapes are always looked for


def _replacement(match: re.Match[str]) -> str:
    return (match.group("keep") or "") + REDACTED


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    environ = dict(os.environ) if environ is None else environ
    return [v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH]


log = logging.getLogger(__name__)
_string: Callable[[str], str] = encode_basestring  # a JSON string literal, as pydantic writes it (C when built)
_MAX_DEPTH = 32
_wire_keys: dict[type[BaseModel], tuple[tuple[str, str], ...]] = {}
_enum_json: dict[type, dict[object, str]] = {}  # per enum class whose values are all strings: each member's JSON
# Event classes whose direct JSON was compared with pydantic's on their first event: True, the same; False, not
# (a dependency changed how it writes them): pydantic writes those from then on.
_agrees: dict[type[BaseModel], bool] = {}
_keys_clean: dict[type[BaseModel], bool] = {}  # per model class: True when none of its keys holds a shape probe


class _NotPlain(Exception):
    """A value the direct path leaves to pydantic: floats, bytes, extra fields, deep nesting."""


def _keys_of(kind: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(field name, ``"wireKey":``) for each field of ``kind``, in declaration order (pydantic's order), from
    pydantic's public ``model_fields``."""
    keys = _wire_keys.get(kind)
    if keys is None:
        keys = _wire_keys[kind] = tuple((name, f'"{field.serialization_alias or field.alias or name}":')
                                        for name, field in kind.model_fields.items())
        written = "".join(key for _, key in keys)
        _keys_clean[kind] = not any(probe in written for probe in SHAPE_PROBES)
    return keys


def _event_json_direct(event: BaseModel) -> tuple[str, list[str] | None]:
    """An event as ``_model_json`` writes it, and its string values' JSON tokens (for ``Redactor.json_tokens``),
    or None when a value is a list, dict or model (or its keys hold a probe): then the redactor looks at the whole
    text."""
    if event.__pydantic_extra__:
        raise _NotPlain
    kind = type(event)
    keys = _wire_keys.get(kind) or _keys_of(kind)
    values = vars(event)
    parts = []
    strings = []
    nested = not _keys_clean[kind]
    for name, key in keys:
        value = values[name]
        if value is None:
            continue
        value_kind = type(value)
        if value_kind is str:
            token = _string(value)
        elif value_kind in _enum_json:
            token = _enum_json[value_kind][value]
        elif value_kind is int:  # a timestamp: a number holds no probe
            parts.append(key + str(value))
            continue
        else:
            parts.append(key + _value_json(value, 0))
            if value_kind is not bool:  # true/false hold no probe
                nested = True
            continue
        parts.append(key + token)
        strings.append(token)
    return "{" + ",".join(parts) + "}", (None if nested else strings)


def _model_json(model: BaseModel, depth: int) -> str:
    """A model as ``model_dump_json(by_alias=True, exclude_none=True)`` writes it."""
    if model.__pydantic_extra__:  # fields the model does not declare (``model_extra``): pydantic's
        raise _NotPlain
    values = vars(model)  # the declared fields' values (pydantic keeps extras apart, in ``model_extra``)
    parts = []
    for name, key in _wire_keys.get(type(model)) or _keys_of(type(model)):
        value = values[name]
        if value is None:  # exclude_none: fields only (None inside lists and dicts stays null)
            continue
        kind = type(value)
        if kind is str:  # the common cases without a call
            parts.append(key + _string(value))
        elif kind in _enum_json:
            parts.append(key + _enum_json[kind][value])
        else:
            parts.append(key + _value_json(value, depth))
    return "{" + ",".join(parts) + "}"


def _value_json(value: object, depth: int) -> str:
    kind = type(value)
    if kind is str:
        return _string(value)  # type: ignore[arg-type]  # kind is str (exact: a str subclass takes another path)
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if depth >= _MAX_DEPTH:
        raise _NotPlain
    if kind is list or kind is tuple:
        items: list[object] | tuple[object, ...] = value  # type: ignore[assignment]  # kind is list or tuple, exact
        return "[" + ",".join([_value_json(item, depth + 1) for item in items]) + "]"
    if kind is dict:
        parts = []
        for key, item in value.items():  # type: ignore[attr-defined]  # kind is dict (exact type: the fast path)
            if type(key) is not str:
                raise _NotPlain
            parts.append(_string(key) + ":" + _value_json(item, depth + 1))
        return "{" + ",".join(parts) + "}"
    if isinstance(value, Enum) and type(value.value) is str:
        enum_type = type(value)
        if all(type(member.value) is str for member in enum_type):
            _enum_json[enum_type] = {member: _string(member.value) for member in enum_type}
        return _string(value.value)
    if isinstance(value, BaseModel):
        return _model_json(value, depth + 1)
    raise _NotPlain  # floats (pydantic formats them its own way), bytes, dates, ...


def event_json(event: BaseEvent, redact: Redactor) -> str:
    """The event's wire JSON (camelCase, no null fields), with secrets removed.

    Written directly when every value is a string, int, boolean, None, list, dict or ag-ui model of those: the
    same JSON as pydantic without the ag-ui models' per-field wrap serializer, which cost most of the encoding.
    Anything else (a float, say) is written by pydantic. The first event of each class is written both ways and
    compared (public API only): a class whose wire format a dependency has changed is pydantic's from then on, so
    the direct path can never put a different wire format out (``tests/core/test_wire_format.py`` pins it).
    """
    kind = type(event)
    agrees = _agrees.get(kind)
    if agrees:  # the common case: a class whose direct JSON agreed with pydantic's
        try:
            direct, strings = _event_json_direct(event)
        except _NotPlain:
            return redact(event.model_dump_json(by_alias=True, exclude_none=True))
        return redact(direct) if strings is None else redact.json_tokens(direct, strings)
    text: str | None = None
    if agrees is None:
        try:
            text = _model_json(event, 0)
        except _NotPlain:
            text = None
    reference = event.model_dump_json(by_alias=True, exclude_none=True)
    if text is not None:
        _agrees[kind] = text == reference
        if text != reference:
            log.warning("%s: the direct JSON differs from pydantic's; pydantic writes it", kind.__name__)
    return redact(reference)


def sse_frame(seq: int, data: str) -> str:
    return f"id: {seq}\ndata: {data}\n\n"
