"""An independent reader of a run's stored framework events: the event
blocks straight from SQLite, decoded here after docs/store-format.md
("Event blocks") with libzstd through ctypes, not with strobe's reader.
Shared by the tests of torch.profiler windows (test_torch_profile.py,
test_ctl.py); test_trace.py reads Perfetto's varints with it."""
import ctypes
import sqlite3

_z = ctypes.CDLL("libzstd.so.1")
_z.ZSTD_decompress.restype = ctypes.c_size_t
_z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
_z.ZSTD_isError.restype = ctypes.c_uint
_z.ZSTD_isError.argtypes = [ctypes.c_size_t]


def varint(b, i):
    """A base-128 varint at b[i]: (its value, the index after it); the store's
    blocks and Perfetto's protobuf write them alike."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def _unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def decode_block(blob):
    """The events of one block: kinds, names, steps, values, ts columns."""
    assert blob[0] == 0xEB and blob[1] == 1, "not an event block"
    n, i = varint(blob, 3)
    raw, i = varint(blob, i)
    body = bytes(blob[i:])
    if blob[2] & 1:
        out = ctypes.create_string_buffer(raw)
        got = _z.ZSTD_decompress(out, raw, body, len(body))
        assert not _z.ZSTD_isError(got) and got == raw, "bad zstd frame"
        body = out.raw
    kinds = list(body[:n])
    i = n
    names, steps, values, ts = [], [], [], []
    for _ in range(n):
        v, i = varint(body, i)
        names.append(v)
    prev = 0
    for _ in range(n):
        v, i = varint(body, i)
        prev = (prev + _unzigzag(v)) & 0xFFFFFFFF
        steps.append(prev)
    for k in kinds:
        if k == 7:  # a counter's double, as it is
            values.append(int.from_bytes(body[i:i + 8], "little", signed=True))
            i += 8
        else:
            v, i = varint(body, i)
            values.append(_unzigzag(v))
    end = 0
    for k, val in zip(kinds, values):
        v, i = varint(body, i)
        t = end + _unzigzag(v)
        ts.append(t)
        end = t + val if k == 4 else t
    return [dict(kind=k, name=nm, step=s, dur=v, ts=t)
            for k, nm, s, v, t in zip(kinds, names, steps, values, ts)]


def stored_events(db, run_id):
    c = sqlite3.connect(db)
    names = dict(c.execute("SELECT id, name FROM event_names WHERE run_id=?", (run_id,)))
    out = []
    for pid, tid, blob in c.execute(
            "SELECT pid, tid, data FROM event_blocks WHERE run_id=?", (run_id,)):
        for e in decode_block(blob):
            e.update(pid=pid, tid=tid, name=names.get(e["name"], ""))
            out.append(e)
    c.close()
    return out


def steps_of(events):
    """step number -> (start, end, pid, tid) of the recorded step spans."""
    return {e["step"]: (e["ts"], e["ts"] + e["dur"], e["pid"], e["tid"])
            for e in events if e["name"] == "step" and e["kind"] == 4}


def outside_own_step(ops, steps):
    """Operators not inside the recorded step they are stamped with."""
    bad = []
    for o in ops:
        s = steps.get(o["step"])
        if s is None or not (s[0] <= o["ts"] and o["ts"] + o["dur"] <= s[1]):
            bad.append(o)
    return bad
