"""The console's token handling in headless Chromium, driven by Selenium, against a fanoutd with users.

Usage: console_token_checks.py CONSOLE_URL ADMIN_TOKEN OTHER_TOKEN
The page is opened with `?token=ADMIN_TOKEN`: it connects with it (CLIENTS, for admins only, lists the
clients) and leaves no token in the address bar; that user may not publish to sensors.kitchen. Then the Token
box sends OTHER_TOKEN, a publisher of sensors.>, with AUTH on the live connection, after which the page's
publish there is delivered. Prints "ok console-token" at
the end, or raises. Every wait is bounded.
"""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 20


def main(url, admin, other):
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.set_page_load_timeout(TIMEOUT)
    wait = WebDriverWait(driver, TIMEOUT)
    try:
        driver.get(url + "?token=" + admin + "#top")
        wait.until(lambda d: d.find_element(By.ID, "status").text == "connected")
        assert "token" not in driver.current_url, f"the token is left in the address bar: {driver.current_url}"
        assert driver.current_url.endswith("/#top"), f"the rest of the address is kept: {driver.current_url}"
        assert not driver.find_element(By.ID, "auth").is_displayed(), "no token box: the linked token was used"
        # CLIENTS answers admins only: its rows show the token authenticated the connection.
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#clients tr")) >= 1)
        headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#clients")[0]
                   .find_element(By.XPATH, "..").find_elements(By.CSS_SELECTOR, "th")]
        assert "user" in headers, f"the clients table has a user column: {headers}"

        def publish(expected):
            driver.find_element(By.ID, "pub-subject").clear()
            driver.find_element(By.ID, "pub-subject").send_keys("sensors.kitchen")
            driver.find_element(By.ID, "pub-payload").clear()
            driver.find_element(By.ID, "pub-payload").send_keys("21.5")
            driver.find_element(By.ID, "pub-button").click()
            wait.until(lambda d: expected in d.find_element(By.ID, "pub-result").text)
        publish("-ERR denied")

        # The Token box: a fresh token goes with AUTH on the live connection.
        driver.find_element(By.ID, "token-button").click()
        wait.until(lambda d: d.find_element(By.ID, "auth").is_displayed())
        driver.find_element(By.ID, "auth-token").send_keys(other)
        driver.find_element(By.CSS_SELECTOR, "#auth-form button:not(.quiet)").click()
        wait.until(lambda d: not d.find_element(By.ID, "auth").is_displayed())
        publish("Delivered to 0 subscriber(s)")
        assert driver.find_element(By.ID, "status").text == "connected", "the same connection goes on"
        print("ok console-token", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
