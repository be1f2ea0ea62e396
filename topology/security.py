"""Client security settings: protocol, SASL (PLAIN, SCRAM) and TLS, from a file and/or the env.

The file is a Kafka client `.properties` file or a flat YAML mapping (chosen by its suffix) with
librdkafka-style keys; environment variables (`REBALANCE_*`) override it key by key. Secrets
live in `Secret` wrappers whose repr and str are masked, so settings can be printed, logged or
put into an error message without leaking a password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from kafka_rebalance.core.errors import InputError
from topology.documents import parse_yaml


class SecurityProtocol(StrEnum):
    """Kafka's `security.protocol` values."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class SaslMechanism(StrEnum):
    """The SASL mechanisms the tool supports (username and password based)."""

    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


_MASK = "******"
_E = TypeVar("_E", SecurityProtocol, SaslMechanism)


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret string: masked in repr/str; `reveal()` is the one way to read it."""

    _value: str

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({_MASK})"

    def __str__(self) -> str:
        return _MASK


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    """Validated client security settings (PLAINTEXT with no extras by default)."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: Secret | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_key_password: Secret | None = None
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        _check_sasl(self)
        _check_tls(self)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            shown.append(f"{f.name}={_MASK if isinstance(value, Secret) else str(value)}")
        return f"SecuritySettings({', '.join(shown)})"

    __str__ = __repr__

    def confluent_config(self) -> dict[str, str]:
        """librdkafka (confluent-kafka) configuration entries."""
        conf = {"security.protocol": self.protocol.value}
        if self.sasl_mechanism is not None:
            conf["sasl.mechanism"] = self.sasl_mechanism.value
            conf["sasl.username"] = self.sasl_username or ""
            conf["sasl.password"] = self.sasl_password.reveal() if self.sasl_password else ""
        if self.protocol.uses_tls:
            conf["ssl.endpoint.identification.algorithm"] = (
                "https" if self.ssl_check_hostname else "none")
            for key, path in (("ssl.ca.location", self.ssl_cafile),
                              ("ssl.certificate.location", self.ssl_certfile),
                              ("ssl.key.location", self.ssl_keyfile)):
                if path is not None:
                    conf[key] = str(path)
            if self.ssl_key_password is not None:
                conf["ssl.key.password"] = self.ssl_key_password.reveal()
        return conf

    def kafka_python_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python clients (KafkaAdminClient)."""
        kwargs: dict[str, Any] = {"security_protocol": self.protocol.value}
        if self.sasl_mechanism is not None:
            kwargs["sasl_mechanism"] = self.sasl_mechanism.value
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = (
                self.sasl_password.reveal() if self.sasl_password else None)
        if self.protocol.uses_tls:
            kwargs["ssl_check_hostname"] = self.ssl_check_hostname
            kwargs["ssl_cafile"] = str(self.ssl_cafile) if self.ssl_cafile else None
            kwargs["ssl_certfile"] = str(self.ssl_certfile) if self.ssl_certfile else None
            kwargs["ssl_keyfile"] = str(self.ssl_keyfile) if self.ssl_keyfile else None
            kwargs["ssl_password"] = (
                self.ssl_key_password.reveal() if self.ssl_key_password else None)
        return kwargs


def _check_sasl(s: SecuritySettings) -> None:
    if s.protocol.uses_sasl:
        if s.sasl_mechanism is None:
            raise InputError(f"security protocol {s.protocol} needs a SASL mechanism: set "
                             "sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
        if not s.sasl_username or s.sasl_password is None:
            raise InputError(f"SASL mechanism {s.sasl_mechanism} needs a username and a "
                             "password: set sasl.username and sasl.password (or "
                             "REBALANCE_SASL_USERNAME / REBALANCE_SASL_PASSWORD)")
    elif s.sasl_mechanism is not None or s.sasl_username or s.sasl_password is not None:
        raise InputError(f"SASL settings are given but the security protocol is {s.protocol}: "
                         "set security.protocol to SASL_SSL or SASL_PLAINTEXT")


def _check_tls(s: SecuritySettings) -> None:
    tls_given = [f for f in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password")
                 if getattr(s, f) is not None]
    if tls_given and not s.protocol.uses_tls:
        raise InputError(f"TLS settings ({', '.join(tls_given)}) are given but the security "
                         f"protocol is {s.protocol}: set security.protocol to SSL or SASL_SSL")
    if (s.ssl_certfile is None) != (s.ssl_keyfile is None):
        raise InputError("a TLS client certificate needs both ssl.certificate.location and "
                         "ssl.key.location")
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = getattr(s, name)
        if path is not None and not path.is_file():
            raise InputError(f"{name.replace('_', ' ')} {path} does not exist or is not a file")


# Settings keys (file) -> field; librdkafka names, with kafka-python style aliases.
_FILE_KEYS: dict[str, str] = {
    "security.protocol": "protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.cafile": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.certfile": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.keyfile": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "ssl.check.hostname": "ssl_check_hostname",
    "ssl.endpoint.identification.algorithm": "ssl_endpoint_algorithm",
}

ENV_KEYS: dict[str, str] = {
    "REBALANCE_SECURITY_PROTOCOL": "protocol",
    "REBALANCE_SASL_MECHANISM": "sasl_mechanism",
    "REBALANCE_SASL_USERNAME": "sasl_username",
    "REBALANCE_SASL_PASSWORD": "sasl_password",
    "REBALANCE_SSL_CAFILE": "ssl_cafile",
    "REBALANCE_SSL_CERTFILE": "ssl_certfile",
    "REBALANCE_SSL_KEYFILE": "ssl_keyfile",
    "REBALANCE_SSL_KEY_PASSWORD": "ssl_key_password",
    "REBALANCE_SSL_CHECK_HOSTNAME": "ssl_check_hostname",
}

_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_UNSUPPORTED_HINTS = {
    "ssl.truststore.location": "Java truststores are not supported: export the CA certificate "
                               "as PEM and set ssl.ca.location",
    "ssl.keystore.location": "Java keystores are not supported: export the certificate and key "
                             "as PEM and set ssl.certificate.location and ssl.key.location",
}


def _parse_properties(text: str, source: str) -> dict[str, str]:
    """Parse `key=value` (or `key: value`) lines; `#`/`!` comments; no line content in errors."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if match is None:
            raise InputError(f"{source}: line {number} is not a key=value setting")
        out[match.group(1)] = match.group(2).strip()
    return out


def _parse_yaml(text: str, source: str) -> dict[str, str]:
    raw = parse_yaml(text, source, detail=False)  # no parser detail: it may quote a secret
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{source}: expected a flat mapping of client settings")
    return {str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in raw.items()}


def _file_fields(entries: Mapping[str, str], source: str) -> dict[str, str]:
    """Map file keys to field names; the JAAS line yields username and password."""
    out: dict[str, str] = {}
    for key, value in entries.items():
        if key == "sasl.jaas.config":
            for name, found in _JAAS_FIELD.findall(value):
                out[f"sasl_{name}"] = found.replace('\\"', '"')
            continue
        if key in _UNSUPPORTED_HINTS:
            raise InputError(f"{source}: {key}: {_UNSUPPORTED_HINTS[key]}")
        if key not in _FILE_KEYS:
            raise InputError(f"{source}: unknown setting {key!r}; supported: "
                             f"{', '.join(sorted(_FILE_KEYS))}, sasl.jaas.config")
        out[_FILE_KEYS[key]] = value
    if "ssl_endpoint_algorithm" in out:
        algorithm = out.pop("ssl_endpoint_algorithm").strip().lower()
        out.setdefault("ssl_check_hostname", "false" if algorithm in ("", "none") else "true")
    return out


def read_security_file(path: Path) -> dict[str, str]:
    """Raw settings (field name -> text) from a .properties or .yaml/.yml file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read command config {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"command config {path} is not a text file (not UTF-8); give the "
                         ".properties or YAML file of Kafka client settings") from None
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    entries = _parse_yaml(text, str(path)) if is_yaml else _parse_properties(text, str(path))
    return _file_fields(entries, str(path))


def _enum_value(kind: type[_E], text: str, what: str) -> _E:
    try:
        return kind(text.strip().upper())
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise InputError(f"unknown {what} {text.strip()!r}: expected one of {allowed}") from None


def _bool(text: str, what: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise InputError(f"{what} must be true or false, got {text!r}")


def settings_from_fields(raw: Mapping[str, str]) -> SecuritySettings:
    """Build validated settings from field name -> text (empty text means unset)."""
    given = {k: v for k, v in raw.items() if v.strip() != "" or k.endswith("password")}

    def path(name: str) -> Path | None:
        return Path(given[name]).expanduser() if name in given else None

    def secret(name: str) -> Secret | None:
        return Secret(given[name]) if name in given else None

    protocol = _enum_value(SecurityProtocol, given.get("protocol", "PLAINTEXT"),
                           "security protocol")
    mechanism = given.get("sasl_mechanism")
    return SecuritySettings(
        protocol=protocol,
        sasl_mechanism=_enum_value(SaslMechanism, mechanism, "SASL mechanism")
        if mechanism else None,
        sasl_username=given.get("sasl_username"),
        sasl_password=secret("sasl_password"),
        ssl_cafile=path("ssl_cafile"),
        ssl_certfile=path("ssl_certfile"),
        ssl_keyfile=path("ssl_keyfile"),
        ssl_key_password=secret("ssl_key_password"),
        ssl_check_hostname=_bool(given.get("ssl_check_hostname", "true"), "ssl check hostname"),
    )


def load_security(config_file: Path | None, environ: Mapping[str, str]) -> SecuritySettings:
    """Settings from `config_file` (if any), each overridden by its REBALANCE_* variable."""
    raw: dict[str, str] = read_security_file(config_file) if config_file is not None else {}
    for env_name, field_name in ENV_KEYS.items():
        if env_name in environ:
            raw[field_name] = environ[env_name]
    return settings_from_fields(raw)
