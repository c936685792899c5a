"""Real headless Chromium for the viewer's browser tests (Debian's chromium + chromium-driver,
driven by selenium offline): one place that starts it, so every browser test sees the same page."""

from __future__ import annotations

import os
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
