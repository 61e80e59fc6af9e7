"""Issue 45's scenarios for console.py: an inviter and an invitee in two browser profiles (a
desktop and a phone), the invitation's QR code read from a screenshot by an outside decoder
(zbarimg), a server admin's Users view, and a person changing their own password. What the
browsers saw is reported as RESULT lines; BrowserTests checks the server's side."""
import json
import os
import subprocess
import time

from selenium.webdriver.common.by import By

from console import Line, browser, click, fail, ids, open_collection, result, severe_errors, until


def log_in(driver, url, user, password, keep=False):
    driver.get(url)
    until("the login form", lambda: driver.find_element(By.ID, "login-user").is_displayed())
    driver.find_element(By.ID, "login-user").send_keys(user)
    driver.find_element(By.ID, "login-password").send_keys(password)
    if keep:
        driver.find_element(By.ID, "login-keep").click()
    click(driver, "#login-form button[type=submit]", "the login button")
    until("the records view", lambda: driver.find_element(By.ID, "records-view").is_displayed())


def go(driver, view):
    driver.execute_script("location.hash = arguments[0]", view)
    until(f"the {view} view", lambda: driver.find_element(By.ID, f"{view}-view").is_displayed())


def device_rows(driver):
    """The devices view: (label, signed in) a row."""
    go(driver, "devices")
    until("the devices list", lambda: driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr"))
    return driver.execute_script(
        "return [...document.querySelectorAll('#devices tbody tr')].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])")


def decode_qr(driver, path):
    """Screenshots the invitation's QR code and reads it with zbarimg (not with our code)."""
    driver.find_element(By.CSS_SELECTOR, "#invitation-qr svg").screenshot(path)
    decoded = subprocess.run(["zbarimg", "-q", "--raw", path], capture_output=True, text=True)
    return decoded.stdout.strip()


def scenario_team_invite(driver, url, line_port, user, password, args):
    """alice (desktop, not kept signed in) invites to a collection she administers; the link,
    read from the QR code's screenshot, opens in a phone-sized browser of its own, which makes
    an account and lands in the collection; alice sees the new member and the use within
    seconds; revoking the invitation logs the phone out."""
    collection, folder, plistsync, mirror = args
    log_in(driver, url, user, password)
    open_collection(driver, collection)
    go(driver, "members")
    until("the invitations box", lambda: driver.find_element(By.ID, "invitations-box").is_displayed())
    driver.find_element(By.ID, "invite-uses").clear()
    driver.find_element(By.ID, "invite-uses").send_keys("3")
    driver.find_element(By.ID, "invite-note").send_keys("for carol")
    click(driver, "#invite-form button[type=submit]", "make a link")
    until("the invitation's link", lambda: driver.find_element(By.ID, "invitation-made").is_displayed())
    link = driver.find_element(By.ID, "invitation-link").get_attribute("value")
    result("link", link)
    decoded = decode_qr(driver, f"{folder}/console-invitation-qr.png")
    result("qr_decoded", decoded)
    result("qr_matches", decoded == link)
    until("the open invitation listed", lambda: driver.find_elements(By.CSS_SELECTOR, "#invitations tbody tr"))
    result("listed", driver.find_element(By.CSS_SELECTOR, "#invitations tbody tr td.uses").text)
    driver.save_screenshot(f"{folder}/console-invitation-desktop.png")
    driver.set_window_size(390, 844)
    driver.execute_script("document.querySelector('#invitations-box').scrollIntoView()")
    time.sleep(0.3)
    driver.save_screenshot(f"{folder}/console-invitation-phone.png")
    driver.set_window_size(1280, 900)

    phone = browser(390, 844)
    try:
        started = time.monotonic()
        phone.get(decoded)
        until("the join page", lambda: phone.find_element(By.ID, "join-view").is_displayed())
        until("what it invites to", lambda: "invites you" in phone.find_element(By.ID, "join-summary").text)
        result("summary", phone.find_element(By.ID, "join-summary").text)
        result("note", phone.find_element(By.ID, "join-note").text)
        result("new_account_offered", phone.find_element(By.ID, "join-new").is_displayed())
        phone.save_screenshot(f"{folder}/console-join-phone.png")
        phone.find_element(By.ID, "join-new-user").send_keys("carol")
        phone.find_element(By.ID, "join-new-password").send_keys("tea party")
        phone.find_element(By.ID, "join-new-keep").click()
        click(phone, "#join-new button[type=submit]", "make the account")
        until("the records view", lambda: phone.find_element(By.ID, "records-view").is_displayed())
        until("the collection's rows", lambda: len(ids(phone)) >= 3)
        result("link_to_rows_seconds", f"{time.monotonic() - started:.2f}")
        result("invitee_who", phone.find_element(By.ID, "who").text)
        result("invitee_collection", phone.find_element(By.ID, "collection").get_attribute("value"))
        result("invitee_rows", ",".join(ids(phone)))
        result("invitee_address", phone.execute_script("return location.pathname + location.hash"))
        result("invitee_secret_in_url", "psi_" in phone.current_url)

        # The inviter, on the members view all along, sees carol and the use without a reload.
        seen = time.monotonic()
        until("carol among alice's members", lambda: "carol" in driver.find_element(By.ID, "members").text)
        until("the use counted", lambda: driver.find_element(By.CSS_SELECTOR, "#invitations tbody tr td.uses").text == "1 of 3")
        result("inviter_saw_seconds", f"{time.monotonic() - seen:.2f}")
        result("inviter_members", driver.find_element(By.CSS_SELECTOR, "#members tbody").text.replace("\n", " | "))
        result("inviter_devices", json.dumps(device_rows(driver)))
        result("invitee_devices", json.dumps(device_rows(phone)))
        phone.save_screenshot(f"{folder}/console-devices-phone-invited.png")

        # The same decoded link, given to `plistsync join` on a computer: a third account, mirroring.
        joined = subprocess.Popen([plistsync, "join", decoded, "--dir", mirror, "--user", "dave", "--password-stdin", "--device", "desk"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, HOME=f"{mirror}/.home"))
        joined.stdin.write(b"dave-pw\n")
        joined.stdin.close()
        try:
            until("the joined folder", lambda: len([n for n in os.listdir(f"{mirror}/{collection}") if n.endswith(".plist")]) >= 3
                  if os.path.isdir(f"{mirror}/{collection}") else False, 20)
            result("join_files", ",".join(sorted(n for n in os.listdir(f"{mirror}/{collection}") if n.endswith(".plist") and "." not in n[:-6])))
        finally:
            joined.terminate()
            joined.wait(10)

        # Revoked: the session it produced ends, and the phone asks for a login.
        go(driver, "members")
        revoke = until("the revoke button", lambda: driver.find_element(By.CSS_SELECTOR, "#invitations tbody tr button.danger"))
        revoke.click()
        until("the invitation gone", lambda: not driver.find_elements(By.CSS_SELECTOR, "#invitations tbody tr"))
        until("the phone logged out", lambda: phone.find_element(By.ID, "login-view").is_displayed(), 10)
        result("invitee_after_revoke", phone.find_element(By.ID, "message").text)
        result("phone_console_errors", json.dumps(severe_errors(phone, "status of 401")))
    finally:
        phone.quit()


def scenario_team_users(driver, url, line_port, user, password, args):
    """A server admin adds a user, makes them an admin, resets their password and removes them
    in the Users view; the phone width shows the same view."""
    folder, = args
    log_in(driver, url, user, password, keep=True)
    until("the Users link", lambda: driver.find_element(By.ID, "users-link").is_displayed())
    go(driver, "users")
    until("the users list", lambda: driver.find_elements(By.CSS_SELECTOR, "#users tbody tr"))
    driver.find_element(By.ID, "add-user-name").send_keys("dave")
    driver.find_element(By.ID, "add-user-password").send_keys("firstpw")
    click(driver, "#add-user button[type=submit]", "add the user")
    until("dave listed", lambda: driver.find_elements(By.CSS_SELECTOR, "#users tbody tr[data-user='dave']"))
    result("added", driver.find_element(By.ID, "message").text)
    line = Line(line_port, "dave", "firstpw")
    result("dave_logs_in", line.ask("w WHOAMI"))
    click(driver, "#users tbody tr[data-user='dave'] input[type=checkbox]", "dave's admin box")
    until("dave made an admin", lambda: "is a server admin" in driver.find_element(By.ID, "message").text)
    result("dave_whoami", until("dave's connection sees it", lambda: (lambda w: w if "admin" in w else None)(line.ask("w WHOAMI"))))
    for width, height, name in [(1280, 800, "desktop"), (390, 844, "phone")]:
        driver.set_window_size(width, height)
        time.sleep(0.4)
        driver.save_screenshot(f"{folder}/console-users-{name}.png")
    driver.set_window_size(1280, 900)
    click(driver, "#users tbody tr[data-user='dave'] button[aria-label='Reset the password of dave']", "reset dave's password")
    alert = until("the password prompt", lambda: driver.switch_to.alert)
    alert.send_keys("secondpw")
    alert.accept()
    until("the password set", lambda: "new password for dave" in driver.find_element(By.ID, "message").text)
    result("dave_connection_after_reset", line.line())
    result("dave_new_password", Line(line_port, "dave", "secondpw").ask("w WHOAMI"))
    click(driver, "#users tbody tr[data-user='dave'] button.danger", "remove dave")
    driver.switch_to.alert.accept()
    until("dave gone", lambda: not driver.find_elements(By.CSS_SELECTOR, "#users tbody tr[data-user='dave']"))
    result("users_left", ",".join(driver.execute_script("return [...document.querySelectorAll('#users tbody tr')].map((tr) => tr.dataset.user)")))
    result("devices_kept", json.dumps(device_rows(driver)))


def scenario_team_password(driver, url, line_port, user, password, args):
    """A person changes their own password in the console: a wrong current one is refused; the
    change logs out their other devices (a line-protocol connection) and keeps this browser."""
    new_password, = args
    log_in(driver, url, user, password)
    other = Line(line_port, user, password)
    go(driver, "devices")
    for field, value in [("password-old", "guess"), ("password-new", new_password), ("password-again", new_password)]:
        driver.find_element(By.ID, field).send_keys(value)
    click(driver, "#password-form button[type=submit]", "change the password")
    until("the refusal", lambda: "wrong" in driver.find_element(By.ID, "message").text, 10)
    result("wrong_current", driver.find_element(By.ID, "message").text)
    driver.find_element(By.ID, "password-old").clear()
    driver.find_element(By.ID, "password-old").send_keys(password)
    click(driver, "#password-form button[type=submit]", "change the password")
    until("the change", lambda: "password changed" in driver.find_element(By.ID, "message").text, 10)
    result("changed", driver.find_element(By.ID, "message").text)
    result("other_device", other.line())
    go(driver, "records")
    result("still_signed_in", driver.find_element(By.ID, "who").text)
    if not Line(line_port, user, new_password).ask("w WHOAMI").startswith("w OK WHOAMI"):
        fail("the new password does not log in")
