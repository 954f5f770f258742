"""Headless Chromium driving the code explorer (`allennlp bits explore`) through Selenium: what the browser tests,
`benchmarks/explorer.py` and the docs' screenshot share (test harness, `tests.harness`: not in the package).

The browser is the distribution's (`apt-get install chromium chromium-driver` on Debian; `chromium-browser` or Google
Chrome are found too) and Selenium comes from the test extra (`pip install -e ".[test]"`); neither is needed to
write or open an explorer. A view is ready when the page's `<main id="view">` gets a new `data-ready` stamp (the
explorer sets it after each render, `explorer.js`), so every wait is on what the user sees, not on a sleep.
"""
import shutil
import time
from typing import Any, List, Optional, Tuple

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver", "chromium-driver")
INSTALL = "apt-get install chromium chromium-driver (Debian), and pip install selenium"


def find_browser() -> Tuple[str, str]:
    """(browser binary, chromedriver binary) on PATH; `FileNotFoundError` saying what to install."""
    browser = next((path for path in map(shutil.which, BROWSERS) if path), None)
    driver = next((path for path in map(shutil.which, DRIVERS) if path), None)
    if browser is None or driver is None:
        missing = " and ".join(name for name, path in (("a Chromium browser", browser), ("chromedriver", driver))
                               if path is None)
        raise FileNotFoundError(f"{missing} not found on PATH ({INSTALL})")
    try:
        import selenium  # noqa: F401
    except ImportError:
        raise FileNotFoundError(f"selenium is not installed ({INSTALL})") from None
    return browser, driver


def start_browser(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium (Selenium `webdriver.Chrome`) with the console log kept (`console_errors`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def ready_stamp(driver: Any) -> Optional[str]:
    return driver.execute_script("const m = document.getElementById('view'); return m ? m.dataset.ready || null : null")


def wait_ready(driver: Any, before: Optional[str], timeout: float = 60.0) -> float:
    """Seconds until the view's `data-ready` stamp differs from `before` (a render finished)."""
    start = time.perf_counter()
    while True:
        stamp = ready_stamp(driver)
        if stamp is not None and stamp != before:
            return time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"the explorer did not finish rendering within {timeout:.0f} s")
        time.sleep(0.005)


def open_page(driver: Any, url: str, timeout: float = 60.0) -> float:
    """Loads the explorer at `url` (a file:// or http:// URL, with a #view fragment); seconds to the first render."""
    start = time.perf_counter()
    driver.get("about:blank")
    driver.get(url)
    wait_ready(driver, None, timeout)
    return time.perf_counter() - start


def go(driver: Any, fragment: str, timeout: float = 60.0) -> float:
    """Switches the open explorer to the view `fragment` (`#word/London`); seconds to its render."""
    before = ready_stamp(driver)
    start = time.perf_counter()
    # the same fragment fires no hashchange: render again (`render` is the page's)
    driver.execute_script("if (location.hash === arguments[0]) render(); else location.hash = arguments[0];", fragment)
    wait_ready(driver, before, timeout)
    return time.perf_counter() - start


def click(driver: Any, element: Any, timeout: float = 60.0) -> float:
    """Clicks `element` and waits for the view it opens; seconds from the click to the render."""
    before = ready_stamp(driver)
    start = time.perf_counter()
    element.click()
    wait_ready(driver, before, timeout)
    return time.perf_counter() - start


def console_errors(driver: Any) -> List[str]:
    """The page's console errors since the last call (Selenium's browser log, level SEVERE)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
