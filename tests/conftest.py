"""Shared by the whole suite: when the session ends, stop the Chromium and the Jupyter servers
the browser tests share within one pytest process (tests/browser_harness.py, ``jupyter``)."""
import sys


def pytest_sessionfinish(session, exitstatus):
    harness = sys.modules.get("browser_harness")
    if harness is not None:
        harness.close_shared()
