"""Settings: defaults with no file, a TOML file, environment overrides, the generated sample."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from berth import config

SAMPLE = Path(__file__).parents[2] / "etc" / "berth.sample.toml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("BERTH_"):
            monkeypatch.delenv(name)


def test_defaults_need_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = config.Settings(data_dir=tmp_path)
    assert settings.placement.port == 8778
    assert settings.placement.host == "127.0.0.1"
    assert settings.placement_database_url() == f"sqlite:///{tmp_path / 'placement.db'}"


def test_file_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "berth.toml"
    path.write_text('[placement]\nport = 9000\nworkers = 3\ncors_allowed_origins = ["http://a"]\n')
    monkeypatch.setenv(config.CONFIG_ENV, str(path))
    monkeypatch.setenv("BERTH_PLACEMENT__WORKERS", "5")
    settings = config.Settings()
    assert settings.placement.port == 9000
    assert settings.placement.workers == 5
    assert settings.placement.cors_allowed_origins == ["http://a"]


def test_unknown_settings_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "berth.toml"
    path.write_text("[placement]\nprot = 9000\n")
    monkeypatch.setenv(config.CONFIG_ENV, str(path))
    with pytest.raises(ValueError, match="prot"):
        config.Settings()


def test_sample_is_current_and_loads() -> None:
    sample = config.sample_config()
    assert SAMPLE.read_text() == sample, "run: berth config sample > etc/berth.sample.toml"
    parsed = tomllib.loads(sample)
    assert parsed["placement"]["port"] == 8778
