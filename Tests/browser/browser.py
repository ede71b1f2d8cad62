# Debian's chromium, headless, driven through Debian's chromedriver by Selenium (PyPI). Both
# programs are named, so that Selenium Manager never looks for (or downloads) a browser or a
# driver. Every page is loaded with the browser's console and its network events recorded
# (`goog:loggingPrefs`): what a page logged at level SEVERE and every request that failed, or
# was answered 400 or more, is that page's problems.
import base64
import json
import os
import urllib.parse

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from common import BenchError, done, on_cleanup

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DESKTOP = (1280, 900)
PHONE = (390, 844)


class Load:
    """One page as the browser got it: the responses of its requests ({url: status}), the
    document's headers, the console's SEVERE messages, the requests that failed."""

    def __init__(self, name):
        self.name = name
        self.statuses = {}
        self.document_headers = {}
        self.console = []
        self.failed = []

    def problems(self, allowed=()):
        """Console errors and failed requests, but for the (path, status) pairs in `allowed`."""
        found = [f"console: {message}" for message in self.console
                 if not any(f"status of {status}" in message and path in message for path, status in allowed)]
        found += [f"failed: {url} ({reason})" for url, reason in self.failed]
        found += [f"status {status}: {url}" for url, status in self.statuses.items()
                  if status >= 400 and (urllib.parse.urlsplit(url).path, status) not in allowed]
        return found


class Browser:
    def __init__(self, directory, base, artifacts, timeout):
        self.base = base
        self.artifacts = artifacts
        self.timeout = timeout
        for program in (CHROMIUM, CHROMEDRIVER):
            if not os.access(program, os.X_OK):
                raise BenchError(f"no {program} (make deps installs chromium and chromium-driver)")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--hide-scrollbars", "--lang=en-US", f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
                         f"--user-data-dir={os.path.join(directory, 'chromium')}"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(directory, "chromedriver.log"))
        self.driver = webdriver.Chrome(options=options, service=service)
        self.cleanup = on_cleanup(self.driver.quit)
        self.driver.set_page_load_timeout(timeout)
        self.desktop()

    def close(self):
        done(self.cleanup)

    # --- Loading pages ---------------------------------------------------------------------

    def drain(self):
        """Forgets what the logs hold so far."""
        self.driver.get_log("browser")
        self.driver.get_log("performance")

    def record(self, name):
        """What the logs got since the last drain, as a Load."""
        load = Load(name)
        for entry in self.driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                load.console.append(entry["message"])
        urls = {}
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message["method"], message.get("params", {})
            if method == "Network.requestWillBeSent":
                urls[params["requestId"]] = params["request"]["url"]
                redirect = params.get("redirectResponse")
                if redirect:
                    load.statuses[redirect["url"]] = redirect["status"]
            elif method == "Network.responseReceived":
                response = params["response"]
                load.statuses[response["url"]] = response["status"]
                if params.get("type") == "Document":
                    load.document_headers = {k.lower(): v for k, v in response["headers"].items()}
            elif method == "Network.loadingFailed":
                load.failed.append((urls.get(params["requestId"], params["requestId"]), params["errorText"]))
        return load

    def get(self, name, path):
        """Loads base + path; the Load."""
        self.drain()
        self.driver.get(self.base + path)
        return self.record(name)

    def submit(self, name, form, button=None):
        """Submits `form` (a WebElement) by its button (the first submit button by default), waits
        for the next page; the Load."""
        self.drain()
        old = self.driver.find_element(By.TAG_NAME, "html")
        (button or form.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit], button")).click()
        # The old page gone: its element stale. While the next one loads, chromedriver may answer
        # with another error, which means only that it is not there yet.
        WebDriverWait(self.driver, self.timeout, ignored_exceptions=[WebDriverException]).until(
            expected_conditions.staleness_of(old))
        self.driver.find_element(By.TAG_NAME, "body")  # chromedriver answers once the load is done
        return self.record(name)

    def click(self, name, element):
        """Follows a link; the Load."""
        return self.submit(name, None, button=element)

    @property
    def path(self):
        """The path and query of the page shown."""
        parts = urllib.parse.urlsplit(self.driver.current_url)
        return parts.path + ("?" + parts.query if parts.query else "")

    def one(self, selector, within=None):
        return (within or self.driver).find_element(By.CSS_SELECTOR, selector)

    def all(self, selector, within=None):
        return (within or self.driver).find_elements(By.CSS_SELECTOR, selector)

    def cookie(self, name):
        return self.driver.get_cookie(name)

    def delete_cookies(self):
        self.driver.delete_all_cookies()

    # --- Sizes and screenshots -------------------------------------------------------------

    def viewport(self, size, mobile=False):
        width, height = size
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def desktop(self):
        self.viewport(DESKTOP)

    def phone(self):
        self.viewport(PHONE, mobile=True)

    def screenshot(self, name):
        """The whole page, as it is laid out now, into ARTIFACTS/NAME.png; its path."""
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        path = os.path.join(self.artifacts, f"{name}.png")
        with open(path, "wb") as file:
            file.write(base64.b64decode(shot["data"]))
        return path


def start(directory, base, artifacts, timeout):
    """A Browser, or BenchError saying why chromium did not start."""
    try:
        return Browser(directory, base, artifacts, timeout)
    except WebDriverException as error:
        raise BenchError(f"chromium did not start through chromedriver: {error.msg}") from error
