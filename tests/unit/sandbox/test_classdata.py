"""Class-data archives: where they live, that a JVM is given one, and that one that cannot be
made is said once and not tried again at every start."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_rebalance.sandbox import classdata, config


def _jars(tmp_path: Path) -> Path:
    jar_dir = tmp_path / "jars"
    jar_dir.mkdir()
    (jar_dir / "kafka.jar").write_bytes(b"k")
    return jar_dir


def test_a_jvm_given_an_archive_maps_it_and_one_without_starts_as_before() -> None:
    plain = config.java_command(Path("/jars"), "384m", "kafka.Kafka", ["/s/server.properties"])
    mapped = config.java_command(Path("/jars"), "384m", "kafka.Kafka", ["/s/server.properties"],
                                 archive=Path("/a/server.jsa"))
    assert not any(arg.startswith("-XX:SharedArchiveFile") for arg in plain)
    assert "-XX:SharedArchiveFile=/a/server.jsa" in mapped
    assert mapped[-3:] == plain[-3:] == ["/jars/*", "kafka.Kafka", "/s/server.properties"]


def test_another_jar_set_gets_archives_of_its_own(tmp_path: Path) -> None:
    jar_dir = _jars(tmp_path)
    first = classdata.archive_dir(jar_dir)
    (jar_dir / "more.jar").write_bytes(b"m")
    assert first is not None and classdata.archive_dir(jar_dir) not in (None, first)


def test_archives_made_once_are_found_again(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    jar_dir = _jars(tmp_path)
    made: list[Path] = []

    def make(_: Path, where: Path) -> None:
        made.append(where)
        (where / "server.jsa").write_bytes(b"s")
        (where / "tool.jsa").write_bytes(b"t")
    monkeypatch.setattr(classdata, "_make", make)
    said: list[str] = []
    first = classdata.ensure(jar_dir, said.append)
    again = classdata.ensure(jar_dir, said.append)
    assert first == again == classdata.present(jar_dir)
    assert first.server == made[0] / "server.jsa" and first.tool == made[0] / "tool.jsa"
    assert len(made) == 1 and len(said) == 1


def test_archives_that_cannot_be_made_are_said_once_and_not_tried_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar_dir = _jars(tmp_path)
    tries: list[Path] = []

    def fail(_: Path, where: Path) -> None:
        tries.append(where)
        raise classdata._NotMade("the JVM wrote no server.jsa")
    monkeypatch.setattr(classdata, "_make", fail)
    said: list[str] = []
    assert classdata.ensure(jar_dir, said.append) == classdata.Archives()
    assert classdata.ensure(jar_dir, said.append) == classdata.Archives()
    assert len(tries) == 1
    assert said[-1] == ("no class-data archive (the JVM wrote no server.jsa): the JVMs start "
                        "without one")
