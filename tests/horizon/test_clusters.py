#!/usr/bin/env python3
"""Horizon's Container Infra > Clusters page (magnum-ui 19) against magnum-rs, in headless
Chromium through Selenium.

Run by scripts/horizon-test.sh, which starts Keystone, magnum-rs (Keystone auth, in the
catalog), Horizon, and seeds clusters for the projects demo and alt with the real CLI. This
script then, as demo: logs in, opens /project/clusters/, checks that demo's clusters are
listed and alt's is not, saves a screenshot of the list, opens a cluster's detail page (its
template's name and image), lists the cluster templates (demo's, not alt's), resizes `default-worker` of one
cluster through the Resize dialog, and checks the new node count in the list after a reload.

Every input comes from the environment; a missing one is a failure, not a skip:
  HORIZON_URL        Horizon's base URL
  CHROMEDRIVER       chromedriver binary; CHROMIUM: the browser binary
  HORIZON_RUN        directory for chromedriver.pid (scripts/horizon.sh stop kills it)
  HORIZON_OUT        where screenshots, browser logs and result.json go
  HORIZON_USER, HORIZON_PASSWORD                 the user to log in as (demo)
  HORIZON_OWN_CLUSTERS   comma-separated names of the user's clusters
  HORIZON_OTHER_CLUSTERS comma-separated names (and uuids) of another project's clusters
  HORIZON_OWN_TEMPLATE, HORIZON_OTHER_TEMPLATE the user's cluster template (its clusters'),
                         another project's
  HORIZON_RESIZE_CLUSTER the cluster to resize; HORIZON_NEW_COUNT its new default-worker count
The page's stats panel (GET /v1/stats) must show "Used N of M" (N = the user's cluster count),
and no error toast may appear.

Synchronisation is by explicit waits on page conditions (WebDriverWait), never by sleeping.
Exits 0 only when every check held.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 60  # seconds for any one page condition (a busy 2-core CI machine)


def env(name):
    value = os.environ.get(name)
    if not value:
        sys.exit(f"test_clusters.py: {name} is not set: run scripts/horizon-test.sh")
    return value


class Failed(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def xpath_literal(text):
    if "'" not in text:
        return f"'{text}'"
    return "concat('" + text.replace("'", "',\"'\",'") + "')"


def row_xpath(name):
    """The table row holding a link with exactly this cluster name."""
    return f"//tbody/tr[.//a[normalize-space()={xpath_literal(name)}]]"


class Page:
    def __init__(self, driver, base, out):
        self.d = driver
        self.base = base.rstrip("/")
        self.out = out
        # Angular re-renders rows: an element found a moment ago may be gone; look again.
        self.wait = WebDriverWait(
            driver, WAIT, ignored_exceptions=(StaleElementReferenceException,)
        )

    def until(self, condition, what):
        try:
            return self.wait.until(condition)
        except TimeoutException:
            self.d.save_screenshot(os.path.join(self.out, "failure.png"))
            raise Failed(f"timed out after {WAIT} s waiting for {what} (see failure.png)")

    def login(self, user, password):
        self.d.get(f"{self.base}/auth/login/")
        self.until(EC.visibility_of_element_located((By.ID, "id_username")), "the login form")
        self.d.find_element(By.ID, "id_username").send_keys(user)
        self.d.find_element(By.ID, "id_password").send_keys(password)
        self.d.find_element(By.ID, "id_password").submit()
        self.until(lambda d: "/auth/login" not in d.current_url, "the login to complete")
        # LOGIN_REDIRECT_URL; the Angular panel then drops the trailing slash.
        check(
            "/project/clusters" in self.d.current_url,
            f"after login Horizon shows {self.d.current_url}, not /project/clusters/",
        )

    def open_clusters(self):
        self.d.get(f"{self.base}/project/clusters/")
        self.until(
            EC.visibility_of_element_located((By.XPATH, "//th[normalize-space()='Node Count']")),
            "the clusters table",
        )

    def row(self, name):
        return self.until(
            EC.visibility_of_element_located((By.XPATH, row_xpath(name))),
            f"the row of cluster {name}",
        )

    def column_index(self, label):
        heads = self.d.find_elements(By.XPATH, "//thead/tr/th")
        for i, th in enumerate(heads):
            if th.text.strip() == label:
                return i
        raise Failed(f"no column {label!r} in the clusters table")

    def cell(self, name, label):
        index = self.column_index(label)
        cells = self.row(name).find_elements(By.XPATH, "./td")
        check(len(cells) > index, f"the row of {name} has no {label!r} cell")
        return cells[index].text.strip()

    def error_toasts(self):
        return [
            e.text.replace("\u00d7", "").strip()
            for e in self.d.find_elements(By.CSS_SELECTOR, ".alert-danger")
            if e.is_displayed() and e.text.strip()
        ]

    def stats_outcome(self):
        """Waits until the stats panel shows its numbers or Horizon shows an error toast."""

        def outcome(d):
            errors = self.error_toasts()
            if errors:
                return ("errors", errors)
            for dd in d.find_elements(By.XPATH, "//dd[starts-with(normalize-space(), 'Used ')]"):
                if re.fullmatch(r"Used \d+ of \d+", dd.text.strip()):
                    return ("stats", dd.text.strip())
            return False

        return self.until(outcome, "the stats panel (Used N of M) or an error toast")

    def rows_text(self):
        return [r.text for r in self.d.find_elements(By.XPATH, "//tbody/tr") if r.text.strip()]

    def screenshot(self, name):
        path = os.path.join(self.out, name)
        check(self.d.save_screenshot(path), f"could not save {path}")
        return path

    def open_detail(self, name):
        """Follows the cluster's link in the list to its detail page."""
        self.until(
            EC.element_to_be_clickable((By.XPATH, row_xpath(name) + "//a[normalize-space()="
                                        + xpath_literal(name) + "]")),
            f"the link of cluster {name}",
        ).click()
        self.until(
            EC.visibility_of_element_located(
                (By.XPATH, f"//*[contains(@class, 'h1')][normalize-space()={xpath_literal(name)}]")
            ),
            f"the detail page of {name}",
        )

    def resize(self, name, count):
        row = self.row(name)
        row.find_element(By.CSS_SELECTOR, ".dropdown-toggle").click()
        self.until(
            EC.element_to_be_clickable(
                (By.XPATH, row_xpath(name) + "//a[normalize-space()='Resize Cluster']")
            ),
            "the Resize Cluster action",
        ).click()
        field = self.until(
            EC.visibility_of_element_located((By.CSS_SELECTOR, ".modal input[type=number]")),
            "the resize dialog's node count field (it needs the default-worker nodegroup)",
        )
        self.until(
            EC.text_to_be_present_in_element(
                (By.CSS_SELECTOR, ".modal"), "Node Count (default-worker)"
            ),
            "the default-worker label in the resize dialog",
        )
        self.until(lambda d: field.get_attribute("value") not in (None, ""), "the current count")
        previous = field.get_attribute("value")
        field.clear()
        field.send_keys(str(count))
        self.screenshot("resize-dialog.png")
        self.until(
            EC.element_to_be_clickable((By.CSS_SELECTOR, ".modal-footer .btn-primary")),
            "the dialog's submit button",
        ).click()
        toast = self.until(
            EC.visibility_of_element_located(
                (By.XPATH, "//div[contains(@class,'alert')][contains(., 'being resized')]")
            ),
            "the toast 'Cluster is being resized'",
        )
        return previous, toast.text.strip()


def browser(chromium, chromedriver, out, run_dir):
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=out)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver is given: Selenium Manager must not go looking for one on the network.
    os.environ["SE_OFFLINE"] = "true"
    service = Service(
        executable_path=chromedriver, log_output=os.path.join(out, "chromedriver.log")
    )
    driver = webdriver.Chrome(service=service, options=opts)
    with open(os.path.join(run_dir, "chromedriver.pid"), "w") as f:
        f.write(str(service.process.pid))
    return driver, profile


def main():
    base = env("HORIZON_URL")
    out = env("HORIZON_OUT")
    run_dir = env("HORIZON_RUN")
    user, password = env("HORIZON_USER"), env("HORIZON_PASSWORD")
    own = env("HORIZON_OWN_CLUSTERS").split(",")
    others = env("HORIZON_OTHER_CLUSTERS").split(",")
    target = env("HORIZON_RESIZE_CLUSTER")
    new_count = int(env("HORIZON_NEW_COUNT"))
    own_template, other_template = env("HORIZON_OWN_TEMPLATE"), env("HORIZON_OTHER_TEMPLATE")
    chromium, chromedriver = env("CHROMIUM"), env("CHROMEDRIVER")
    os.makedirs(out, exist_ok=True)

    result = {"ok": False, "steps": {}}
    started = time.monotonic()

    def step(name):
        result["steps"][name] = round(time.monotonic() - started, 2)

    def check_stats(when):
        kind, value = page.stats_outcome()
        result.setdefault("stats", {})[when] = [kind, value]
        check(kind == "stats", f"{when}: Horizon shows errors: {value}")
        check(
            value.startswith(f"Used {len(own)} of "),
            f"{when}: the stats panel says {value!r}, not Used {len(own)} (the project's)",
        )

    driver, profile = browser(chromium, chromedriver, out, run_dir)
    page = Page(driver, base, out)
    try:
        page.login(user, password)
        step("login")

        page.open_clusters()
        for name in own:
            page.row(name)
        result["rows"] = page.rows_text()
        listed = "\n".join(result["rows"])
        for other in others:
            check(other not in listed, f"{user} sees {other}, which is another project's")
            check(
                other not in driver.page_source,
                f"{other} (another project's) appears in {user}'s page",
            )
        check_stats("list")
        page.screenshot("clusters.png")
        step("list")

        # The detail page: the cluster and its template (GET clustertemplates/<id>).
        page.open_detail(target)
        for text in (own_template, "ubuntu-2204"):
            page.until(
                EC.visibility_of_element_located(
                    (By.XPATH, f"//dd[normalize-space()={xpath_literal(text)}]")
                ),
                f"{text} on the detail page of {target}",
            )
        page.screenshot("cluster-detail.png")
        errors = page.error_toasts()
        check(not errors, f"the detail page shows errors: {errors}")
        step("detail")

        # The Cluster Templates panel: the project's template, not another project's.
        driver.get(f"{base}/project/cluster_templates/")
        page.row(own_template)
        check(
            other_template not in "\n".join(page.rows_text()),
            f"{user} sees the template {other_template}, which is another project's",
        )
        page.screenshot("cluster-templates.png")
        step("templates")

        page.open_clusters()
        previous = page.cell(target, "Node Count")
        result["node_count_before"] = previous
        check(
            previous != str(new_count),
            f"{target} already has {new_count} nodes: the resize would prove nothing",
        )
        dialog_count, toast = page.resize(target, new_count)
        result["dialog_count"], result["toast"] = dialog_count, toast
        check(dialog_count == previous, f"dialog shows {dialog_count}, list showed {previous}")
        check("Success" in toast, f"resize toast is not a success: {toast!r}")
        step("resize")

        # A fresh page load: the count comes from magnum-rs, not from the dialog's model.
        driver.refresh()
        page.open_clusters()
        page.until(
            lambda d: page.cell(target, "Node Count") == str(new_count),
            f"{target}'s node count {new_count} after the reload",
        )
        check_stats("reload")
        result["rows_after"] = page.rows_text()
        page.screenshot("after-resize.png")
        step("refresh")
        result["ok"] = True
    except Failed as e:
        result["error"] = str(e)
    except Exception:  # a Selenium or browser error is a failure too, with its trace
        result["error"] = traceback.format_exc()
    finally:
        try:
            result["browser_log"] = [
                e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "WARNING")
            ]
        except Exception as e:  # noqa: BLE001 - the log is a diagnostic only
            result["browser_log"] = [f"unavailable: {e}"]
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        try:
            os.remove(os.path.join(run_dir, "chromedriver.pid"))
        except FileNotFoundError:
            pass
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f, indent=2)

    if not result["ok"]:
        print(f"test_clusters.py: FAILED: {result['error']}", file=sys.stderr)
        for entry in result["browser_log"]:
            print(f"  browser: {entry}", file=sys.stderr)
        return 1
    print(
        f"test_clusters.py: ok: {user} sees {', '.join(own)} and not {', '.join(others)}; "
        f"{target} default-worker {result['node_count_before']} -> {new_count} "
        f"({result['steps']['refresh']} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
