"""Shared by the whole suite: when the session ends, stop the Chromium and the Jupyter servers
the browser tests share within one pytest process (tests/browser_harness.py, ``jupyter``)."""
import sys


def pytest_sessionfinish(session, exitstatus):
    harness = sys.modules.get("browser_harness")
    if harness is not None:
        harness.close_shared()


# The slowest files first. `make test` runs two workers that take whole files (xdist's
# --dist loadfile) in collection order; a long browser file collected last leaves one worker
# alone at the end. Browser and slow files (the longest: the two below) go first; the rest keep their order.
LONGEST = ("tests/test_browser.py", "tests/test_site.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        if path in LONGEST:
            return LONGEST.index(path)
        slow = item.get_closest_marker("browser") or item.get_closest_marker("slow")
        return len(LONGEST) if slow else len(LONGEST) + 1

    items.sort(key=rank)  # stable: within a rank, pytest's own order
