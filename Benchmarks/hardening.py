#!/usr/bin/env python3
"""Attack figures for issue 8, measured against a real `plistsync serve` on 127.0.0.1.

    python3 Benchmarks/hardening.py .build/release/plistsync [scenario ...]

Scenarios (all by default): silent (20,000 silent connections, fewer if the open-file limit is lower, then a real client's login+PING
time), unfinished (500 connections each sending 1 MiB with no newline: server RSS), guesses (200
connections guessing a password for 30 s: guesses answered), putflood (400 MB of pipelined PUTs
from a client that never reads: peak server RSS). Each starts its own server in a temp folder;
every load is bounded in count and time and stays on loopback.
"""
import os, resource, shutil, socket, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="plistsync-hardening-")
        data = os.path.join(self.dir, "data")
        for user in ("alice", "bob"):
            subprocess.run([BIN, "user", "add", user, "--password-stdin", "--iterations", "1000", "--data", data],
                           input=b"pw\n", check=True, capture_output=True)
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--data", data, "--port-file", port_file,
                                      "--quiet", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.01)
        self.port = int(open(port_file).read())

    def rss_mib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def connect(port, timeout=60, source=None):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0) if source else None)


def read_line(s):
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def login_ping_seconds(port, source=None):
    started = time.time()
    s = connect(port, source=source)
    s.sendall(b"h HELLO 1\na AUTH alice pw\np PING\n")
    replies = [read_line(s) for _ in range(3)]
    s.close()
    return time.time() - started, replies


def silent():
    server = Server()
    sockets = []
    started = time.time()
    for _ in range(min(20_000, hard - 200)):
        try:
            sockets.append(connect(server.port, timeout=5))
        except OSError:
            break
    opened = time.time() - started
    seconds, replies = login_ping_seconds(server.port)
    print(f"silent: {len(sockets)} silent connections opened in {opened:.1f} s; then login+PING took {seconds:.3f} s: {replies}; "
          f"server RSS {server.rss_mib():.0f} MiB")
    for s in sockets:
        s.close()
    server.stop()


def unfinished():
    server = Server()
    before = server.rss_mib()
    sockets = []
    chunk = b"x" * 65536
    for _ in range(500):
        s = connect(server.port)
        s.setblocking(False)
        sent = 0
        deadline = time.time() + 0.2
        while sent < (1 << 20) and time.time() < deadline:
            try:
                sent += s.send(chunk)
            except BlockingIOError:
                time.sleep(0.005)
            except OSError:
                break
        sockets.append(s)
    time.sleep(1)
    print(f"unfinished: 500 connections each sending up to 1 MiB with no newline: server RSS {before:.0f} -> {server.rss_mib():.0f} MiB")
    for s in sockets:
        s.close()
    server.stop()


def guesses(seconds=30, connections=200):
    import selectors
    server = Server()
    # The owner has logged in before, from her own machine (127.0.0.2).
    login_ping_seconds(server.port, source="127.0.0.2")
    sel = selectors.DefaultSelector()
    answered = 0
    limited = 0

    def open_one():
        s = connect(server.port)
        s.setblocking(False)
        s.send(b"a AUTH alice guess\n")
        sel.register(s, selectors.EVENT_READ, bytearray())

    for _ in range(connections):
        open_one()
    deadline = time.time() + seconds
    while time.time() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s, buffer = key.fileobj, key.data
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                s.close()
                open_one()
                continue
            buffer += data
            while b"\n" in buffer:
                line, _, rest = bytes(buffer).partition(b"\n")
                buffer[:] = rest
                if b"AUTH_FAILED" in line:
                    answered += 1
                    s.send(b"a AUTH alice guess\n")
                elif b"RATE_LIMITED" in line or b"BUSY" in line:
                    limited += 1
                    s.send(b"a AUTH alice guess\n")
    same, same_replies = login_ping_seconds(server.port)
    other, other_replies = login_ping_seconds(server.port, source="127.0.0.2")
    stranger, stranger_replies = login_ping_seconds(server.port, source="127.0.0.3")
    print(f"guesses: {connections} connections guessing for {seconds} s from one address: {answered} guesses checked, "
          f"{limited} refused early; then the owner's login+PING from the attacker's address took {same:.2f} s "
          f"({same_replies[1]}), from her usual address {other:.2f} s ({other_replies[1]}), "
          f"from an address new to the account {stranger:.2f} s ({stranger_replies[1]})")
    server.stop()


def putflood(total_mb=400):
    server = Server()
    s = connect(server.port)
    s.sendall(b"h HELLO 1\na AUTH alice pw\nc CREATE c\n")
    for _ in range(3):
        read_line(s)
    value = "v" * 200_000
    s.setblocking(False)
    peak = 0.0
    sent = 0
    started = time.time()
    index = 0
    pending = b""
    while sent < total_mb << 20 and time.time() - started < 30:
        if not pending:
            pending = f'p PUT c r{index} 0 {{"v":"{value}"}}\n'.encode()
            index += 1
        try:
            n = s.send(pending)
            sent += n
            pending = pending[n:]
        except BlockingIOError:
            time.sleep(0.002)
        if index % 50 == 0:
            peak = max(peak, server.rss_mib())
    elapsed = time.time() - started
    time.sleep(0.5)
    peak = max(peak, server.rss_mib())
    print(f"putflood: {sent / 1e6:.0f} MB of PUTs accepted in {elapsed:.1f} s by a client that never reads; peak server RSS {peak:.0f} MiB")
    s.close()
    server.stop()


scenarios = {"silent": silent, "unfinished": unfinished, "guesses": guesses, "putflood": putflood}
for name in sys.argv[2:] or scenarios:
    scenarios[name]()
