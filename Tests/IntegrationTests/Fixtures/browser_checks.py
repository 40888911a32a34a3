"""The console page, and a web application's page on another origin, in headless Chromium, driven by Selenium,
against a running fanoutd.

Usage: browser_checks.py CONSOLE_URL PORT
       browser_checks.py cross-origin PAGE_URL [CHROMIUM_ARGUMENT ...]
       browser_checks.py client PAGE_URL [CHROMIUM_ARGUMENT ...]
The first: the test that runs this owns the daemon, an nc publisher and subscriber, and a proxy the page goes
through. The second: PAGE_URL is cross_origin_page.html as browser_app.py serves it, with its parameters
(?ws=, and ?token= or ?token_url=); see cross_origin() for its steps. The third: PAGE_URL is client_page.html
(browser_app.py's /client, with ?ws=), which uses the JavaScript client with tokens from its backend; see
client_with_tokens(). Chromium arguments after the URL are added to Chromium's command line (to trust a test CA
for wss://, say).
In both, the test and this script take turns: it prints "STEP <name>" when the page is ready for the test's part
and waits for a "go" line on stdin before checking the page again. Prints "ok browser" at the end, or
"FAIL <what>" and exits 1. Every wait is bounded.
"""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 20


def step(name):
    print(f"STEP {name}", flush=True)
    line = sys.stdin.readline().strip()
    if line != "go":
        raise AssertionError(f"the test answered {line!r} to step {name}")


def start_browser(extra_arguments=()):
    """Headless Chromium; `extra_arguments` are added to its command line (a follow-up trusts a test CA so)."""
    options = webdriver.ChromeOptions()
    arguments = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]
    for argument in [*arguments, *extra_arguments]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console: why a WebSocket failed
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.set_page_load_timeout(TIMEOUT)
    return driver, WebDriverWait(driver, TIMEOUT)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def cross_origin(page_url, chromium_arguments=()):
    """A page on another origin than fanoutd's uses it while its origin is allowed: it connects (authenticating when
    the URL gives it a token or a token endpoint), subscribes and sees a message from nc, publishes over the
    WebSocket and over HTTP with a preflight, and reads an event stream. Then the test makes fanoutd refuse that
    origin, and the reloaded page's WebSocket, simple and preflighted publishes and event stream are all refused."""
    driver, wait = start_browser(chromium_arguments)
    try:
        driver.get(page_url)
        wait.until(lambda d: text(d, "status") == "connected")
        expected = "authenticated" if "token=" in page_url or "token_url=" in page_url else "none"
        if text(driver, "auth") != expected:
            raise AssertionError(f"the page's authentication: {text(driver, 'auth')!r}, expected {expected!r}")
        driver.execute_script("subscribe('page.>')")
        wait.until(lambda d: text(d, "status") == "subscribed: +OK 1")
        step("subscribed")  # the test publishes page.in from nc
        wait.until(lambda d: any(li.get_attribute("data-payload") == "hello from nc"
                                 for li in d.find_elements(By.CSS_SELECTOR, "#messages li")))
        driver.execute_script("publishOverWebSocket('page.ws', 'hello over the WebSocket')")
        wait.until(lambda d: text(d, "ws-pub") == "+OK 2")  # to nc and to the page itself
        step("ws-published")
        driver.execute_script("publishOverHTTP('page.http', 'hello over HTTP', true)")
        wait.until(lambda d: text(d, "http-pub") != "-")
        if not text(driver, "http-pub").startswith('200 {"receivers":2'):
            raise AssertionError(f"the preflighted publish answered {text(driver, 'http-pub')!r}")
        step("http-published")
        driver.execute_script("openEventStream('page.es')")
        wait.until(lambda d: text(d, "es") == "open")
        step("stream-open")  # the test publishes page.es from nc
        wait.until(lambda d: text(d, "es") == "received message to the stream")
        step("allowed-done")  # the test reloads fanoutd with this page's origin no longer allowed

        driver.get(page_url)
        wait.until(lambda d: text(d, "status") == "refused")
        for preflighted in [False, True]:
            driver.execute_script("document.getElementById('http-pub').textContent = '-';"
                                  f"publishOverHTTP('page.http', 'refused', {str(preflighted).lower()})")
            wait.until(lambda d: text(d, "http-pub") != "-")
            if text(driver, "http-pub") != "blocked: TypeError":
                raise AssertionError(f"a refused page's publish answered {text(driver, 'http-pub')!r}")
        driver.execute_script("openEventStream('page.es')")
        wait.until(lambda d: text(d, "es") == "refused")
        step("refused")  # the test checks that nothing the refused page sent was published
    finally:
        driver.quit()


def client_with_tokens(page_url, chromium_arguments=()):
    """A page on another origin uses fanoutd through the JavaScript client with short tokens from its backend: it
    connects, subscribes and sees a message from nc, publishes, is refused a subject its token denies and one its
    token does not grant, and keeps its connection (and receives) after its first token's expiry and grace, having
    refreshed ahead of each expiry (no auth-expired push). Then the test makes fanoutd refuse the page's origin,
    and the reloaded page's connection and its HTTP publish are refused."""
    driver, wait = start_browser(chromium_arguments)
    try:
        driver.get(page_url)
        wait.until(lambda d: text(d, "status") != "connecting")
        if text(driver, "status") != "connected":
            raise AssertionError(f"the page did not connect: {text(driver, 'status')!r}")
        driver.execute_script("subscribe('page.>')")
        wait.until(lambda d: text(d, "sub") != "-")
        if text(driver, "sub") != "subscribed page.>":
            raise AssertionError(f"the page's subscription: {text(driver, 'sub')!r}")
        step("subscribed")  # the test publishes page.news from nc
        received = lambda payload: lambda d: any(li.get_attribute("data-payload") == payload
                                                 for li in d.find_elements(By.CSS_SELECTOR, "#messages li"))
        wait.until(received("hello from nc"))
        driver.execute_script("publish('page.in', 'hello from the page')")
        wait.until(lambda d: text(d, "pub") != "-")
        if text(driver, "pub") != "delivered to 2":  # nc and the page itself
            raise AssertionError(f"the page's publish: {text(driver, 'pub')!r}")

        # A subject its token denies, and one it does not grant: refused, the connection kept.
        driver.execute_script("subscribe('secret.x')")
        wait.until(lambda d: text(d, "sub") != "subscribed page.>")
        if not text(driver, "sub").startswith("Denied: denied"):
            raise AssertionError(f"SUB secret.x answered {text(driver, 'sub')!r}")
        driver.execute_script("document.getElementById('pub').textContent = '-'; publish('page.out', 'not allowed')")
        wait.until(lambda d: text(d, "pub") != "-")
        if not text(driver, "pub").startswith("Denied: denied"):
            raise AssertionError(f"PUB page.out answered {text(driver, 'pub')!r}")
        print(f"REFUSED sub={text(driver, 'sub')!r} pub={text(driver, 'pub')!r}", flush=True)
        step("published")  # the test waits past the first token's expiry and grace, then publishes page.news

        wait.until(received("after the first token"))
        counts = driver.find_element(By.ID, "events").get_attribute("outerHTML")
        print(f"EVENTS {counts}", flush=True)
        if text(driver, "status") != "connected":
            raise AssertionError(f"the connection: {text(driver, 'status')!r}")
        data = lambda name: int(driver.find_element(By.ID, "events").get_attribute(f"data-{name}"))
        if data("token-refreshed") < 1 or data("auth-expired") != 0 or data("token-failed") != 0:
            raise AssertionError(f"expected refreshes ahead of expiry and no push nor failure: {counts}")
        step("refreshed")  # the test reloads fanoutd with this page's origin no longer allowed

        driver.get(page_url)
        wait.until(lambda d: text(d, "status") != "connecting")
        if not text(driver, "status").startswith("refused: "):
            raise AssertionError(f"the page on a refused origin: {text(driver, 'status')!r}")
        # The page cannot see why; Chromium's console says the handshake was answered 403 (no upgrade).
        console = [entry["message"] for entry in driver.get_log("browser")]
        if not any("/ws" in line and "403" in line for line in console):
            raise AssertionError(f"no 403 for the WebSocket in the console: {console}")
        driver.execute_script("publishOverHTTP('page.in', 'refused')")
        wait.until(lambda d: text(d, "http-pub") != "-")
        if text(driver, "http-pub") != "blocked: TypeError":
            raise AssertionError(f"a refused page's publish answered {text(driver, 'http-pub')!r}")
        print(f"ORIGIN-REFUSED {text(driver, 'status')!r}", flush=True)
        step("refused")  # the test checks that the refused page's publish never ran
    finally:
        driver.quit()


def main(url, port):
    driver, wait = start_browser()
    try:
        driver.get(url)
        wait.until(lambda d: d.find_element(By.ID, "status").text == "connected")
        wait.until(lambda d: "published" in d.find_element(By.ID, "counters").text)
        hint = driver.find_element(By.ID, "connect-hint").text
        assert f"nc 127.0.0.1 {port}" in hint and "fanout sub" in hint, f"the page says how to connect: {hint!r}"

        # Subscribe to a pattern in the page; a message published from nc appears.
        driver.find_element(By.ID, "sub-pattern").send_keys("news.>")
        driver.find_element(By.ID, "sub-button").click()
        wait.until(lambda d: "Subscribed to news.>" in d.find_element(By.ID, "sub-note").text)
        step("subscribed")
        wait.until(lambda d: any(li.get_attribute("data-payload") == "hello from nc"
                                 for li in d.find_elements(By.CSS_SELECTOR, "#messages li")))

        # Publish from the page; the test's nc subscriber receives it.
        driver.find_element(By.ID, "pub-subject").send_keys("page.out")
        driver.find_element(By.ID, "pub-payload").send_keys("hello from the page")
        driver.find_element(By.ID, "pub-button").click()
        wait.until(lambda d: "Delivered to 1 subscriber(s)" in d.find_element(By.ID, "pub-result").text)
        step("published")

        # The subjects table shows what the page subscribed to.
        wait.until(lambda d: "news.>" in d.find_element(By.ID, "channels").text)

        # An EventSource in the page resumes with no loss after its connection is cut.
        driver.find_element(By.ID, "es-subject").send_keys("orders.feed")
        driver.find_element(By.ID, "es-open").click()
        wait.until(lambda d: d.find_element(By.ID, "es-note").get_attribute("data-opens") == "1")
        step("stream-open")
        seqs = lambda d: [li.get_attribute("data-seq") for li in reversed(d.find_elements(By.CSS_SELECTOR, "#es-log li"))]
        wait.until(lambda d: seqs(d) == ["1", "2"])
        step("two-received")  # the test cuts the stream, publishes 3 and 4 while it is down, then lets it back
        wait.until(lambda d: d.find_element(By.ID, "es-note").get_attribute("data-opens") == "2")
        wait.until(lambda d: len(seqs(d)) >= 4)
        step("resumed")  # the test publishes 5, live
        wait.until(lambda d: len(seqs(d)) >= 5)
        got = seqs(driver)
        if got != ["1", "2", "3", "4", "5"]:
            raise AssertionError(f"event stream seqs {got}, expected 1 to 5 once each")
        payloads = [li.get_attribute("data-payload") for li in reversed(driver.find_elements(By.CSS_SELECTOR, "#es-log li"))]
        if payloads != [f"order-{n}" for n in range(1, 6)]:
            raise AssertionError(f"event stream payloads {payloads}")

        # Groups in the subjects table; the ask box lists answers as they arrive, then the summary.
        step("group-joined")  # the test's nc joined group workers on svc.*
        wait.until(lambda d: "workers (1)" in d.find_element(By.ID, "channels").text)
        driver.find_element(By.ID, "ask-subject").send_keys("svc.ping")
        driver.find_element(By.ID, "ask-payload").send_keys("ping?")
        driver.find_element(By.ID, "ask-button").click()
        step("asked")  # the test's nc answers
        wait.until(lambda d: any(li.get_attribute("data-answer") == "pong"
                                 for li in d.find_elements(By.CSS_SELECTOR, "#ask-log li")))
        wait.until(lambda d: "1 of 1 answered" in d.find_element(By.ID, "ask-note").text)

        shot = os.environ.get("FANOUT_SCREENSHOT")
        if shot:
            driver.save_screenshot(shot)
    finally:
        driver.quit()


if __name__ == "__main__":
    try:
        if sys.argv[1] == "cross-origin":
            cross_origin(sys.argv[2], sys.argv[3:])
        elif sys.argv[1] == "client":
            client_with_tokens(sys.argv[2], sys.argv[3:])
        else:
            main(sys.argv[1], sys.argv[2])
    except Exception as error:
        print(f"FAIL {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print("ok browser", flush=True)
