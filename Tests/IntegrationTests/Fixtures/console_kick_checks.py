"""The console's members view and kick buttons (1.3) in headless Chromium, driven by Selenium, against a fanoutd
with users and HTTP on.

Usage: console_kick_checks.py CONSOLE_URL ADMIN_TOKEN OTHER_TOKEN OTHER_USER
The page, opened with ADMIN_TOKEN (a user with `admin: true`), lists the clients with a kick button each; the
button on OTHER_USER's row sends KICK for that connection, which the test (holding that connection) sees
closed. Prints "STEP kicked" after the click and waits for a "go" line from the test. The members view asks WHO
for its subject and subscribes to its joins and leaves, drawing each join as a row (with a kick button) and
removing it at its leave. Opened with OTHER_TOKEN, a user who is not an administrator, the page shows no kick
button. Prints "ok console-kick" at the end, or raises. Every wait is bounded.
"""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 20


def member_rows(driver):
    return [(row.get_attribute("data-client"), len(row.find_elements(By.CSS_SELECTOR, "button.kick")))
            for row in driver.find_elements(By.CSS_SELECTOR, "#members tr")]


def main(url, admin, other, other_user):
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.set_page_load_timeout(TIMEOUT)
    wait = WebDriverWait(driver, TIMEOUT)
    try:
        driver.get(url + "?token=" + admin)
        wait.until(lambda d: d.find_element(By.ID, "status").text == "connected")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-may-kick") == "true")

        # A kick button on the other user's row of the clients table closes that connection.
        def other_row(d):
            rows = [r for r in d.find_elements(By.CSS_SELECTOR, "#clients tr")
                    if len(r.find_elements(By.TAG_NAME, "td")) > 1 and r.find_elements(By.TAG_NAME, "td")[1].text == other_user]
            return rows[0] if rows else None
        row = wait.until(other_row)
        row.find_element(By.CSS_SELECTOR, "button.kick").click()
        wait.until(lambda d: "1 connection(s) closed" in d.find_element(By.ID, "members-note").text)
        print("STEP kicked", flush=True)
        line = sys.stdin.readline().strip()
        assert line == "go", f"the test answered {line!r}"
        wait.until(lambda d: other_row(d) is None)

        # The members view: WHO for the subject (this server keeps no presence, and says so), then its joins and
        # leaves as they come, drawn as rows with a kick button each.
        driver.find_element(By.ID, "members-subject").send_keys("chat.room1")
        driver.find_element(By.ID, "members-button").click()
        wait.until(lambda d: "no presence kept for chat.room1" in d.find_element(By.ID, "members-note").text)
        driver.execute_script("applyPresence('join id=7,user=alice,since_s=0,group=g');"
                              "applyPresence('join id=8,user=-,since_s=0');")
        assert member_rows(driver) == [("7", 1), ("8", 1)], f"members after two joins: {member_rows(driver)}"
        assert "g" in driver.find_element(By.CSS_SELECTOR, "#members tr").text, "the group is shown"
        driver.execute_script("applyPresence('leave id=7,user=alice,since_s=3,group=g,reason=kicked');")
        assert member_rows(driver) == [("8", 1)], f"members after a leave: {member_rows(driver)}"

        # A connection that may not KICK shows no kick button.
        driver.get(url + "?token=" + other)
        wait.until(lambda d: d.find_element(By.ID, "status").text == "connected")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-may-kick") == "false")
        driver.execute_script("applyPresence('join id=9,user=bob,since_s=0');")
        assert member_rows(driver) == [("9", 0)], f"a member row without a kick button: {member_rows(driver)}"
        print("ok console-kick", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main(*sys.argv[1:5])
