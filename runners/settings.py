"""What every backend type's settings block shares, and the checks of its endpoint values.

A backend type is declared once, beside the runner that serves it: its runner module defines a
settings block (a subclass of :class:`RemoteSettings` or :class:`BackendSettings` with
``type: Literal["<name>"]``) and registers both with ``@backend("<name>", settings=...)``
(:mod:`runners.registry`). The pool file's schema builds its ``backends:`` union from that registry,
so a new type touches no other file. Keys a pool file leaves out take the runner's own defaults
(``default_timeout_s``, ``default_max_concurrency``).

Each check raises ``ValueError`` with a message that says what to write instead, and never echoes
a value that may hold a secret (a pasted key, a URL's password).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

_ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_VAR_MAX_CHARS = 128
MAX_TIMEOUT_S = 3600  # one attempt; longer waits look like a hung server, not a slow answer
MAX_CONCURRENCY = 256  # per backend; beyond this a typo, not a plan (and file handles run out)
RESPONSE_BYTES_RANGE = (1024, 1024**3)  # 1 KiB .. 1 GiB
ANSWER_CHARS_RANGE = (1_000, 10_000_000)

# Prefixes of real API keys, case-sensitive as the providers issue them, so env var names such
# as HF_TOKEN or BEARER_TOKEN are not mistaken for keys.
_KEY_PREFIXES = (
    "sk-",
    "sk_",
    "gsk_",
    "xai-",
    "hf_",
    "ghp_",
    "github_pat_",
    "AIza",
    "pk-",
    "Bearer",
)
_API_KEY_ENV_HINT = (
    "api_key_env must be the NAME of an environment variable (letters, digits, _; not starting "
    f"with a digit; at most {ENV_VAR_MAX_CHARS} characters), not a key; the value was not "
    "printed. Export the key (export DEEPSEEK_API_KEY=...) and write its name here "
    "(api_key_env: DEEPSEEK_API_KEY)"
)
_URL_EXAMPLE = "e.g. http://localhost:8000/v1 or https://api.deepseek.com/v1"


def looks_like_api_key(value: str) -> bool:
    """Heuristic: a known key prefix, or a long token with digits and no word separators."""
    if value.startswith(_KEY_PREFIXES):
        return True
    has_digit = any(c.isdigit() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return (len(value) >= 20 and "_" not in value and has_digit) or (len(value) >= 32 and mixed_case and has_digit)


def check_api_key_env(value: str) -> str:
    """The NAME of the env var holding the key; the key itself never goes in the file.

    The message never contains the value: a wrong value is most often the pasted key.
    """
    if len(value) > ENV_VAR_MAX_CHARS or not _ENV_VAR.fullmatch(value) or looks_like_api_key(value):
        raise ValueError(_API_KEY_ENV_HINT)
    return value


def check_base_url(value: str) -> str:
    """An http(s) URL with a host, an optional port 1-65535 and a path; no userinfo, query,
    fragment or whitespace. Stored without a trailing slash, since runners append paths.

    A URL with ``user:pass@`` is never echoed (the password would end up in logs); keys go in
    the environment variable that ``api_key_env`` names.
    """
    authority = re.split(r"[/?#]", value.partition("://")[2] if "://" in value else value)[0]
    if "@" in authority:
        raise ValueError(
            "base_url must not contain a user name or password (user:pass@host); the value was "
            "not printed because it may hold a password. Remove them, put the key in an "
            "environment variable and name it in api_key_env"
        )
    if "?" in value or "#" in value:  # not printed: a query is where keys get pasted
        raise ValueError(
            "base_url must not have a query (?) or fragment (#): request paths such as "
            "/chat/completions are appended to it; remove them (the value was not printed)"
        )
    shown = _shown_url(value)
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(
            f"base_url {shown} contains spaces or control characters; remove them "
            "(a space inside a URL path is written %20)"
        )
    try:
        parts = urlsplit(value)
    except ValueError as exc:  # e.g. an unbalanced [ around an IPv6 host
        raise ValueError(f"base_url {shown} is not a valid URL ({exc}); {_URL_EXAMPLE}") from None
    if parts.scheme not in ("http", "https") or not value.lower().startswith(f"{parts.scheme}://"):
        raise ValueError(f"base_url {shown} must start with http:// or https:// and a host; {_URL_EXAMPLE}")
    if not parts.hostname:
        raise ValueError(f"base_url {shown} has no host after {parts.scheme}://; {_URL_EXAMPLE}")
    port = _port_text(parts.netloc)
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(
            f"base_url {shown} has port {port!r}; a port is a number from 1 to 65535 "
            "(or leave out ':port' for the scheme's default)"
        )
    return value.rstrip("/")


def _shown_url(value: str) -> str:
    """The URL for a message: quoted and shortened; withheld if it has an '@' anywhere."""
    if "@" in value:
        return "(not printed: it contains '@')"
    if not re.match(r"(?i)https?://", value):  # not a URL: maybe a key pasted on the wrong line
        return "(not printed: it is not an http(s) URL)"
    return repr(value) if len(value) <= 80 else repr(value[:77] + "...")


def _port_text(netloc: str) -> str | None:
    """The text after the host's last ':' (None when there is no port); IPv6 hosts are [..]."""
    host_end = netloc.rfind("]") + 1 if netloc.startswith("[") else 0
    _, colon, port = netloc[host_end:].rpartition(":")
    return port if colon else None


EnvVarName = Annotated[str, AfterValidator(check_api_key_env)]
BaseUrl = Annotated[str, AfterValidator(check_base_url)]


class SettingsBlock(BaseModel):
    """A block of the pool file: unknown keys and coerced types are errors, not silent changes."""

    # allow_inf_nan=False: YAML reads .inf/.nan as floats, and no setting here means "forever"
    # or "undefined". hide_input_in_errors: a ValidationError printed raw must not echo values
    # such as a pasted key.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False, hide_input_in_errors=True)


class BackendSettings(SettingsBlock):
    """Settings every backend type has: limits, retries and caps on what comes back.

    ``max_response_bytes`` caps an HTTP response body after decompression (a runaway or
    hostile server cannot fill memory); ``max_answer_chars`` caps an answer's text: longer
    answers are recorded as ``oversize`` and never sent to the judge. ``summary`` says in a few
    words what the type is for, in error messages that list the types.
    """

    summary: ClassVar[str] = ""
    timeout_s: float = Field(gt=0, le=MAX_TIMEOUT_S)  # left out: the runner's default_timeout_s
    max_retries: int = Field(default=3, ge=0, le=20)
    requests_per_minute: float | None = Field(default=None, gt=0)
    max_response_bytes: int = Field(default=8 * 1024**2, ge=RESPONSE_BYTES_RANGE[0], le=RESPONSE_BYTES_RANGE[1])
    max_answer_chars: int = Field(default=200_000, ge=ANSWER_CHARS_RANGE[0], le=ANSWER_CHARS_RANGE[1])

    @model_validator(mode="before")
    @classmethod
    def _runner_defaults(cls, data: Any) -> Any:
        """Keys left out take the defaults of the runner that serves the type (declared there once)."""
        from runners.registry import runner_class

        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            return data
        runner = runner_class(data["type"])
        if runner is None:
            return data  # an unknown type: the type check reports it
        filled = {"timeout_s": runner.default_timeout_s, **data}
        if "max_concurrency" in cls.model_fields and cls.model_fields["max_concurrency"].is_required():
            filled = {"max_concurrency": runner.default_max_concurrency, **filled}
        return filled

    def generation_keys(self) -> frozenset[str]:
        """The protocol-specific generation keys (``think``, ``num_ctx``) a model on this backend may
        set: the pool file refuses them elsewhere, since a server that ignores a setting answers as if
        it were unset, and a silently ignored setting is worse than an error. None by default."""
        return frozenset()

    def runner_options(self) -> dict[str, Any]:
        """Settings the runner itself takes as keyword arguments (``runners.registry.make_runner``'s
        ``options``), beyond the ones every runner takes. None by default."""
        return {}

    def token_logprobs(self) -> bool:
        """Whether requests may ask this backend for ``top_logprobs`` (its server returns them, or
        ignores the field and returns none); a judge weighs its scores only on such a backend. No by default."""
        return False


class RemoteSettings(BackendSettings):
    """A server someone else runs: its URL, the variable holding its key, requests in flight."""

    base_url: BaseUrl
    api_key_env: EnvVarName | None = None
    max_concurrency: int = Field(ge=1, le=MAX_CONCURRENCY)  # left out: the runner's default
