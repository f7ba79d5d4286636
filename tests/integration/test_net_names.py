#!/usr/bin/python3
"""Network interfaces whose names hold a series' label separators: Linux
allows ',', '=', '{' and '}' in a name ("x,y=z"; a '%' is taken as the
"%d" of a name to number). A veth pair named "x,y=z" and "br{0}" carries
2000 frames of 1000 bytes, sent from one end through a packet socket,
while strobe records:

- each end is one series of one label, its value escaped
  (iface=x%2Cy%3Dz; common/label.h), no series reads as another label
  (y=z) or a bare "iface=x";
- export's JSON lines give the labels back as the names themselves
  ({"iface": "x,y=z"});
- the bytes are the workload's: 2,000,000 sent on one end and received on
  the other, the interface's own /sys statistics read around the run
  (a few hundred bytes of IPv6 neighbour discovery may join them).
Needs root and veth (skipped, saying so, without them)."""
import json
import os
import socket
import subprocess
import time

from strobetest import PYTHON, STROBE, check, done, show, skip, store_path, strobe

A, B = "x,y=z", "br{0}"
A_LABELS, B_LABELS = "iface=x%2Cy%3Dz", "iface=br%7B0%7D"
FRAMES, SIZE = 2000, 1000

# the job: 2000 Ethernet frames of 1000 bytes out of A (to B, its peer)
SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"\x00" * (%d - 14)
time.sleep(0.3)
for i in range(%d):
    s.send(frame)
    if i %% 100 == 99:
        time.sleep(0.01)
time.sleep(0.3)
""" % (SIZE, FRAMES)


def ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def sys_counter(iface, name):
    with open(f"/sys/class/net/{iface}/statistics/{name}") as f:
        return int(f.read())


if os.geteuid() != 0:
    skip("interfaces named with label separators", "not root: cannot make a veth pair")
    done()
ip("link", "del", A)
made = ip("link", "add", A, "type", "veth", "peer", "name", B)
if made.returncode != 0:
    skip("interfaces named with label separators", "no veth here: " + made.stderr.strip())
    done()
try:
    for name in (A, B):
        try:  # no IPv6 chatter on the pair
            with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:
                f.write("1")
        except OSError:
            pass
        ip("link", "set", name, "up")
    time.sleep(0.2)
    db = store_path("netnames.db")
    tx0, rx0 = sys_counter(A, "tx_bytes"), sys_counter(B, "rx_bytes")
    p = strobe("run", "--quiet", "--no-report", "--name", "veth", "--", PYTHON, "-c", SEND, A, store=db)
    tx1, rx1 = sys_counter(A, "tx_bytes"), sys_counter(B, "rx_bytes")
    check("the job sent its frames", p.returncode == 0, p.stderr)
    sent = FRAMES * SIZE
    check("the interfaces' own counters saw them (the workload, read from /sys)",
          sent <= tx1 - tx0 <= sent + 4096 and sent <= rx1 - rx0 <= sent + 4096, (tx1 - tx0, rx1 - rx0))

    m = show(db, "veth")["metrics"]
    net = sorted(k for k in m if k.startswith("net.tx_bytes_per_s"))
    check("each end is one series of one escaped label",
          f"net.tx_bytes_per_s{{{A_LABELS}}}" in net and f"net.tx_bytes_per_s{{{B_LABELS}}}" in net, net)
    check("no series reads as a label of its name ('y=z', 'iface=x', 'iface=br{0}')",
          not [k for k in m if "y=z" in k or "{iface=x}" in k or "iface=br{0}" in k], net)
    tx = m[f"net.tx_bytes_per_s{{{A_LABELS}}}"]["total"] if f"net.tx_bytes_per_s{{{A_LABELS}}}" in m else None
    rx = m[f"net.rx_bytes_per_s{{{B_LABELS}}}"]["total"] if f"net.rx_bytes_per_s{{{B_LABELS}}}" in m else None
    check("x,y=z sent the workload's bytes, br{0} received them (the /sys counters around the run)",
          tx is not None and rx is not None and abs(tx - (tx1 - tx0)) <= 2048 and abs(rx - (rx1 - rx0)) <= 2048,
          (tx, tx1 - tx0, rx, rx1 - rx0))

    e = strobe("export", "--format", "jsonl", "--metric", "net.tx_bytes_per_s", "veth", store=db)
    labels = {json.dumps(json.loads(l)["labels"], sort_keys=True) for l in e.stdout.splitlines()}
    check("export's JSON lines give the names back as they are",
          e.returncode == 0 and json.dumps({"iface": A}) in labels and json.dumps({"iface": B}) in labels
          and not [x for x in labels if len(json.loads(x)) != 1], labels)
    c = strobe("export", "--format", "csv", "--metric", "net.tx_bytes_per_s", "veth", store=db)
    check("CSV's metric column keeps the escaped key (one field: its ',' never bare)",
          f"net.tx_bytes_per_s{{{A_LABELS}}}" in c.stdout, c.stdout[:300])
finally:
    ip("link", "del", A)
done()
