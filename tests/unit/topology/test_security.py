"""Security settings: parsing from files and env, validation, and that secrets never leak."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_rebalance.core.errors import InputError
from topology.security import (
    SaslMechanism,
    Secret,
    SecurityProtocol,
    SecuritySettings,
    load_security,
)

PASSWORD = "s3cr3t-Pa55word"
KEY_PASSWORD = "k3y-Pa55word"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _pem(tmp_path: Path, name: str) -> Path:
    return _write(tmp_path, name, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")


def test_default_is_plaintext_with_no_extras() -> None:
    settings = load_security(None, {})
    assert settings.protocol is SecurityProtocol.PLAINTEXT
    assert settings.confluent_config() == {"security.protocol": "PLAINTEXT"}
    assert settings.kafka_python_kwargs() == {"security_protocol": "PLAINTEXT"}


def test_properties_file_with_jaas_line(tmp_path: Path) -> None:
    conf = _write(tmp_path, "client.properties", "\n".join([
        "# client settings",
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=SCRAM-SHA-512",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{PASSWORD}";',
    ]))
    settings = load_security(conf, {})
    assert settings.sasl_mechanism is SaslMechanism.SCRAM_SHA_512
    assert settings.sasl_username == "admin"
    assert settings.confluent_config() == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin", "sasl.password": PASSWORD,
    }
    kwargs = settings.kafka_python_kwargs()
    assert kwargs["sasl_plain_password"] == PASSWORD
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-512"


def test_yaml_file_with_tls(tmp_path: Path) -> None:
    ca, cert, key = (_pem(tmp_path, n) for n in ("ca.pem", "cert.pem", "key.pem"))
    conf = _write(tmp_path, "client.yaml", "\n".join([
        "security.protocol: SASL_SSL",
        "sasl.mechanism: PLAIN",
        "sasl.username: app",
        f"sasl.password: {PASSWORD}",
        f"ssl.ca.location: {ca}",
        f"ssl.certificate.location: {cert}",
        f"ssl.key.location: {key}",
        f"ssl.key.password: {KEY_PASSWORD}",
        "ssl.check.hostname: false",
    ]))
    settings = load_security(conf, {})
    conf_dict = settings.confluent_config()
    assert conf_dict["ssl.ca.location"] == str(ca)
    assert conf_dict["ssl.key.password"] == KEY_PASSWORD
    assert conf_dict["ssl.endpoint.identification.algorithm"] == "none"
    kwargs = settings.kafka_python_kwargs()
    assert kwargs["ssl_certfile"] == str(cert)
    assert kwargs["ssl_check_hostname"] is False
    assert kwargs["ssl_password"] == KEY_PASSWORD


def test_env_overrides_file(tmp_path: Path) -> None:
    conf = _write(tmp_path, "c.properties", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                  "sasl.username=file-user\nsasl.password=file-pass\n")
    settings = load_security(conf, {
        "REBALANCE_SECURITY_PROTOCOL": "sasl_plaintext",
        "REBALANCE_SASL_MECHANISM": "scram-sha-256",
        "REBALANCE_SASL_USERNAME": "env-user",
        "REBALANCE_SASL_PASSWORD": PASSWORD,
    })
    assert settings.protocol is SecurityProtocol.SASL_PLAINTEXT
    assert settings.sasl_mechanism is SaslMechanism.SCRAM_SHA_256
    assert settings.sasl_username == "env-user"
    assert settings.sasl_password is not None and settings.sasl_password.reveal() == PASSWORD


def test_env_only_sasl_ssl(tmp_path: Path) -> None:
    ca = _pem(tmp_path, "ca.pem")
    settings = load_security(None, {
        "REBALANCE_SECURITY_PROTOCOL": "SASL_SSL", "REBALANCE_SASL_MECHANISM": "PLAIN",
        "REBALANCE_SASL_USERNAME": "u", "REBALANCE_SASL_PASSWORD": PASSWORD,
        "REBALANCE_SSL_CAFILE": str(ca),
    })
    assert settings.confluent_config()["ssl.ca.location"] == str(ca)
    assert settings.confluent_config()["ssl.endpoint.identification.algorithm"] == "https"


def test_repr_str_and_dataclass_fields_mask_secrets(tmp_path: Path) -> None:
    ca, cert, key = (_pem(tmp_path, n) for n in ("ca.pem", "cert.pem", "key.pem"))
    settings = SecuritySettings(
        protocol=SecurityProtocol.SASL_SSL, sasl_mechanism=SaslMechanism.PLAIN,
        sasl_username="app", sasl_password=Secret(PASSWORD), ssl_cafile=ca,
        ssl_certfile=cert, ssl_keyfile=key, ssl_key_password=Secret(KEY_PASSWORD),
    )
    for text in (repr(settings), str(settings), f"{settings}", repr(settings.sasl_password),
                 str(settings.sasl_password), f"{settings.ssl_key_password}"):
        assert PASSWORD not in text
        assert KEY_PASSWORD not in text
    assert "sasl_username=app" in repr(settings)
    assert "******" in repr(settings)


@pytest.mark.parametrize("env, expected", [
    ({"REBALANCE_SECURITY_PROTOCOL": "KERBEROS"}, "unknown security protocol"),
    ({"REBALANCE_SECURITY_PROTOCOL": "SASL_SSL", "REBALANCE_SASL_MECHANISM": "GSSAPI",
      "REBALANCE_SASL_USERNAME": "u", "REBALANCE_SASL_PASSWORD": PASSWORD},
     "unknown SASL mechanism"),
    ({"REBALANCE_SECURITY_PROTOCOL": "SASL_SSL", "REBALANCE_SASL_MECHANISM": "PLAIN",
      "REBALANCE_SASL_PASSWORD": PASSWORD}, "needs a username"),
    ({"REBALANCE_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "REBALANCE_SASL_USERNAME": "u",
      "REBALANCE_SASL_PASSWORD": PASSWORD}, "needs a SASL mechanism"),
    ({"REBALANCE_SASL_MECHANISM": "PLAIN", "REBALANCE_SASL_USERNAME": "u",
      "REBALANCE_SASL_PASSWORD": PASSWORD}, "security protocol is PLAINTEXT"),
    ({"REBALANCE_SSL_KEY_PASSWORD": PASSWORD}, "TLS settings"),
    ({"REBALANCE_SECURITY_PROTOCOL": "SSL", "REBALANCE_SSL_CAFILE": "/nonexistent/ca.pem"},
     "does not exist"),
])
def test_invalid_combinations_raise_input_error_without_the_secret(
    env: dict[str, str], expected: str
) -> None:
    with pytest.raises(InputError) as info:
        load_security(None, env)
    assert expected in str(info.value)
    assert PASSWORD not in str(info.value)


def test_certificate_without_key_is_rejected(tmp_path: Path) -> None:
    cert = _pem(tmp_path, "cert.pem")
    expected = re.escape("both ssl.certificate.location and ssl.key.location")
    with pytest.raises(InputError, match=expected):
        load_security(None, {"REBALANCE_SECURITY_PROTOCOL": "SSL",
                             "REBALANCE_SSL_CERTFILE": str(cert)})


def test_file_errors_do_not_echo_the_line(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.properties", f"security.protocol=SASL_SSL\n{PASSWORD}\n")
    with pytest.raises(InputError, match="line 2") as info:
        load_security(bad, {})
    assert PASSWORD not in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("sasl.password: " + "[" * 100_000 + "]" * 100_000 + "\n",
     "not valid YAML (nested too deeply)"),
    (f"sasl.password: '{PASSWORD}\n", "not valid YAML"),
], ids=["nested 100,000 deep", "unclosed quote"])
def test_bad_yaml_is_one_line_without_the_secret(tmp_path: Path, text: str, message: str) -> None:
    bad = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(InputError) as info:
        load_security(bad, {})
    assert str(info.value) == f"{bad}: {message}"


def test_unknown_key_is_named_but_its_value_is_not(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.properties", f"sasl.pasword={PASSWORD}\n")
    with pytest.raises(InputError, match=re.escape("unknown setting 'sasl.pasword'")) as info:
        load_security(bad, {})
    assert PASSWORD not in str(info.value)


def test_java_truststore_gets_a_pem_hint(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.properties", "ssl.truststore.location=/etc/kafka/ts.jks\n")
    with pytest.raises(InputError, match=re.escape("ssl.ca.location")):
        load_security(bad, {})


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read command config"):
        load_security(tmp_path / "absent.properties", {})


def test_snapshot_source_strips_credentials_from_the_prometheus_url() -> None:
    from kafka_rebalance.usecases.snapshot import source as snapshot_source

    source = snapshot_source("k:9092", f"https://ops:{PASSWORD}@prom.example:9443/api", "5m")
    assert source["prometheus"] == "https://prom.example:9443/api"
    assert PASSWORD not in repr(source)
    assert snapshot_source("k:9092", None, "1m")["rate_window"] is None
