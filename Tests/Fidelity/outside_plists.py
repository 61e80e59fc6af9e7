#!/usr/bin/python3
"""Plist files and verdicts from other projects, for PlistSync's fidelity tests (issue 43).

    outside_plists.py harvest OUT   every plist CPython's test_plistlib feeds plistlib or writes,
                                    the Rust plist crate's test files, biplist's output and
                                    libplist's (plistutil) conversions of them, as OUT/NNNN.plist,
                                    each with OUT/NNNN.expect: plistlib's reading of it
    outside_plists.py read FILE...  plistlib's reading of each FILE, one JSON line each

The data is copied from Debian's packages at test time (libpython3.11-testsuite,
librust-plist-dev, libplist-utils, python3-biplist; Deploy/test.sh installs them), never kept in
the repository. Run with Debian's /usr/bin/python3, whose test package this reads.

A reading is a tagged tree of strings, so nothing is lost on the way to the Swift test:
["s", text], ["i", decimal], ["r", float.hex()], ["b", "true"|"false"],
["d", microseconds since 2001-01-01], ["x", hex bytes], ["a", [items]],
["o", [[key, value], ...]]; a UID reads as ["o", [["CF$UID", ["i", n]]]], as PlistSync spells it.
"""
import datetime
import glob
import io
import json
import os
import plistlib
import subprocess
import sys
import tempfile
import unittest

EPOCH_2001 = datetime.datetime(2001, 1, 1)


class Unsupported(Exception):
    """A value plistlib returns that has no plist type (None, a non-string key)."""


class TooDeep(Exception):
    """A value nested deeper than PlistSync reads (PlistFile.maxDepth), a limit against hostile files."""


MAX_DEPTH = 64


def tagged(value, depth=0, path=()):
    """`value` as a tagged tree; `path` holds the ids of the containers above it."""
    if depth >= MAX_DEPTH:
        raise TooDeep()
    if isinstance(value, (list, tuple, dict)):
        if id(value) in path:
            raise Unsupported("a container that contains itself")
        path = path + (id(value),)
    if isinstance(value, bool):
        return ["b", "true" if value else "false"]
    if isinstance(value, int):
        return ["i", str(value)]
    if isinstance(value, float):
        return ["r", value.hex()]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, (bytes, bytearray)):
        return ["x", bytes(value).hex()]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return ["d", str((value - EPOCH_2001) // datetime.timedelta(microseconds=1))]
    if isinstance(value, (list, tuple)):
        return ["a", [tagged(item, depth + 1, path) for item in value]]
    if isinstance(value, dict):
        members = []
        for key, member in value.items():
            if not isinstance(key, str):
                raise Unsupported("a dictionary key that is not a string")
            members.append([key, tagged(member, depth + 1, path)])
        return ["o", members]
    if isinstance(value, plistlib.UID):
        return ["o", [["CF$UID", ["i", str(value.data)]]]]
    if value is None:
        raise Unsupported("null")
    raise Unsupported(type(value).__name__)


def reading(data):
    """plistlib's verdict on bytes: {"value": tagged}, {"refused": why}, {"unsupported": why}
    (a value with no plist type) or {"deep": why} (deeper than PlistSync reads)."""
    try:
        value = plistlib.loads(data)
    except Exception as error:  # noqa: BLE001 - every refusal is a verdict
        return {"refused": f"{type(error).__name__}: {error}"[:300]}
    try:
        return {"value": tagged(value)}
    except Unsupported as why:
        return {"unsupported": str(why)}
    except (TooDeep, RecursionError):
        return {"deep": f"nested {MAX_DEPTH} or more levels deep"}


def cpython_inputs():
    """Every byte string test_plistlib hands plistlib.loads/load, and every plist it dumps."""
    seen = []
    real = (plistlib.loads, plistlib.load, plistlib.dumps)

    def record(data, fmt):
        detected = plistlib.FMT_BINARY if data.startswith(b"bplist00") else plistlib.FMT_XML
        if fmt in (None, detected):
            seen.append(("cpython-loads", data))

    def load(fp, *args, fmt=None, **kwargs):
        data = fp.read()
        record(data, fmt)
        return real[1](io.BytesIO(data), *args, fmt=fmt, **kwargs)

    def loads(value, *args, fmt=None, **kwargs):
        if isinstance(value, str):
            value = value.encode()
        record(bytes(value), fmt)
        return real[1](io.BytesIO(value), *args, fmt=fmt, **kwargs)

    def dumps(value, *args, **kwargs):
        data = real[2](value, *args, **kwargs)
        seen.append(("cpython-dumps", data))
        return data

    plistlib.loads, plistlib.load, plistlib.dumps = loads, load, dumps
    try:
        from test import test_plistlib
        suite = unittest.defaultTestLoader.loadTestsFromModule(test_plistlib)
        with open(os.devnull, "w") as quiet:
            unittest.TextTestRunner(stream=quiet, verbosity=0).run(suite)
        for data in test_plistlib.TESTDATA.values():
            seen.append(("cpython-testdata", data))
    finally:
        plistlib.loads, plistlib.load, plistlib.dumps = real
    return seen


def rust_inputs():
    return [("rust-plist-" + os.path.basename(path), open(path, "rb").read())
            for path in sorted(glob.glob("/usr/share/cargo/registry/plist-*/tests/data/*.plist"))]


def biplist_inputs(values):
    try:
        import biplist
    except ImportError:
        return []
    out = []
    for value in values:
        try:
            out.append(("biplist", biplist.writePlistToString(value)))
        except Exception:  # noqa: BLE001 - biplist cannot write every value (big integers)
            pass
    return out


def libplist_conversions(inputs):
    """plistutil's rewrite of each readable input, in the other format."""
    out = []
    with tempfile.TemporaryDirectory() as work:
        for number, (_, data) in enumerate(inputs):
            if "value" not in reading(data):
                continue
            source, target = os.path.join(work, f"{number}.in"), os.path.join(work, f"{number}.out")
            with open(source, "wb") as handle:
                handle.write(data)
            form = "xml" if data.startswith(b"bplist00") else "bin"
            done = subprocess.run(["plistutil", "-i", source, "-o", target, "-f", form], capture_output=True)
            if done.returncode == 0 and os.path.exists(target):
                out.append(("libplist-" + form, open(target, "rb").read()))
    return out


def harvest(folder):
    os.makedirs(folder, exist_ok=True)
    inputs = list({data: source for source, data in reversed(cpython_inputs() + rust_inputs())}.items())
    inputs = [(source, data) for data, source in inputs]
    values = []
    for _, data in inputs:
        try:
            values.append(plistlib.loads(data))
        except Exception:  # noqa: BLE001
            pass
    inputs += biplist_inputs(values)
    inputs += libplist_conversions(inputs)
    unique = {}
    for source, data in inputs:
        unique.setdefault(data, source)
    for number, (data, source) in enumerate(unique.items()):
        with open(os.path.join(folder, f"{number:04}.plist"), "wb") as handle:
            handle.write(data)
        with open(os.path.join(folder, f"{number:04}.expect"), "w") as handle:
            json.dump({"source": source, **reading(data)}, handle)
    counts = {}
    for source in unique.values():
        counts[source.split("-")[0]] = counts.get(source.split("-")[0], 0) + 1
    print(json.dumps({"files": len(unique), "by_source": counts}))


def main(argv):
    if len(argv) == 3 and argv[1] == "harvest":
        harvest(argv[2])
    elif len(argv) >= 2 and argv[1] == "read":
        for path in argv[2:]:
            with open(path, "rb") as handle:
                print(json.dumps({"file": path, **reading(handle.read())}))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
