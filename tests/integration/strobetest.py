"""Helpers for strobe's integration tests: run the binary, read results back,
and print one TAP-like line per check ("ok - name" / "not ok - name"), which
tests/run counts."""
import atexit
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

STROBE = os.environ.get("STROBE", "build/strobe")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
TMP = os.environ.get("TEST_TMP") or "/tmp"
failures = 0


def check(name, cond, detail=""):
    """Report one check; detail is printed when it fails (both operands)."""
    global failures
    if cond:
        print(f"ok - {name}", flush=True)
    else:
        failures += 1
        print(f"not ok - {name}" + (f": {detail}" if detail else ""), flush=True)
    return cond


def near(name, got, want, tol, what=""):
    return check(name, got is not None and want is not None and abs(got - want) <= tol,
                 f"got {got}, want {want} ± {tol} {what}")


def skip(name, why):
    print(f"ok - {name} # skip {why}", flush=True)


def done():
    sys.exit(1 if failures else 0)


def store_path(name="t.db"):
    return os.path.join(TMP, name)


def strobe(*args, store=None, timeout=120, input=None, env=None, **kw):
    """Run strobe; returns CompletedProcess with text stdout/stderr."""
    cmd = [STROBE] + list(args)
    if store:
        cmd.insert(2, f"--store={store}")  # after the subcommand
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          input=input, env=env, **kw)


def strobe_naps(*args, store=None, timeout=60):
    """Run strobe under strace; returns (CompletedProcess, its nanosleep
    calls). How long a command waited is counted in naps, not timed: the
    machines that run the tests are shared and noisy."""
    naps = os.path.join(TMP, f"naps-{os.getpid()}.txt")
    cmd = ["strace", "-f", "-qq", "-e", "trace=nanosleep,clock_nanosleep", "-o", naps,
           STROBE] + list(args)
    if store:
        cmd.insert(cmd.index(STROBE) + 2, f"--store={store}")
    # LeakSanitizer cannot run under ptrace: the sanitizer pass leaves it off here
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    with open(naps) as f:
        slept = [line for line in f if "nanosleep(" in line]
    os.unlink(naps)
    return p, slept


def run(store, *cmd, opts=(), **kw):
    """strobe run --quiet [opts] -- cmd..."""
    return strobe("run", "--quiet", *opts, "--", *cmd, store=store, **kw)


def show(store, ref="last"):
    p = strobe("show", "--json", ref, store=store)
    if p.returncode != 0:
        raise RuntimeError(f"strobe show failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def sanitized():
    """Whether the strobe under test is a sanitizer build (it links
    libasan or libtsan). Its memory says nothing of strobe's: ASan keeps
    freed blocks in quarantine, up to 256 MB, and maps shadow memory, so
    peak-RSS checks are skipped there."""
    p = subprocess.run(["ldd", STROBE], capture_output=True, text=True)
    return re.search(r"lib(?:asan|tsan)", p.stdout) is not None


def shown_finding_ranges(store, ref="last"):
    """Each finding of show's text as "Rule RANGE", sorted: its lines read
    "  high   InputBound [scope] 0.0-1.6 s" (or 0:45-2:10 past a minute)."""
    said = strobe("show", ref, store=store).stdout
    return sorted(m.group(1) + " " + m.group(2) for m in
                  re.finditer(r"^  \S+\s+(\S+) \[.*\] (\S+-\S+(?: s)?)$", said, re.M))


def points(store, metric, ref="last"):
    """{series_key: [(time_s, value), ...]} for series matching metric (a glob)."""
    p = strobe("export", "--format", "jsonl", "--metric", metric, ref, store=store)
    if p.returncode != 0:
        raise RuntimeError(f"strobe export failed: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        labels = ",".join(f"{k}={v}" for k, v in r["labels"].items())
        key = r["metric"] + (f"{{{labels}}}" if labels else "")
        out.setdefault(key, []).append((r["time_ns"] / 1e9, r["value"]))
    return out


def integral(series, interval_s=0.1):
    """Sum of value x time since the previous point: a rate's total. The first
    point covers one interval (since the run's baseline frame)."""
    return sum(v * (t - series[i - 1][0] if i else interval_s) for i, (t, v) in enumerate(series))


def mean_over(series, a, b):
    """Time-weighted mean over [a, b] of a rate series whose points each
    cover the time since the one before (strobe's, or psutil.cpu_percent's
    readings taken in a loop): two readings of the same thing over the same
    span agree however the load varies within it, where means or medians of
    differently spaced points do not. None when the series does not cover
    the span."""
    total = 0.0
    for (t0, _), (t1, v) in zip(series, series[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            total += v * (hi - lo)
    if len(series) < 2 or series[0][0] > a or series[-1][0] < b:
        return None
    return total / (b - a)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def wait_for(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


# ---- the test NVML (tests/nvml) -------------------------------------------------
FAKE_NVML = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "tests", "libnvidia-ml-fake.so")
GiB = 1 << 30


def work_dir(tag):
    """A folder of this test's own under TMP."""
    d = os.path.join(TMP, f"strobe-{tag}-{os.getpid()}")
    os.makedirs(d, exist_ok=True)
    return d


def fake_gpu_env(folder, scenario):
    """The environment of a job whose GPUs are the test NVML playing
    scenario (tests/nvml/README.md), written to folder/gpu.scenario."""
    path = os.path.join(folder, "gpu.scenario")
    with open(path, "w") as f:
        f.write(scenario)
    return dict(os.environ, STROBE_NVML_LIB=FAKE_NVML, STROBE_FAKE_NVML=path)


# ---- the example workloads (examples/*.py) -----------------------------------
EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))


def example_env():
    """The environment for an example under strobe run: none of the test
    runner's own strobe, DDP or OpenMP settings leak into it."""
    env = dict(os.environ)
    for k in ("STROBE_SHM", "STROBE_FRAMEWORK", "STROBE_DDP_HOOK", "RANK", "WORLD_SIZE", "LOCAL_RANK",
              "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        env.pop(k, None)
    return env


def ddp_rank_clocks(stdout):
    """{rank: (forward ms/step, cpu ms/step)} as each rank of
    examples/ddp_straggler.py timed itself (its closing line)."""
    return {int(m[1]): (float(m[2]), float(m[3])) for m in
            re.finditer(r"rank (\d+), loss \S+, forward ([\d.]+) ms/step, cpu ([\d.]+) ms/step", stdout)}


# ---- PostgreSQL (tests/tools/pgserver) -----------------------------------------
PGSERVER = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                                        "pgserver"))
# a URI no server answers: a strobe without the backend refuses it unopened
PG_NOWHERE = "postgresql://strobe@127.0.0.1:1/none?connect_timeout=2"


def pg_missing():
    """Why the PostgreSQL tests cannot run here, or None: PostgreSQL is not
    installed, or the strobe under test refuses postgresql:// ("not built")."""
    p = subprocess.run([PGSERVER, "bindir"], capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr.strip().removeprefix("skip: ")
    q = strobe("ls", store=PG_NOWHERE)
    if "not built" in q.stderr:
        return "this strobe has no PostgreSQL backend: " + q.stderr.strip()
    return None


class PgURI(str):
    """A server's URI, with the server's folder (dir) for pg_control."""


@contextlib.contextmanager
def pg_server():
    """A PostgreSQL server of this test's own; yields its URI (a PgURI),
    which holds the role strobe's password. It is stopped on the way out,
    at exit, on SIGTERM (tests/run's timeout), and by pgserver's watcher
    when this process dies any other way."""
    d = tempfile.mkdtemp(prefix="pg-", dir=TMP)

    def stop():
        subprocess.run([PGSERVER, "stop", d], capture_output=True)

    atexit.register(stop)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))
    p = subprocess.run([PGSERVER, "start", d, "--watch", str(os.getpid())], capture_output=True,
                       text=True, timeout=180)
    if p.returncode != 0:
        stop()
        raise RuntimeError(f"pgserver start exited with {p.returncode}: {p.stderr.strip()}")
    uri = PgURI(p.stdout.strip())
    uri.dir = d
    try:
        yield uri
    finally:
        stop()


def pg_control(uri, what):
    """pgserver down, up, freeze or thaw on pg_server()'s server at uri:
    gone (connections cut, new ones refused), back with its data, hung (it
    accepts connections but answers nothing), answering again."""
    p = subprocess.run([PGSERVER, what, uri.dir], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"pgserver {what} exited with {p.returncode}: {p.stderr.strip()}")


def psql(uri, sql):
    """Run sql on the database at uri with PostgreSQL's psql; its output,
    unaligned and without headers. Raises on an error."""
    bindir = subprocess.run([PGSERVER, "bindir"], capture_output=True, text=True).stdout.strip()
    p = subprocess.run([os.path.join(bindir, "psql"), "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", uri,
                        "-c", sql], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"psql: {sql}: {p.stderr.strip()}")
    return p.stdout


# ---- Prometheus and the OpenMetrics exposition ---------------------------------
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
OPENMETRICS_ACCEPT = "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"


def free_port():
    """A TCP port that no socket holds now, on any address: a port free on
    127.0.0.1 alone may be another address' in TIME_WAIT, which a bind to
    0.0.0.0 then fails on (EADDRINUSE)."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def http_get(url, headers=None, timeout=10):
    """(status, {header: value} lower-cased, body text) of a GET; status 0
    with the error as body when nothing answers."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode("utf-8", "replace")
    except OSError as e:
        return 0, {}, str(e)


def scrape(base, openmetrics=False, token=None):
    """GET base + /metrics as Prometheus would (openmetrics) or as a plain
    client; (status, headers, body)."""
    h = {"Accept": OPENMETRICS_ACCEPT} if openmetrics else {}
    if token:
        h["Authorization"] = f"Bearer {token}"
    return http_get(base.rstrip("/") + "/metrics", h)


def promtool_check(text):
    """(ok, what promtool said) of `promtool check metrics` on text (stdin).
    Lint problems (a counter without _total, say) fail it, as errors do."""
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=60)
    return p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        (p.stdout + p.stderr).strip()


def openmetrics_parse(text):
    """The families of text, parsed by prometheus_client's strict
    OpenMetrics parser (it refuses what the standard does: a missing # EOF,
    bad escapes, a counter sample without _total, ...). Raises ValueError."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    return list(text_string_to_metric_families(text))


def prom_samples(text):
    """[(name, {label: value}, value)] of an exposition in either format,
    read by prometheus_client's text parser (the 0.0.4 one reads both)."""
    from prometheus_client.parser import text_string_to_metric_families
    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text)
            for s in f.samples]


class Prometheus:
    """A Prometheus server of the test's own (Debian's /usr/bin/prometheus)
    on 127.0.0.1 with a free port and a temporary TSDB, scraping its
    targets every second: targets ["host:port", ...] as scrape job "strobe",
    with `authorization: {credentials: token}` when token is given; or jobs
    {job: (targets, token or None)}. Use as a context manager: ready on
    entry, stopped on exit (SIGTERM; its exit status kept in .rc). It gets
    SIGTERM too when the test dies (PR_SET_PDEATHSIG)."""

    def __init__(self, targets=(), token=None, jobs=None):
        self.dir = tempfile.mkdtemp(prefix="prom-", dir=TMP)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.rc = None
        scrapes = []
        for job, (where, tok) in (jobs or {"strobe": (targets, token)}).items():
            cfg = {"job_name": job, "scrape_interval": "1s", "scrape_timeout": "1s",
                   "static_configs": [{"targets": list(where)}]}
            if tok:
                cfg["authorization"] = {"credentials": tok}
            scrapes.append(cfg)
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:  # JSON is YAML
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                       "scrape_configs": scrapes}, f)

    def __enter__(self):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.p = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.config}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir,
            preexec_fn=lambda: libc.prctl(1, signal.SIGTERM))  # PR_SET_PDEATHSIG
        atexit.register(self._kill)
        if not wait_for(lambda: self.p.poll() is not None or
                        http_get(self.base + "/-/ready", timeout=2)[0] == 200, timeout=60, step=0.2):
            self._kill()
            raise RuntimeError("prometheus not ready in 60 s: " + self.output()[-2000:])
        if self.p.poll() is not None:
            raise RuntimeError(f"prometheus exited with {self.p.returncode}: " + self.output()[-2000:])
        return self

    def __exit__(self, *exc):
        self.stop()

    def _kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stop(self):
        """SIGTERM, and its exit status (0: a clean stop)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._kill()
        self.rc = self.p.returncode
        return self.rc

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def api(self, path, **params):
        """The data of a /api/v1 answer; raises with Prometheus' error."""
        status, _, body = http_get(self.base + "/api/v1/" + path + "?" + urllib.parse.urlencode(params),
                                   timeout=30)
        try:
            r = json.loads(body)
        except ValueError:
            raise RuntimeError(f"prometheus {path}: HTTP {status}: {body[:300]}")
        if r.get("status") != "success":
            raise RuntimeError(f"prometheus {path}: {r.get('errorType')}: {r.get('error')}")
        return r["data"]

    def query(self, promql, at=None):
        """[(labels, value)] of an instant query (a vector; a scalar is one
        row with no labels), evaluated now or at unix time at."""
        d = self.api("query", query=promql, **({"time": f"{at:.3f}"} if at else {}))
        if d["resultType"] == "vector":
            return [(x["metric"], float(x["value"][1])) for x in d["result"]]
        if d["resultType"] == "scalar":
            return [({}, float(d["result"][1]))]
        raise RuntimeError(f"{promql}: a {d['resultType']}, not a vector")

    def range(self, promql, at=None):
        """The values of a range selector's one series ("m[20s]"),
        oldest first; [] when it matches no series. Raises when it
        matches several."""
        d = self.api("query", query=promql, **({"time": f"{at:.3f}"} if at else {}))
        if d["resultType"] != "matrix" or len(d["result"]) > 1:
            raise RuntimeError(f"{promql}: not one series: {d}")
        return [float(v) for _, v in d["result"][0]["values"]] if d["result"] else []

    def targets(self):
        """[(scrapeUrl, health, lastError)] of the active targets."""
        return [(t["scrapeUrl"], t["health"], t["lastError"]) for t in self.api("targets")["activeTargets"]]

    def wait_up(self, timeout=60):
        """Whether every target has been scraped and is up."""
        def up():
            t = self.targets()
            return bool(t) and all(h == "up" for _, h, _ in t)
        return wait_for(up, timeout=timeout, step=0.5)

    def wait_query(self, promql, pred=bool, timeout=60):
        """The first answer of promql that pred accepts, polled each 0.5 s;
        the last answer when none did in timeout seconds."""
        got = []

        def ok():
            got[:] = [self.query(promql)]
            return pred(got[0])
        wait_for(ok, timeout=timeout, step=0.5)
        return got[0] if got else []
