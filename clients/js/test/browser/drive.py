"""Loads the client's test page in headless Chromium through Selenium and prints what the page found, as
JSON, once it is done (or "FAIL <why>" and exit 1). Usage: drive.py PAGE_URL. Every wait is bounded."""
import json
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 30


def main(url):
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.set_page_load_timeout(TIMEOUT)
    try:
        driver.get(url)
        WebDriverWait(driver, TIMEOUT).until(
            lambda d: d.execute_script("return window.fanoutResult || window.fanoutError || null"))
        error = driver.execute_script("return window.fanoutError || null")
        if error:
            print(f"FAIL {error}", flush=True)
            return 1
        print(json.dumps(driver.execute_script("return window.fanoutResult")), flush=True)
        return 0
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
