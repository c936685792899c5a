"""The viewer's browser tests' shared pieces: `skillos view` started as a person starts it, its
JSON API, and real headless Chromium (Debian's chromium + chromium-driver, driven by selenium
offline): one place that starts each, so every browser test sees the same page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def start():
    """A headless Chromium driver (the caller quits it); a missing browser fails the test, never skips it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")
    os.environ["SE_OFFLINE"] = "1"  # selenium's manager must never fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1100", "--allow-file-access-from-files"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def view_server(home, runs):
    """`skillos view --port 0` as a person starts it; returns (process, url); the caller stops it."""
    proc = subprocess.Popen([sys.executable, "-m", "skillos", "view", "--home", str(home), "--runs", str(runs),
                             "--port", "0"], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "http://127.0.0.1:" in line, line  # bound to this machine only, by default
    return proc, line.split()[2]


def api(url, key):
    """One page's document from the served viewer's JSON API."""
    from urllib.parse import quote
    from urllib.request import urlopen

    with urlopen(f"{url}api/doc?key={quote(key, safe='')}") as r:
        assert r.status == 200
        return json.loads(r.read())
