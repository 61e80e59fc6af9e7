#!/usr/bin/python3
"""Drives the web console in a real headless Chromium (Selenium), one scenario a run, for
Tests/IntegrationTests/BrowserTests.swift, which sets the server up and checks what reached the
line protocol and the agents. Prints `RESULT <key> <value>` lines for it to assert on; exits 1
with the reason on stderr when a step does not happen within its deadline.

    console.py SCENARIO HTTP_URL LINE_PORT USER PASSWORD [ARGS...]
"""
import json
import socket
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys


def result(key, value):
    print(f"RESULT {key} {value}", flush=True)


def fail(reason):
    print(reason, file=sys.stderr, flush=True)
    sys.exit(1)


def until(what, condition, seconds=10.0):
    """Polls `condition` until it gives something truthy; fails with `what` past the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = condition()
            if value:
                return value
        except WebDriverException:
            pass
        if time.monotonic() > deadline:
            fail(f"timed out: {what}")
        time.sleep(0.02)


def click(driver, selector, what):
    """Clicks the element `selector` finds, finding it again if the page redrew it between the
    look and the click (a stale element: the click was never sent)."""
    until(what, lambda: driver.find_element(By.CSS_SELECTOR, selector).click() or True)


class Line:
    """A line-protocol connection (PROTOCOL.md), logged in."""

    def __init__(self, port, user, password):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.ask(f"h HELLO 1")
        self.ask(f"a AUTH {user} {password}")

    def ask(self, request):
        tag = request.split(" ", 1)[0]
        self.socket.sendall(request.encode() + b"\n")
        while True:
            line = self.line()
            if line.startswith(tag + " "):
                return line

    def line(self):
        while b"\n" not in self.buffer:
            chunk = self.socket.recv(65536)
            if not chunk:
                fail("the line-protocol connection closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()


def severe_errors(driver, *expected):
    """The page's logged errors, but for its /api/me probes and the refusals a scenario expects."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and "/api/me" not in entry["message"] and not any(e in entry["message"] for e in expected)]


def browser(width=1280, height=900, extra=()):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}", *extra]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def log_in(driver, url, user, password):
    driver.get(url)
    until("the login form", lambda: driver.find_element(By.ID, "login-user").is_displayed())
    driver.find_element(By.ID, "login-user").send_keys(user)
    driver.find_element(By.ID, "login-password").send_keys(password + Keys.ENTER)
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())


def open_collection(driver, name):
    until(f"collection {name} in the picker", lambda: driver.find_elements(By.CSS_SELECTOR, f"#collection option[value='{name}']"))
    driver.execute_script("const s = document.querySelector('#collection'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", name)
    until("the live indicator", lambda: "on" in driver.find_element(By.ID, "live").get_attribute("class"))
    # The replay's rows are drawn on the next animation frame: let it pass (a loaded CI machine
    # delays it past the first look at the table).
    driver.execute_async_script("const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done()));")


def row(driver, record_id):
    return driver.find_element(By.CSS_SELECTOR, f"#records tbody tr[data-id='{record_id}']")


def cell(driver, record_id, field):
    return row(driver, record_id).find_element(By.CSS_SELECTOR, f"td[data-field='{field}']")


def ids(driver):
    # One round trip for the whole table (one a row takes a second at 100 rows).
    return driver.execute_script("return [...document.querySelectorAll('#records tbody tr')].map((tr) => tr.dataset.id)")


def edit(driver, record_id, field, value, before_typing=None):
    target = cell(driver, record_id, field)
    target.click()
    target.send_keys(Keys.ENTER)
    editor = until("the cell's editor", lambda: cell(driver, record_id, field).find_element(By.CSS_SELECTOR, "input, select"))
    if before_typing:
        before_typing()
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(value + Keys.ENTER)


def scenario_login(driver, url, line_port, user, password, args):
    driver.get(url)
    until("the login form", lambda: driver.find_element(By.ID, "login-user").is_displayed())
    driver.find_element(By.ID, "login-user").send_keys(user)
    driver.find_element(By.ID, "login-password").send_keys("wrong" + Keys.ENTER)
    message = until("the refusal", lambda: driver.find_element(By.ID, "message").text)
    result("refused", json.dumps(message))
    driver.find_element(By.ID, "login-password").clear()
    driver.find_element(By.ID, "login-password").send_keys(password + Keys.ENTER)
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())
    result("who", driver.find_element(By.ID, "who").text)
    open_collection(driver, args[0])
    result("rows", ",".join(ids(driver)))
    result("cookie_visible_to_script", json.dumps(driver.execute_script("return document.cookie")))


def scenario_live_add(driver, url, line_port, user, password, args):
    collection, record_id = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    driver.execute_script("window.notReloaded = true")
    line = Line(line_port, user, password)
    started = time.monotonic()
    reply = line.ask(f'p PUT {collection} {record_id} 0 {{"name":"Added by the line protocol"}}')
    result("put", reply)
    until("the new row", lambda: record_id in ids(driver), seconds=5)
    result("seconds", f"{time.monotonic() - started:.3f}")
    result("not_reloaded", driver.execute_script("return window.notReloaded === true"))
    result("flashed", "flash" in row(driver, record_id).get_attribute("class"))
    result("name", cell(driver, record_id, "name").text)


def scenario_edit(driver, url, line_port, user, password, args):
    collection, record_id, field, value = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the row", lambda: record_id in ids(driver))
    edit(driver, record_id, field, value)
    until("the saved value", lambda: cell(driver, record_id, field).text == value)
    result("message", driver.find_element(By.ID, "message").text)


def scenario_conflict(driver, url, line_port, user, password, args):
    collection, record_id, field, mine, theirs = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the row", lambda: record_id in ids(driver))
    line = Line(line_port, user, password)

    def someone_else_saves():
        current = line.ask(f"g GET {collection} {record_id}")
        rev = current.split(" ")[5]
        result("their_put", line.ask(f'p PUT {collection} {record_id} {rev} {{"{field}":"{theirs}","name":"Ada"}}'))
        time.sleep(0.3)  # their change reaches the open table while this edit is still open

    edit(driver, record_id, field, mine, before_typing=someone_else_saves)
    dialog = until("the conflict dialog", lambda: driver.find_element(By.ID, "conflict-dialog").is_displayed() and driver.find_element(By.ID, "conflict-dialog"))
    result("dialog_mine", driver.find_element(By.ID, "conflict-mine").text)
    result("dialog_theirs", driver.find_element(By.ID, "conflict-theirs").text)
    dialog.find_element(By.ID, "keep-mine").click()
    until("my value in the table", lambda: cell(driver, record_id, field).text == mine)


def scenario_drag(driver, url, line_port, user, password, args):
    collection, moved, anchor = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the rows", lambda: moved in ids(driver) and anchor in ids(driver))
    handle = row(driver, moved).find_element(By.CSS_SELECTOR, "td.handle")
    target = row(driver, anchor)
    offset = -target.size["height"] // 4  # the upper half: before the anchor
    ActionChains(driver).click_and_hold(handle).move_to_element_with_offset(target, 0, offset).pause(0.1) \
        .move_to_element_with_offset(target, 0, offset).release().perform()
    until("the new order", lambda: ids(driver).index(moved) == ids(driver).index(anchor) - 1)
    result("order", ",".join(ids(driver)))


def scenario_revoke(driver, url, line_port, user, password, args):
    label = args[0]
    log_in(driver, url, user, password)
    click(driver, "nav a[data-view='devices']", "nav a[data-view='devices']")
    button = until("the device's revoke button", lambda: driver.find_element(By.CSS_SELECTOR, f'button[aria-label="Revoke {label}"]'))
    button.click()
    until("the device gone from the list", lambda: not driver.find_elements(By.CSS_SELECTOR, f'button[aria-label="Revoke {label}"]'))
    result("message", driver.find_element(By.ID, "message").text)


def headers(driver):
    return [th.text.replace(" ▲", "").replace(" ▼", "") for th in driver.find_elements(By.CSS_SELECTOR, "#records thead th")][1:-1]


def visible_ids(driver):
    return [tr.get_attribute("data-id") for tr in driver.find_elements(By.CSS_SELECTOR, "#records tbody tr") if tr.is_displayed()]


def scenario_overlap(driver, url, line_port, user, password, args):
    """Two refreshes of each view overlap (every response held back 300 ms): each row once."""
    log_in(driver, url, user, password)
    open_collection(driver, args[0])
    driver.execute_script("""
        const real = window.fetch;
        window.fetch = (...a) => new Promise((ok) => setTimeout(() => ok(real(...a)), 300));""")
    for view, selector in [("members", "#members tbody tr"), ("devices", "#devices tbody tr")]:
        driver.execute_script("location.hash = arguments[0]", view)
        driver.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")
        until(f"the {view} rows", lambda: driver.find_elements(By.CSS_SELECTOR, selector))
        time.sleep(0.8)
        result(f"{view}_rows", len(driver.find_elements(By.CSS_SELECTOR, selector)))


def scenario_columns(driver, url, line_port, user, password, args):
    collection, record_id = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    line = Line(line_port, user, password)
    result("put", line.ask(f'p PUT {collection} {record_id} 0 {{"email":"m@example.org","name":"{record_id}","phone":"555-0100"}}'))
    until("the new row", lambda: record_id in ids(driver))
    until("the new column", lambda: "email" in headers(driver))
    result("natural", ",".join(headers(driver)))
    click(driver, "#columns-button", "columns-button")
    until("the columns panel", lambda: driver.find_element(By.CSS_SELECTOR, "#columns-panel [data-column='email']"))
    click(driver, 'button[aria-label="Move column email left"]', 'button[aria-label="Move column email left"]')
    until("email moved", lambda: headers(driver).index("email") == 2)
    click(driver, 'input[aria-label="Show phone"]', 'input[aria-label="Show phone"]')
    until("phone hidden", lambda: "phone" not in headers(driver))
    result("arranged", ",".join(headers(driver)))
    driver.refresh()
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())
    open_collection(driver, collection)
    until("the rows", lambda: record_id in ids(driver))
    result("remembered", ",".join(headers(driver)))
    filter_box = driver.find_element(By.ID, "filter")
    filter_box.send_keys("gra")
    until("the filtered rows", lambda: visible_ids(driver) == ["Grace"])
    result("filtered", ",".join(visible_ids(driver)))
    filter_box.send_keys(Keys.CONTROL, "a")
    filter_box.send_keys(Keys.BACKSPACE)
    # Clearing the filter redraws the table, its header's sort buttons too.
    until("the filter cleared", lambda: len(visible_ids(driver)) == len(ids(driver)) > 1)
    click(driver, 'button[aria-label="Sort by name"]', "sorted up")
    click(driver, 'button[aria-label="Sort by name"]', "sorted down")
    until("sorted down", lambda: visible_ids(driver)[0] == record_id)
    result("sorted", ",".join(visible_ids(driver)))
    result("drag_off", "off" in row(driver, "Ada").find_element(By.CSS_SELECTOR, "td.handle").get_attribute("class"))


def scenario_add_form(driver, url, line_port, user, password, args):
    collection, record_id, name, phone = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the rows", lambda: len(ids(driver)) >= 3)
    click(driver, "#add-record", "add-record")
    until("the form", lambda: driver.find_element(By.ID, "new-record").is_displayed())
    driver.find_element(By.ID, "new-record-id").send_keys(record_id)
    driver.find_element(By.CSS_SELECTOR, "#new-record-fields input[data-field='name']").send_keys(name)
    driver.find_element(By.CSS_SELECTOR, "#new-record-fields input[data-field='phone']").send_keys(phone + Keys.ENTER)
    until("the new row", lambda: record_id in ids(driver))
    result("phone", cell(driver, record_id, "phone").text)


def scenario_conflict_all(driver, url, line_port, user, password, args):
    collection, record_id = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the row", lambda: record_id in ids(driver))
    line = Line(line_port, user, password)

    def someone_else_saves():
        rev = line.ask(f"g GET {collection} {record_id}").split(" ")[5]
        result("their_put", line.ask(f'p PUT {collection} {record_id} {rev} {{"name":"Ada King","phone":"555-THEIRS","title":"Countess"}}'))
        time.sleep(0.3)

    edit(driver, record_id, "phone", "555-MINE", before_typing=someone_else_saves)
    until("the conflict dialog", lambda: driver.find_element(By.ID, "conflict-dialog").is_displayed())
    result("others", ",".join(li.get_attribute("data-field") for li in driver.find_elements(By.CSS_SELECTOR, "#conflict-others li")))
    click(driver, "#keep-mine", "keep-mine")
    until("my value", lambda: cell(driver, record_id, "phone").text == "555-MINE")


def scenario_json_edit(driver, url, line_port, user, password, args):
    collection, record_id, text = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the tags column", lambda: record_id in ids(driver) and "tags" in headers(driver))
    target = cell(driver, record_id, "tags")
    target.click()
    target.send_keys(Keys.ENTER)
    box = until("the JSON editor", lambda: cell(driver, record_id, "tags").find_element(By.CSS_SELECTOR, "textarea"))
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text)
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    until("the saved list", lambda: cell(driver, record_id, "tags").text == text)
    result("message", driver.find_element(By.ID, "message").text)


def scenario_undo_delete(driver, url, line_port, user, password, args):
    collection, record_id, expected = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the row", lambda: record_id in ids(driver))
    driver.execute_script("window.confirm = () => true")
    click(driver, f'button[aria-label="Delete {record_id}"]', f'button[aria-label="Delete {record_id}"]')
    until("the row gone", lambda: record_id not in ids(driver))
    result("gone", ",".join(ids(driver)))
    until("the undo button", lambda: driver.find_element(By.CSS_SELECTOR, "#message button")).click()
    until("the row back in its place", lambda: record_id in ids(driver) and ids(driver) == expected.split(","), seconds=5)
    result("back", ",".join(ids(driver)))


def scenario_cards(driver, url, line_port, user, password, args):
    driver.set_window_size(390, 844)
    log_in(driver, url, user, password)
    open_collection(driver, args[0])
    until("the rows", lambda: len(ids(driver)) >= 3)
    first = driver.find_elements(By.CSS_SELECTOR, "#records tbody tr")[0]
    result("display", first.value_of_css_property("display"))
    result("head_shown", driver.find_element(By.CSS_SELECTOR, "#records thead").is_displayed())
    heights = [b.size["height"] for b in first.find_elements(By.CSS_SELECTOR, "td.actions button")]
    result("smallest_button", min(heights))
    result("page_width", driver.execute_script("return document.documentElement.scrollWidth"))


def scenario_collections(driver, url, line_port, user, password, args):
    created, renamed = args
    log_in(driver, url, user, password)
    driver.execute_script("window.confirm = () => true")
    click(driver, "#create-collection", "create-collection")
    driver.find_element(By.ID, "new-collection-name").send_keys(created + Keys.ENTER)
    until("the new collection picked", lambda: driver.find_element(By.ID, "collection").get_attribute("value") == created)
    click(driver, "#rename-collection-button", "rename-collection-button")
    rename = driver.find_element(By.ID, "rename-collection-to")
    rename.send_keys(Keys.CONTROL, "a")
    rename.send_keys(renamed + Keys.ENTER)
    until("the renamed collection picked", lambda: driver.find_element(By.ID, "collection").get_attribute("value") == renamed)
    result("after_rename", ",".join(o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#collection option")))
    click(driver, "#drop-collection", "drop-collection")
    until("the collection gone", lambda: renamed not in [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#collection option")])
    result("message", driver.find_element(By.ID, "message").text)
    # What the device keeps: neither the old name nor the dropped collection.
    kept = lambda: driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const open = indexedDB.open('plistsync');"
        "open.onsuccess = () => { const r = open.result.transaction('collections').objectStore('collections').getAllKeys();"
        " r.onsuccess = () => done(r.result.sort().join(',')); r.onerror = () => done('error'); };"
        "open.onerror = () => done('error');")
    until("the device's copy of the dropped collection gone", lambda: created not in kept().split(",") and renamed not in kept().split(","))
    result("kept", kept())


def scenario_history(driver, url, line_port, user, password, args):
    collection, record_id, restore_rev = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the row", lambda: record_id in ids(driver))
    click(driver, f'button[aria-label="History of {record_id}"]', f'button[aria-label="History of {record_id}"]')
    until("the history dialog", lambda: driver.find_element(By.ID, "history-dialog").is_displayed())
    result("versions", ",".join(li.get_attribute("data-rev") for li in driver.find_elements(By.CSS_SELECTOR, "#history-versions li")))
    click(driver, f'button[aria-label="Restore rev {restore_rev} of {record_id}"]', f'button[aria-label="Restore rev {restore_rev} of {record_id}"]')
    until("the restored value", lambda: driver.find_element(By.ID, "message").text.startswith("restored"))
    result("message", driver.find_element(By.ID, "message").text)


def scenario_activity(driver, url, line_port, user, password, args):
    """The Activity view names who changed what and from which device; filtered to one device,
    "Undo from here" previews what the revert writes, and Undo writes it."""
    collection, device, screenshot = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    click(driver, 'nav a[data-view="activity"]', "the Activity link")
    until("the activity rows", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#activity tbody tr[data-seq]")) >= 5)
    columns = lambda index: [td.text for td in driver.find_elements(By.CSS_SELECTOR, f"#activity tbody tr td:nth-child({index})")]
    result("devices", ",".join(columns(3)))
    result("records", ",".join(columns(5)))
    until(f"device {device} in the filter", lambda: driver.find_elements(By.CSS_SELECTOR, f"#activity-filter option[value='device:{device}']"))
    driver.execute_script("const s = document.querySelector('#activity-filter'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", "device:" + device)
    until("only the device's changes", lambda: set(columns(3)) == {"stolen laptop"})
    click(driver, "#activity tbody tr:last-child button", "Undo from here")
    until("the undo preview", lambda: driver.find_element(By.ID, "undo-dialog").is_displayed())
    until("the preview's records", lambda: driver.find_elements(By.CSS_SELECTOR, "#undo-records li"))
    result("preview", ";".join(li.text for li in driver.find_elements(By.CSS_SELECTOR, "#undo-records li")))
    driver.save_screenshot(screenshot)
    click(driver, "#undo-confirm", "Undo")
    until("the undo's message", lambda: driver.find_element(By.ID, "message").text.startswith("undid"))
    result("message", driver.find_element(By.ID, "message").text)
    # On a phone the changes are cards the width of the screen: nothing scrolls sideways.
    driver.set_window_size(390, 844)
    until("the cards", lambda: driver.execute_script("return getComputedStyle(document.querySelector('#activity tbody tr')).display") == "grid")
    result("phone_overflow", driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth"))
    driver.save_screenshot(screenshot.replace(".png", "-phone.png"))
    # With no network (Chromium's own offline mode) the view says why it shows no changes, and
    # the changes come back with the server.
    driver.execute_cdp_cmd("Network.enable", {})
    network = lambda offline: driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions", {"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    network(True)
    driver.execute_script("location.hash = 'records'")
    driver.execute_script("location.hash = 'activity'")
    until("the offline note", lambda: driver.find_elements(By.CSS_SELECTOR, "#activity tbody tr.offline"))
    result("offline_note", driver.find_element(By.CSS_SELECTOR, "#activity tbody tr.offline").text)
    result("offline_rows", len(driver.find_elements(By.CSS_SELECTOR, "#activity tbody tr[data-seq]")))
    driver.save_screenshot(screenshot.replace(".png", "-offline-phone.png"))
    driver.set_window_size(1280, 800)
    driver.save_screenshot(screenshot.replace(".png", "-offline.png"))
    network(False)
    # (Still filtered to the laptop: its four changes.)
    until("the changes back", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#activity tbody tr[data-seq]")) == 4
          and not driver.find_elements(By.CSS_SELECTOR, "#activity tbody tr.offline"), 15)


def scenario_defects(driver, url, line_port, user, password, args):
    """Issue 44 item 5: a field someone adds to a record early in the list comes last; adding a
    record whose id exists says so; the history button draws without an emoji font."""
    collection, early_id, existing_id = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the rows", lambda: early_id in ids(driver))
    result("before", ",".join(headers(driver)))
    line = Line(line_port, user, password)
    result("put", line.ask(f'p PUT {collection} {early_id} 1 {{"email":"a@example.org","name":"{early_id}","phone":"555-0111"}}'))
    until("the new column", lambda: "email" in headers(driver))
    result("after", ",".join(headers(driver)))
    history = row(driver, early_id).find_element(By.CSS_SELECTOR, f'button[aria-label="History of {early_id}"]')
    result("history_text", json.dumps(history.text))
    result("history_icon_width", history.find_element(By.CSS_SELECTOR, "svg").size["width"])
    click(driver, "#add-record", "add-record")
    until("the form", lambda: driver.find_element(By.ID, "new-record").is_displayed())
    driver.find_element(By.ID, "new-record-id").send_keys(existing_id)
    driver.find_element(By.CSS_SELECTOR, "#new-record-fields input[data-field='name']").send_keys("Someone else" + Keys.ENTER)
    until("the refusal", lambda: "exists" in driver.find_element(By.ID, "message").text)
    result("add_existing", driver.find_element(By.ID, "message").text)


def scenario_offline_shell(driver, url, line_port, user, password, args):
    """Issue 44 item 1: installable, and the shell opens with the server gone (it was the
    browser's "This site can't be reached"); the page says it is offline."""
    import os
    import signal
    collection, server_pid = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    manifest = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(document.querySelector('link[rel=manifest]').href).then(r => r.json()).then(m => done(JSON.stringify(m)), e => done(String(e)));")
    result("manifest", manifest)
    until("the service worker in control", lambda: driver.execute_script("return !!navigator.serviceWorker.controller") or driver.refresh(), 20)
    until("the records view again", lambda: driver.find_element(By.ID, "records-view").is_displayed())
    result("offline_banner_online", driver.find_element(By.ID, "offline").is_displayed())
    os.kill(int(server_pid), signal.SIGTERM)
    until("the offline banner", lambda: driver.find_element(By.ID, "offline").is_displayed(), 15)
    result("live_dot", driver.find_element(By.ID, "live").get_attribute("class"))
    started = time.monotonic()
    driver.refresh()
    until("the shell with no server", lambda: driver.find_element(By.ID, "offline").is_displayed(), 10)
    result("offline_start_seconds", f"{time.monotonic() - started:.3f}")
    result("title", driver.title)
    result("offline_text", driver.find_element(By.ID, "offline").text)


def scenario_replica(driver, url, line_port, user, password, args):
    """Issue 44 item 2: the collections a person opened are kept on the device; a stream resumes
    after the kept seq (changes made meanwhile, a delete among them, arrive); with the server
    gone, a reload shows what is kept."""
    import os
    import signal
    collection, server_pid = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the rows", lambda: ids(driver) == ["Ada", "Grace", "Linus"])
    driver.execute_async_script("const done = arguments[arguments.length - 1]; setTimeout(done, 300);")  # the replica's batch
    driver.get("about:blank")
    line = Line(line_port, user, password)
    result("put", line.ask(f'p PUT {collection} Margaret 0 {{"name":"Margaret","phone":"555-0123"}}'))
    result("del", line.ask(f"d DEL {collection} Linus 1"))
    driver.get(url)
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())
    until("the rows with what changed meanwhile", lambda: ids(driver) == ["Ada", "Grace", "Margaret"])
    result("resumed", ",".join(ids(driver)))
    result("resumed_after", driver.find_element(By.ID, "live").get_attribute("data-since"))
    until("the service worker in control", lambda: driver.execute_script("return !!navigator.serviceWorker.controller") or driver.refresh(), 20)
    until("the rows again", lambda: ids(driver) == ["Ada", "Grace", "Margaret"])
    driver.execute_async_script("const done = arguments[arguments.length - 1]; setTimeout(done, 300);")
    os.kill(int(server_pid), signal.SIGTERM)
    until("the offline banner", lambda: driver.find_element(By.ID, "offline").is_displayed(), 15)
    driver.refresh()
    until("the kept rows with no server", lambda: ids(driver) == ["Ada", "Grace", "Margaret"], 10)
    result("offline_rows", ",".join(ids(driver)))
    result("offline_phone", cell(driver, "Margaret", "phone").text)
    result("picker", driver.find_element(By.CSS_SELECTOR, "#collection option:checked").text)
    result("offline_banner", driver.find_element(By.ID, "offline").is_displayed())


def scenario_screenshots(driver, url, line_port, user, password, args):
    collection, folder = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    time.sleep(0.5)
    for name, (width, height) in {"desktop": (1280, 800), "phone": (390, 844)}.items():
        driver.set_window_size(width, height)
        time.sleep(0.4)
        for view in ["records", "conflicts", "members", "devices", "status"]:
            driver.execute_script("location.hash = arguments[0]", view)
            time.sleep(0.6)
            path = f"{folder}/console-{view}-{name}.png"
            driver.save_screenshot(path)
            result("screenshot", path)
        # The records' tools open: the whole-record form, the columns panel, a filter.
        driver.execute_script("location.hash = 'records'")
        time.sleep(0.4)
        click(driver, "#add-record", "add-record")
        click(driver, "#columns-button", "columns-button")
        driver.find_element(By.ID, "filter").send_keys("a")
        time.sleep(0.4)
        path = f"{folder}/console-tools-{name}.png"
        driver.save_screenshot(path)
        result("screenshot", path)
        click(driver, "#new-record [data-cancel]", "#new-record [data-cancel]")
        click(driver, "#columns-button", "columns-button")
        driver.find_element(By.ID, "filter").send_keys(Keys.BACKSPACE)


def run_reporting_driver_errors(run, driver, *arguments):
    """Runs a scenario; a WebDriver error ends it with the scenario's own frames and the driver's
    message (chromedriver's native frames say nothing and would push the message out of a CI log's tail)."""
    try:
        run(driver, *arguments)
    except WebDriverException as error:
        import traceback
        error.stacktrace = None
        frames = "".join(traceback.format_tb(error.__traceback__))
        fail(f"{frames}{type(error).__name__}: {error.msg}")


def main():
    if len(sys.argv) < 6:
        fail(__doc__)
    scenario, url, line_port, user, password, *args = sys.argv[1:]
    import offline
    import team
    name = "scenario_" + scenario.replace("-", "_")
    run = globals().get(name) or getattr(offline, name, None) or getattr(team, name, None)
    if run is None:
        fail(f"no scenario {scenario}")
    driver = browser()
    try:
        run_reporting_driver_errors(run, driver, url, int(line_port), user, password, args)
        # Expected refusals show as network errors: /api/me before login, the wrong password,
        # the stale write of the conflict scenario.
        expected = {"login": "status of 401", "conflict": "status of 409", "conflict-all": "status of 409", "defects": "status of 409", "offline-shell": "ERR_CONNECTION_REFUSED", "replica": "ERR_CONNECTION_REFUSED",
                    "offline-edits": ("ERR_CONNECTION_REFUSED", "status of 409"), "browser-offline": ("ERR_INTERNET_DISCONNECTED", "status of 409"),
                    "session-ended": ("ERR_INTERNET_DISCONNECTED", "status of 401"), "team-password": "status of 403",
                    "team-invite": "status of 401", "activity": "ERR_INTERNET_DISCONNECTED"}.get(scenario, "\0")
        result("console_errors", json.dumps(severe_errors(driver, *(expected if isinstance(expected, tuple) else (expected,)))))
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
