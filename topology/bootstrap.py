"""The one parser of a Kafka bootstrap list (`--bootstrap HOST:PORT[,HOST:PORT...]`).

Kafka clients take the list as given and fail late, or worse: librdkafka reads the port as a
16-bit number, so `127.0.0.1:99999` quietly becomes port 34463. Every adapter that opens a
client parses the list here first, so a bad entry is an InputError before anything connects.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
from dataclasses import dataclass

from kafka_rebalance.core.errors import InputError, problems_message

FORM = "HOST:PORT[,HOST:PORT...], e.g. localhost:9092 or [::1]:9092"
_PORT = re.compile(r"[0-9]{1,5}")
_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+._-]*://")


@dataclass(frozen=True, slots=True)
class BootstrapServer:
    """One entry of the list: a host name or IP address (IPv6 without brackets), a port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_bootstrap(text: str) -> tuple[BootstrapServer, ...]:
    """Every entry of a comma-separated bootstrap list; InputError naming each bad entry and
    what to write instead."""
    if not text.strip():
        raise InputError(f"no bootstrap servers given: pass --bootstrap {FORM}")
    servers: list[BootstrapServer] = []
    problems: list[str] = []
    for entry in (part.strip() for part in text.split(",")):
        try:
            servers.append(_parse_entry(entry))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise InputError(f"--bootstrap: {problems_message(problems)}; give {FORM}")
    return tuple(servers)


def bootstrap_string(servers: tuple[BootstrapServer, ...]) -> str:
    """The list in the form every Kafka client reads (`bootstrap.servers`)."""
    return ",".join(map(str, servers))


def _parse_entry(entry: str) -> BootstrapServer:
    if not entry:
        raise ValueError("an empty entry (a stray comma)")
    if _SCHEME.match(entry):
        raise ValueError(f"{entry!r} has a scheme: give HOST:PORT alone (the security "
                         "protocol goes in --command-config)")
    host, port_text = _split(entry)
    return BootstrapServer(host, _port(entry, port_text))


def _split(entry: str) -> tuple[str, str]:
    """('host', 'port') of 'host:port' or '[v6]:port'."""
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            raise ValueError(f"{entry!r} opens '[' without closing it")
        host, rest = entry[1:close], entry[close + 1:]
        if not rest.startswith(":"):
            raise ValueError(f"{entry!r} has no port: write [{host}]:PORT")
        _ipv6(entry, host)
        return host, rest[1:]
    if entry.count(":") > 1:
        raise ValueError(f"{entry!r}: an IPv6 address goes in brackets, as in [::1]:9092")
    host, colon, port = entry.partition(":")
    if not colon:
        raise ValueError(f"{entry!r} has no port: write {entry}:PORT (Kafka listens on 9092 "
                         "by default)")
    if not host:
        raise ValueError(f"{entry!r} has no host")
    if not _HOST.fullmatch(host):
        raise ValueError(f"{entry!r}: {host!r} is not a host name or IPv4 address")
    return host, port


def _ipv6(entry: str, host: str) -> None:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise ValueError(f"{entry!r}: {host!r} in brackets is not an IPv6 address") from None


def _port(entry: str, text: str) -> int:
    if not text:
        raise ValueError(f"{entry!r} has no port after ':'")
    if not _PORT.fullmatch(text):
        raise ValueError(f"{entry!r}: the port {text!r} is not a number from 1 to 65535")
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"{entry!r}: the port {port} is not in 1..65535")
    return port


PROBE_SECONDS = 2.0  # a TCP connect slower than this decides nothing: the client tries as usual
_DEFINITE = (errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH)
# the resolver's answer "no such name" (not a resolver that did not answer: EAI_AGAIN)
_UNKNOWN_HOST = tuple(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA")
                      if hasattr(socket, name))


def refused_everywhere(servers: tuple[BootstrapServer, ...],
                       timeout_s: float = PROBE_SECONDS) -> str | None:
    """Why, server by server, when every one of `servers` definitely refuses a TCP connection
    (nothing listens on the port, the host name is unknown, no route to it); None when one
    accepts or any is merely slow. A Kafka client would retry such a list until its timeout
    (15 s and more) before saying the same: this answers at once, and connects nothing else."""
    reasons: list[str] = []
    for server in servers:
        reason = _refusal(server, timeout_s)
        if reason is None:
            return None
        reasons.append(reason)
    return "; ".join(reasons)


def refusing(servers: tuple[BootstrapServer, ...],
             timeout_s: float = PROBE_SECONDS) -> tuple[list[str], int]:
    """Why each server of `servers` that definitely refuses a TCP connection does, and how many
    others accept one (or are merely slow): which of a list is down when a call timed out."""
    reasons = [reason for reason in (_refusal(s, timeout_s) for s in servers)
               if reason is not None]
    return reasons, len(servers) - len(reasons)


def _refusal(server: BootstrapServer, timeout_s: float) -> str | None:
    """Why `server` definitely refuses a connection; None when it accepts one, is slow, or
    fails in a way that may pass (a DNS server not answering, one address of several)."""
    try:
        socket.create_connection((server.host, server.port), timeout=timeout_s,
                                 all_errors=True).close()
    except socket.gaierror as exc:
        return f"{server}: host name not found" if exc.errno in _UNKNOWN_HOST else None
    except ExceptionGroup as group:  # one error per address the name resolved to
        errors = [e for e in group.exceptions if isinstance(e, OSError)]
        if errors and len(errors) == len(group.exceptions) and all(
                e.errno in _DEFINITE for e in errors):
            return f"{server}: {errors[0].strerror or 'refused'}"
    except OSError as exc:
        if exc.errno in _DEFINITE:
            return f"{server}: {exc.strerror or 'refused'}"
    return None
