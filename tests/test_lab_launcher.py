"""`make lab`'s launcher: loopback only, token auth on, offline, --allow-root only for root."""
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("lab", ROOT / "scripts" / "lab.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)


def _opt(argv, name):
    return [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]


def test_listens_on_loopback_with_token_auth():
    argv = lab.lab_argv("/tmp/nb")
    assert _opt(argv, "ServerApp.ip") == ["127.0.0.1"]
    assert not any("token=" in a and a.endswith("token=") for a in argv)
    assert _opt(lab.lab_argv("/tmp/nb", token="abc"), "IdentityProvider.token") == ["abc"]
    with pytest.raises(ValueError, match="token"):
        lab.lab_argv("/tmp/nb", token="")


def test_news_update_check_and_extension_search_off():
    argv = lab.lab_argv("/tmp/nb")
    assert _opt(argv, "LabApp.news_url") == ["None"]
    assert _opt(argv, "LabApp.extension_manager") == ["readonly"]
    settings = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    notif = settings["@jupyterlab/apputils-extension:notification"]
    assert notif["fetchNews"] == "false" and notif["checkForUpdates"] is False


@pytest.mark.parametrize("uid, expected", [(0, True), (1000, False)])
def test_allow_root_only_for_root(monkeypatch, uid, expected):
    monkeypatch.setattr(lab.os, "geteuid", lambda: uid)
    assert ("--allow-root" in lab.lab_argv("/tmp/nb")) is expected
