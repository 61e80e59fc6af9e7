#!/usr/bin/env python3
"""Issue 29's figures: the HTTP front under attack and at scale, for several `plistsync`
binaries side by side in one run (the main before a change and after it).

    python3 Benchmarks/http_front.py BIN [BIN ...] [--records N] [--only close,streams,...]

Scenarios, each against a fresh server per binary on 127.0.0.1 (every load bounded in count
and time):
  close        a client that half-closes before its answer (a bearer token, then FIN): is the
               server still serving 3 s later (it aborted after its 2 s close grace)?
  streams      200 event streams of one user that never read, fed by 1,000 PUTs of 10 KiB:
               server RSS growth and a logged-in PING's p99 meanwhile (budget 256 MiB).
  subscribers  the same with 200 line-protocol subscribers that never read.
  logins       500 connections that never log in, each sending 960 KiB of a login body.
  pages        a collection of --records records (default 1,000,000): one page of 100 at its
               end by offset and (where the binary has it) by after; then 4 clients paging
               through it for 20 s while a PING's p99 is measured.
"""
import http.client, os, random, shutil, socket, statistics, subprocess, sys, tempfile, threading, time, urllib.parse, json

ARGS = [a for a in sys.argv[1:]]
RECORDS = 1_000_000
ONLY = None
BINS = []
i = 0
while i < len(ARGS):
    if ARGS[i] == "--records":
        RECORDS = int(ARGS[i + 1]); i += 2
    elif ARGS[i] == "--only":
        ONLY = ARGS[i + 1].split(","); i += 2
    else:
        BINS.append(os.path.abspath(ARGS[i])); i += 1
if not BINS:
    sys.exit(__doc__)


class Server:
    """A `plistsync serve` with the HTTP API, on a data folder of its own (or a copy of one)."""

    def __init__(self, binary, data=None, *extra):
        self.dir = tempfile.mkdtemp(prefix="plistsync-httpfront-")
        self.data = os.path.join(self.dir, "data")
        if data:
            shutil.copytree(data, self.data)
        else:
            subprocess.run([binary, "user", "add", "alice", "--password-stdin", "--iterations", "1000", "--data", self.data],
                           input=b"pw\n", check=True, capture_output=True)
        port_file = os.path.join(self.dir, "port")
        self.log = open(os.path.join(self.dir, "log"), "w")
        # BENCH_WRAP runs the server under a profiler: BENCH_WRAP="perf record -g -o /tmp/p.data --".
        wrap = os.environ.get("BENCH_WRAP", "").split()
        self.proc = subprocess.Popen(wrap + [binary, "serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data", self.data,
                                      "--port-file", port_file, *extra], stdout=self.log, stderr=self.log)
        for _ in range(6000 if wrap else 1000):
            if os.path.exists(port_file + ".http") and open(port_file + ".http").read().strip():
                break
            time.sleep(0.01)
        self.port = int(open(port_file).read())
        self.http = int(open(port_file + ".http").read())

    def pid(self):
        if not os.environ.get("BENCH_WRAP"):
            return self.proc.pid
        children = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
        return int(children[0]) if children else self.proc.pid

    def status(self, field):
        for line in open(f"/proc/{self.pid()}/status"):
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        return 0.0

    def rss(self):
        return self.status("VmRSS:")

    def peak(self):
        return self.status("VmHWM:")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            if os.environ.get("BENCH_WRAP"):
                os.kill(self.pid(), 15)
            else:
                self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Line:
    """A logged-in line-protocol client."""

    def __init__(self, port, rcvbuf=None):
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def ask(self, request):
        self.sock.sendall((request + "\n").encode())
        return self.line()

    @staticmethod
    def login(port, rcvbuf=None):
        client = Line(port, rcvbuf)
        assert client.ask("a AUTH alice pw") == "a OK AUTH alice"
        return client


class Pinger(threading.Thread):
    """PINGs every 10 ms on its own logged-in connection; RTTs in ms."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.client = Line.login(port)
        self.rtts = []
        self.failed = None
        self.stopping = False

    def run(self):
        try:
            while not self.stopping:
                start = time.perf_counter()
                assert self.client.ask("p PING") == "p OK PONG"
                self.rtts.append((time.perf_counter() - start) * 1000)
                time.sleep(0.01)
        except Exception as error:  # the server closed it, or died
            self.failed = repr(error)

    def finish(self):
        self.stopping = True
        self.join(10)
        if not self.rtts:
            return "no PING answered"
        ordered = sorted(self.rtts)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return f"PING p99 {p99:.1f} ms, max {ordered[-1]:.1f} ms over {len(ordered)}" + (f" (then {self.failed})" if self.failed else "")


def token(port):
    return Line.login(port).ask("t TOKEN NEW bench").split()[-1]


def close_early(binary):
    server = Server(binary)
    try:
        s = socket.create_connection(("127.0.0.1", server.http))
        s.sendall(b"GET /api/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer pst_x\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        answer = s.recv(64).split(b"\r\n")[0].decode()
        time.sleep(3.5)
        return f"answered '{answer}'; 3.5 s later the server is {'up' if server.alive() else 'DEAD (exit ' + str(server.proc.returncode) + ')'}"
    finally:
        server.stop()


def flood(binary, kind):
    """Never-reading subscribers (event streams or line) fed by 1,000 PUTs of 10 KiB."""
    server = Server(binary)
    try:
        writer = Line.login(server.port)
        assert writer.ask("c CREATE c") == "c OK CREATE c"
        bearer = token(server.port)
        hoarders = []
        for _ in range(200):
            if kind == "streams":
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", server.http))
                s.sendall(f"GET /api/collections/c/events HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {bearer}\r\n\r\n".encode())
                hoarders.append(s)
            else:
                sub = Line.login(server.port, rcvbuf=4096)
                assert sub.ask("s SUB c SINCE 0") == "s OK SUB c 0"
                hoarders.append(sub)
        time.sleep(0.5)
        base = server.rss()
        pinger = Pinger(server.port)
        pinger.start()
        payload = '{"v":"' + "x" * 10240 + '"}'
        start = time.perf_counter()
        window = 16
        sent = answered = 0
        revs = {}
        while answered < 1000:
            while sent < 1000 and sent - answered < window:
                rid = f"r{sent % 50}"
                writer.sock.sendall(f"p PUT c {rid} {revs.get(rid, 0)} {payload}\n".encode())
                revs[rid] = revs.get(rid, 0) + 1
                sent += 1
            reply = writer.line()
            if reply.startswith("p OK") or reply.startswith("p ERR"):
                answered += 1
        seconds = time.perf_counter() - start
        time.sleep(1)
        ping = pinger.finish()
        alive_writer = writer.ask("w PING") == "w OK PONG"
        return (f"RSS {base:.0f} -> peak {server.peak():.0f} MiB (+{server.peak() - base:.0f}); 1,000 PUTs in {seconds:.1f} s; {ping}; "
                f"writer {'kept' if alive_writer else 'SHED'}")
    except Exception as error:
        return f"failed: {error!r}"
    finally:
        server.stop()


def logins(binary):
    server = Server(binary)
    try:
        base = server.rss()
        pinger = Pinger(server.port)
        pinger.start()
        body = b"x" * (960 * 1024)
        held = []
        for _ in range(500):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", server.http))
            except BlockingIOError:
                pass
            held.append(s)
        head = b"POST /api/login HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
        deadline = time.time() + 20
        pending = {s: head + body for s in held}
        while pending and time.time() < deadline:
            for s in list(pending):
                try:
                    n = s.send(pending[s])
                    pending[s] = pending[s][n:]
                    if not pending[s]:
                        del pending[s]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:  # refused and closed by the server
                    del pending[s]
            time.sleep(0.01)
        time.sleep(1)
        ping = pinger.finish()
        return f"RSS {base:.0f} -> peak {server.peak():.0f} MiB (+{server.peak() - base:.0f}); {ping}"
    finally:
        server.stop()


def populate(binary, count):
    """A data folder holding collection `big` with `count` records (made once, then copied)."""
    cache = os.path.join(tempfile.gettempdir(), f"plistsync-httpfront-{count}")
    if os.path.exists(os.path.join(cache, "done")):
        return os.path.join(cache, "data")
    shutil.rmtree(cache, ignore_errors=True)
    server = Server(binary)
    try:
        client = Line.login(server.port)
        assert client.ask("c CREATE big") == "c OK CREATE big"
        start = time.perf_counter()
        batch = 2000
        for first in range(0, count, batch):
            lines = "".join(f'p PUT big r{n:07d} 0 {{"name":"Record {n}","serial":"SN-{n}","value":{n}}}\n' for n in range(first, min(count, first + batch)))
            client.sock.sendall(lines.encode())
            for _ in range(min(count, first + batch) - first):
                reply = client.line()
                assert reply.startswith("p OK"), reply
        print(f"  populated {count:,} records in {time.perf_counter() - start:.0f} s", flush=True)
        server.proc.terminate()
        server.proc.wait()
        os.makedirs(cache)
        shutil.copytree(server.data, os.path.join(cache, "data"))
        open(os.path.join(cache, "done"), "w").close()
        return os.path.join(cache, "data")
    finally:
        server.stop()


def get(conn, path, bearer):
    conn.request("GET", path, headers={"Authorization": f"Bearer {bearer}"})
    response = conn.getresponse()
    return response.status, response.read()


def pages(binary, data, count):
    server = Server(binary, data)
    try:
        bearer = token(server.port)
        conn = http.client.HTTPConnection("127.0.0.1", server.http, timeout=120)
        _, record = get(conn, f"/api/collections/big/records/r{count - 101:07d}", bearer)
        position = json.loads(record)["position"]
        results = []
        for name, path in [("offset", f"/api/collections/big/records?offset={count - 100}&limit=100"),
                           ("after", f"/api/collections/big/records?limit=100&after=" + urllib.parse.quote(f"{position}.r{count - 101:07d}"))]:
            times = []
            status = None
            for _ in range(5 if name == "offset" else 50):
                start = time.perf_counter()
                status, body = get(conn, path, bearer)
                times.append((time.perf_counter() - start) * 1000)
            page = json.loads(body) if status == 200 else {}
            # A server without keyset pages ignores `after` (and has no `next`): not this page.
            good = len(page.get("records", [])) == 100 and (name == "offset" or "next" in page)
            results.append(f"last page by {name}: " + (f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms" if good else "not served"))
        after_works = not results[1].endswith("not served")
        base = server.rss()
        pinger = Pinger(server.port)
        pinger.start()
        done = [0] * 4
        stop = time.time() + 20

        def walk(index):
            client = http.client.HTTPConnection("127.0.0.1", server.http, timeout=120)
            cursor = None
            offset = random.randrange(0, count // 2) // 100 * 100 if not after_works else 0
            while time.time() < stop:
                if after_works:
                    path = "/api/collections/big/records?limit=100" + ("&after=" + urllib.parse.quote(cursor) if cursor else "")
                else:
                    path = f"/api/collections/big/records?offset={offset}&limit=100"
                status, body = get(client, path, bearer)
                if status != 200:
                    return
                page = json.loads(body)
                done[index] += 1
                if after_works:
                    cursor = page.get("next")
                    if cursor is None:
                        return
                else:
                    offset += 100

        walkers = [threading.Thread(target=walk, args=(n,)) for n in range(4)]
        for walker in walkers:
            walker.start()
        for walker in walkers:
            walker.join()
        ping = pinger.finish()
        results.append(f"4 clients paging 20 s ({'after' if after_works else 'offset'}): {sum(done):,} pages of 100; {ping}; "
                       f"RSS {base:.0f} -> peak {server.peak():.0f} MiB")
        return "; ".join(results)
    finally:
        server.stop()


def main():
    scenarios = ONLY or ["close", "streams", "subscribers", "logins", "pages"]
    for scenario in scenarios:
        print(f"== {scenario}", flush=True)
        data = populate(BINS[-1], RECORDS) if scenario == "pages" else None
        for binary in BINS:
            label = os.path.relpath(binary)
            if scenario == "close":
                figure = close_early(binary)
            elif scenario in ("streams", "subscribers"):
                figure = flood(binary, scenario)
            elif scenario == "logins":
                figure = logins(binary)
            else:
                figure = pages(binary, data, RECORDS)
            print(f"  {label}: {figure}", flush=True)


main()
