"""Issue 44's offline scenarios for console.py: the server really stops and starts again (this
module runs it, on the ports and data folder BrowserTests gave it), browsers edit with it gone,
reload, and come back; an agent edits its mirror meanwhile. What reached the server is read
through the HTTP API and reported as RESULT lines."""
import http.cookiejar
import json
import os
import plistlib
import random
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from console import browser, cell, click, edit, fail, ids, log_in, open_collection, result, severe_errors, until


class Server:
    """The server as a process this scenario stops and starts (same ports, same data)."""

    def __init__(self, command, http_port, log_path):
        self.command = command
        self.http_port = http_port
        self.log_path = log_path
        self.process = None

    def start(self):
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        until("the server listening", self.answers, 10)
        return time.monotonic()

    def answers(self):
        try:
            socket.create_connection(("127.0.0.1", self.http_port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)


class API:
    """The HTTP API with a session cookie of its own (Protocol/HTTP.md)."""

    def __init__(self, url, user, password):
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.call("POST", "api/login", {"user": user, "password": password})

    def call(self, method, path, body=None):
        request = urllib.request.Request(self.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"X-PlistSync-CSRF": "1", "Content-Type": "application/json"})
        with self.opener.open(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None

    def records(self, collection):
        return {r["id"]: r["fields"] for r in self.call("GET", f"api/collections/{urllib.parse.quote(collection)}/records")["records"]}

    def versions(self, collection, record_id):
        path = f"api/collections/{urllib.parse.quote(collection)}/records/{urllib.parse.quote(record_id)}/versions"
        return [v["fields"] for v in self.call("GET", path)["versions"]]


def service_worker_in_control(driver):
    until("the service worker in control", lambda: driver.execute_script("return !!navigator.serviceWorker.controller") or driver.refresh(), 20)


# The script client (/sdk/plistsync.js) in a page of the console's origin: the module's own file
# opened as the page (the service worker keeps it, so it reloads with no network too).
OPEN_SDK = """
const [collection, done] = [arguments[0], arguments[arguments.length - 1]];
import('/sdk/plistsync.js').then(async (sdk) => {
  window.sdk = sdk;
  window.opened = await sdk.openCollection(collection);
  done('ok');
}, (error) => done('error ' + error));
"""

# Each edit resolves once it is kept on the device: the script returns when all are.
SDK_EDIT = """
const [edits, done] = [arguments[0], arguments[arguments.length - 1]];
const kept = [];
for (const [id, field, value] of edits) {
  const record = window.opened.get(id);
  const fields = new Map(record ? record.fields : []);
  fields.set(field, { type: 'string', value });
  kept.push(window.opened.put(id, fields));
}
Promise.all(kept).then(() => done('kept'), (error) => done('error ' + error));
"""


def script_client(url, user, password, collection):
    driver = browser()
    log_in(driver, url, user, password)
    service_worker_in_control(driver)
    driver.get(url + "sdk/plistsync.js")
    open_sdk(driver, collection)
    return driver


def open_sdk(driver, collection):
    answer = driver.execute_async_script(OPEN_SDK, collection)
    if answer != "ok":
        fail(f"the script client did not open {collection}: {answer}")


def pending(driver):
    return driver.execute_script("return window.opened.pending")


def is_live(driver):
    return driver.execute_script("return window.opened.live")


def agent_edit(mirror, record_id, field, value):
    """Edits a record's file in the agent's mirror as an app would: read, change, write, rename."""
    path = os.path.join(mirror, record_id + ".plist")
    with open(path, "rb") as file:
        fields = plistlib.load(file)
    fields[field] = value
    temporary = os.path.join(mirror, "." + record_id + ".tmp")
    with open(temporary, "wb") as file:
        plistlib.dump(fields, file)
    os.rename(temporary, path)


def conflict_copies(api, collection):
    return {copy_id: fields for copy_id, fields in api.records(collection + "~conflicts").items()}


def scenario_offline_edits(driver, url, line_port, user, password, args):
    """Issue 44 items 2 and 3: a phone and a desktop edit with the server stopped, the phone
    reloads (its outbox and pending marks survive), an agent edits another field of the same
    record; back online, both fields survive and the field both browsers changed makes exactly
    one conflict copy, listed in the console. Then 100 edits queued by the script client reach
    the server and the other console."""
    collection, command, mirror, log_path = args
    http_port = urllib.parse.urlparse(url).port
    server = Server(json.loads(command), http_port, log_path)
    server.start()
    try:
        run_offline_edits(driver, url, user, password, collection, server, mirror)
    finally:
        if server.process.poll() is None:
            server.stop()


def run_offline_edits(phone, url, user, password, collection, server, mirror):
    phone.set_window_size(390, 844)
    log_in(phone, url, user, password)
    open_collection(phone, collection)
    service_worker_in_control(phone)
    until("the rows", lambda: ids(phone) == ["Ada", "Grace", "Linus"])
    desk = browser()
    try:
        log_in(desk, url, user, password)
        open_collection(desk, collection)
        until("the agent's copy", lambda: os.path.exists(os.path.join(mirror, "Ada.plist")), 20)
        api = API(url, user, password)

        server.stop()
        until("the offline banner", lambda: phone.find_element(By.ID, "offline").is_displayed(), 15)
        edit(phone, "Ada", "phone", "555-PHONE")
        until("the phone's value shown", lambda: cell(phone, "Ada", "phone").text == "555-PHONE")
        edit(desk, "Grace", "phone", "555-DESK")
        until("the desk's value shown", lambda: cell(desk, "Grace", "phone").text == "555-DESK")
        edit(phone, "Grace", "phone", "555-PHONE2")
        until("the phone's second value shown", lambda: cell(phone, "Grace", "phone").text == "555-PHONE2")
        agent_edit(mirror, "Ada", "name", "Ada Lovelace")
        result("offline_message", phone.find_element(By.ID, "message").text)
        result("pending_before_reload", phone.find_element(By.ID, "pending").text)
        phone.refresh()
        until("the kept rows after an offline reload", lambda: ids(phone) == ["Ada", "Grace", "Linus"], 10)
        until("the waiting edits after the reload", lambda: cell(phone, "Ada", "phone").text == "555-PHONE")
        result("pending_after_reload", phone.find_element(By.ID, "pending").text)
        result("pending_marks", ",".join(tr.get_attribute("data-id") for tr in phone.find_elements(By.CSS_SELECTOR, "#records tbody tr.pending")))
        result("pending_mark_text", phone.find_element(By.CSS_SELECTOR, "tr[data-id='Ada'] .pending-mark").text)
        if os.environ.get("PLISTSYNC_SCREENSHOTS"):
            phone.save_screenshot(os.path.join(os.environ["PLISTSYNC_SCREENSHOTS"], "console-pending-phone.png"))
            desk.save_screenshot(os.path.join(os.environ["PLISTSYNC_SCREENSHOTS"], "console-pending-desktop.png"))

        back = server.start()
        until("the phone's edits sent", lambda: not phone.find_element(By.ID, "pending").is_displayed(), 10)
        until("the desk's edits sent", lambda: not desk.find_element(By.ID, "pending").is_displayed(), 10)
        until("the phone's edit on the desk", lambda: cell(desk, "Ada", "phone").text == "555-PHONE", 10)
        result("reconnect_seconds", f"{time.monotonic() - back:.3f}")
        until("the agent's edit on the server", lambda: api.records(collection)["Ada"].get("name") == "Ada Lovelace", 30)
        until("the agent's edit on the phone", lambda: cell(phone, "Ada", "name").text == "Ada Lovelace", 10)
        records = api.records(collection)
        result("ada", json.dumps(records["Ada"], sort_keys=True))
        result("grace", json.dumps(records["Grace"], sort_keys=True))
        copies = conflict_copies(api, collection)
        result("copies", json.dumps(sorted(copies.values(), key=lambda f: f.get("phone", "")), sort_keys=True))
        result("copy_ids", ",".join(sorted(copies)))
        desk.execute_script("location.hash = 'conflicts'")
        until("the copy in the desk's conflicts view", lambda: "Grace" in desk.find_element(By.ID, "conflicts").text, 10)
        result("desk_conflicts", desk.find_element(By.ID, "conflicts").text.replace("\n", " | "))
        if os.environ.get("PLISTSYNC_SCREENSHOTS"):
            desk.save_screenshot(os.path.join(os.environ["PLISTSYNC_SCREENSHOTS"], "console-merged-conflict-desktop.png"))
            phone.execute_script("location.hash = 'conflicts'")
            until("the copy in the phone's conflicts view", lambda: "Grace" in phone.find_element(By.ID, "conflicts").text, 10)
            phone.save_screenshot(os.path.join(os.environ["PLISTSYNC_SCREENSHOTS"], "console-merged-conflict-phone.png"))
        desk.execute_script("location.hash = 'records'")

        # 100 edits queued by the script client while the server is gone.
        script = script_client(url, user, password, collection)
        try:
            until("the script client live", lambda: is_live(script))
            server.stop()
            until("the script client offline", lambda: not is_live(script), 10)
            script.execute_async_script(SDK_EDIT, [[f"bulk-{n:03}", "name", f"Bulk {n}"] for n in range(100)])
            result("script_pending", pending(script))
            back = server.start()
            until("the 100 edits sent", lambda: pending(script) == 0, 10)
            result("sent_seconds", f"{time.monotonic() - back:.3f}")
            until("the 100 records on the desk", lambda: len(ids(desk)) == 103, 10)
            result("hundred_seconds", f"{time.monotonic() - back:.3f}")
            result("desk_rows", len(ids(desk)))
        finally:
            script.quit()
    finally:
        desk.quit()


def scenario_offline_stress(driver, url, line_port, user, password, args):
    """Issue 44's safety goal: two browsers (script clients) and an agent make 210 edits over
    20 stops and starts of the server, reloading while offline; afterwards every value typed is
    in a record, a conflict copy, or the record's versions (replaced later on purpose)."""
    collection, command, mirror, log_path, cycles, seed = args
    http_port = urllib.parse.urlparse(url).port
    server = Server(json.loads(command), http_port, log_path)
    server.start()
    clients = []
    try:
        clients = [script_client(url, user, password, collection) for _ in range(2)]
        api = API(url, user, password)
        result("typed", run_offline_stress(clients, api, server, mirror, collection, int(cycles), random.Random(int(seed))))
    finally:
        for client in clients:
            client.quit()
        if server.process.poll() is None:
            server.stop()


def run_offline_stress(clients, api, server, mirror, collection, cycles, rng):
    record_ids = ["Ada", "Grace", "Linus"]
    fields = ["name", "phone", "note"]
    typed = []      # (record, field, value)
    for cycle in range(cycles):
        for client in clients:
            until("the script client live", lambda: is_live(client), 15)
        server.stop()
        for client in clients:
            until("the script client offline", lambda: not is_live(client), 10)
        for number, client in enumerate(clients):
            # Each (record, field) at most once a cycle: a value replaced before it was ever sent
            # was replaced on purpose and is in no version.
            edits = [(record, field, f"b{number}-c{cycle}-{record}-{field}") for record, field in rng.sample([(r, f) for r in record_ids for f in fields], 5)]
            client.execute_async_script(SDK_EDIT, edits)
            typed.extend(edits)
            if rng.random() < 0.3:
                result("reload", f"cycle {cycle} browser {number}")
                client.refresh()
                open_sdk(client, collection)
                if pending(client) < 1:
                    fail(f"cycle {cycle}: the outbox did not survive an offline reload")
        if cycle % 2 == 0:
            record, field = rng.choice(record_ids), rng.choice(fields)
            value = f"agent-c{cycle}-{record}-{field}"
            agent_edit(mirror, record, field, value)
            typed.append((record, field, value))
        server.start()
        for client in clients:
            until(f"cycle {cycle}: the edits sent", lambda: is_live(client) and pending(client) == 0, 15)
        if cycle % 2 == 0:
            until(f"cycle {cycle}: the agent's edit on the server", lambda: value in kept_values(api, collection, record, field), 30)

    missing = []
    for record, field, value in typed:
        if value not in kept_values(api, collection, record, field):
            missing.append(value)
    result("missing", json.dumps(missing))
    return len(typed)


def kept_values(api, collection, record, field):
    """Every value `field` of `record` has on the server: now, in a conflict copy, in a version."""
    values = set()
    current = api.records(collection).get(record, {})
    values.add(current.get(field))
    for copy_id, fields in conflict_copies(api, collection).items():
        if copy_id.startswith(record + ".sync-conflict-"):
            values.add(fields.get(field))
    for fields in api.versions(collection, record):
        values.add(fields.get(field))
    return values


def emulate_offline(driver, offline):
    """Chromium's own offline mode for the page (DevTools' network emulation). It covers neither
    the page's service worker nor an event stream already open: the stream goes on delivering,
    so the page must not take it as a sign that it can write."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})


def edit_offline(driver, url, user, password, collection, phone):
    """Logs in, opens `collection`, switches the page offline and edits Ada's phone: it waits."""
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    until("the rows", lambda: "Ada" in ids(driver))
    emulate_offline(driver, True)
    edit(driver, "Ada", "phone", phone)
    until("the edit waiting", lambda: driver.find_element(By.ID, "pending").is_displayed())


def scenario_browser_offline(driver, url, line_port, user, password, args):
    """Issue 44 with the browser's own offline mode and the server up: an edit made offline
    waits (its stream still open), someone else edits another field meanwhile; online again,
    the edit goes up and both fields stay."""
    from console import Line
    collection, = args
    edit_offline(driver, url, user, password, collection, "555-TUNNEL")
    result("message", driver.find_element(By.ID, "message").text)
    # Linus up twice: the order waits too, and only the row moved is marked.
    for expected in (["Ada", "Linus", "Grace"], ["Linus", "Ada", "Grace"]):
        click(driver, "button[aria-label='Move Linus up']", "Move Linus up")
        until("the row moved", lambda: ids(driver) == expected)
    # A record added with the form and another deleted, offline too.
    click(driver, "#add-record", "add-record")
    until("the form", lambda: driver.find_element(By.ID, "new-record").is_displayed())
    driver.find_element(By.ID, "new-record-id").send_keys("Margaret")
    driver.find_element(By.CSS_SELECTOR, "#new-record-fields input[data-field='name']").send_keys("Margaret")
    driver.find_element(By.CSS_SELECTOR, "#new-record-fields input[data-field='phone']").send_keys("555-0123" + Keys.ENTER)
    until("the new row", lambda: "Margaret" in ids(driver))
    result("added_message", driver.find_element(By.ID, "message").text)
    driver.execute_script("window.confirm = () => true")
    click(driver, 'button[aria-label="Delete Grace"]', "Delete Grace")
    until("the row gone", lambda: "Grace" not in ids(driver))
    result("pending", driver.find_element(By.ID, "pending").text)
    result("pending_marks", ",".join(tr.get_attribute("data-id") for tr in driver.find_elements(By.CSS_SELECTOR, "#records tbody tr.pending")))
    # Collections are the server's to make: refused offline, with a message.
    click(driver, "#create-collection", "create-collection")
    driver.find_element(By.ID, "new-collection-name").send_keys("stock" + Keys.ENTER)
    until("the refusal", lambda: "needs the server" in driver.find_element(By.ID, "message").text)
    result("create_offline", driver.find_element(By.ID, "message").text)
    line = Line(line_port, user, password)
    current = line.ask(f"g GET {collection} Ada")
    result("their_put", line.ask(f'p PUT {collection} Ada {current.split(" ")[5]} {{"name":"Ada King","phone":"555-0111"}}'))
    emulate_offline(driver, False)
    back = time.monotonic()
    until("the edit sent", lambda: not driver.find_element(By.ID, "pending").is_displayed(), 10)
    result("sent_seconds", f"{time.monotonic() - back:.3f}")
    answer = line.ask(f"g GET {collection} Ada")
    result("ada", json.dumps(json.loads(answer[answer.index("{"):]), sort_keys=True))
    result("order", ",".join(API(url, user, password).records(collection)))


def scenario_offline_shell_https(driver, url, line_port, user, password, args):
    """Issue 44 item 1 over HTTPS (`serve --tls`): a browser that trusts the server's certificate
    (here by its public key, as a CA-issued one would be trusted) installs the worker, and the
    shell opens with the server gone."""
    from console import scenario_offline_shell
    collection, server_pid, certificate = args
    public_key = subprocess.run(["openssl", "x509", "-in", certificate, "-pubkey", "-noout"], capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public_key, capture_output=True, check=True).stdout
    import base64
    import hashlib
    trusted = base64.b64encode(hashlib.sha256(der).digest()).decode()
    secure = browser(extra=[f"--ignore-certificate-errors-spki-list={trusted}"])
    try:
        scenario_offline_shell(secure, url, line_port, user, password, [collection, server_pid])
        result("is_secure_context", secure.execute_script("return window.isSecureContext"))
        result("protocol", secure.execute_script("return location.protocol"))
        result("https_console_errors", json.dumps(severe_errors(secure, "ERR_CONNECTION_REFUSED")))
    finally:
        secure.quit()


def scenario_session_ended(driver, url, line_port, user, password, args):
    """An edit waiting on the device when the session ends (the device revoked elsewhere): the
    server's 401 is "not now", never "drop it"; the console asks for a login and, logged in
    again, sends it."""
    from console import Line
    collection, = args
    edit_offline(driver, url, user, password, collection, "555-LATER")
    api = API(url, user, password)
    browsers = [device["id"] for device in api.call("GET", "api/tokens")["devices"] if "Chrome" in device["label"]]
    for device in browsers:
        api.call("DELETE", f"api/tokens/{device}")
    result("revoked", len(browsers))
    emulate_offline(driver, False)
    until("the login form", lambda: driver.find_element(By.ID, "login-user").is_displayed(), 10)
    result("message", driver.find_element(By.ID, "message").text)
    line = Line(line_port, user, password)
    result("before_login", line.ask(f"g GET {collection} Ada"))
    driver.find_element(By.ID, "login-user").clear()
    driver.find_element(By.ID, "login-user").send_keys(user)
    driver.find_element(By.ID, "login-password").send_keys(password + "\n")
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())
    until("the waiting edit sent", lambda: "555-LATER" in line.ask(f"g GET {collection} Ada"), 10)
    until("nothing waiting", lambda: not driver.find_element(By.ID, "pending").is_displayed(), 10)
    answer = line.ask(f"g GET {collection} Ada")
    result("ada", json.dumps(json.loads(answer[answer.index("{"):]), sort_keys=True))
