#!/usr/bin/env python3
"""What the real clickhouse-server writes to preprocessed_configs for a config tree.

Usage: engine-preprocess.py TREE OUT [--timeout SECONDS]
       engine-preprocess.py --all CASES_DIR   (every CASES_DIR/*/tree -> CASES_DIR/*/expected)
       engine-preprocess.py --batch CASES_DIR (the same, in one namespace and one Python: the
           engine's library is loaded once and forked per tree, each on fresh tmpfs mounts;
           about 10 trees a second instead of one; CASES_DIR/*/env is each tree's environment;
           a users file named otherwise, accounts.xml say, is written as OUT/users.xml)
       engine-preprocess.py TREE OUT --install-at SERVER_DIR
           TREE's files are put at SERVER_DIR (an absolute path: /etc/clickhouse-server) inside
           the namespace and the server runs on SERVER_DIR/config.xml, as installed: the
           absolute paths the tree names (include_from, users_config) are read there. The
           machine's SERVER_DIR is not touched: a tmpfs covers its parent inside the namespace,
           holding links to what the parent holds (/etc/hosts, ...) and the tree's copy.
       engine-preprocess.py --start TREE [--timeout SECONDS] [--then COMMAND]
           does the server start on TREE? One JSON line on stdout:
           {"started": bool, "exit_status": int|null, "errors": [first <Error> lines]}
           With --then, once the server is up, COMMAND runs (bash -c, in the namespace, with
           CHAUDIT_ENGINE_URL=http://HOST:PORT/ of the server's HTTP port) before it is
           stopped; the verdict adds "then_status" (COMMAND's exit status; null when the
           server did not start or has no HTTP port).

TREE holds config.xml (and config.d/, users.xml, users.d/, ...); an optional TREE/../env
file (KEY=VALUE lines) is the only environment the engine sees. OUT receives config.xml and
users.xml as the engine preprocessed them, and `log` (the engine's stderr, for a tree it
refuses). The engine is clickhouse-server 25.8.2.1 from PyPI chdb==3.7.2 (its shared
library exports the server's entry point); tests/clickhouse/ensure-engine.sh installs it.

It runs in its own user, network and mount namespace (unshare -rnm): tmpfs over /var/lib and
/var/log keeps the stock paths private and writable, and the network is loopback only. A tree
whose data, tmp, user files, access or disk paths lie elsewhere (/data/..., /jbod1/) is not
run: the server would write there, on the machine itself. The
server writes preprocessed_configs/config.xml right after the merge, and users.xml when it
first loads users; both come before anything a test tree lacks (Keeper, S3) can fail, so
the server is stopped as soon as they are there (or it has exited).
"""
import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(os.environ.get("CHAUDIT_CLICKHOUSE_DIR") or os.path.join(ROOT, "target/clickhouse"),
                    "venv-chdb--3.7.2")
ENTRY = "_Z25mainEntryClickHouseServeriPPc"
STOCK_HTTP_PORT = 8123
QUIET_LEVELS = re.compile(r"<(Trace|Debug|Information|Warning)>")


def library():
    found = glob.glob(os.path.join(VENV, "lib/python3*/site-packages/chdb/_chdb.abi3.so"))
    if not found:
        sys.exit(f"engine not installed: run tests/clickhouse/ensure-engine.sh chdb==3.7.2 ({VENV})")
    return found[0]


def read_env(path):
    env = {}
    if os.path.isfile(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                env[k.strip()] = v.strip()
    return env


def server(main, extra=()):
    """Inside the namespace, as a child process: run clickhouse-server on MAIN (cwd = its tree)."""
    lib = ctypes.CDLL(library(), mode=os.RTLD_NOW | 0x8)  # RTLD_DEEPBIND, as chdb does
    entry = getattr(lib, ENTRY)
    entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    entry.restype = ctypes.c_int
    argv = [b"clickhouse-server", f"--config-file={main}".encode()] + [a.encode() for a in extra]
    rc = entry(len(argv), (ctypes.c_char_p * (len(argv) + 1))(*argv, None))
    os._exit(rc if 0 <= rc < 256 else 1)


def preprocessed_dirs(tree):
    """Where the server may write: ./preprocessed_configs or <path>/preprocessed_configs."""
    dirs = [os.path.join(tree, "preprocessed_configs")]
    for base in ("/var/lib", "/tmp/engine-path"):
        for d in glob.glob(os.path.join(base, "**/preprocessed_configs"), recursive=True):
            dirs.append(d)
    return dirs


def ready(work, child, since):
    """Whether the server is up: it said "Ready for connections" (console or log file), or a
    port of its preprocessed config accepts connections and it is still alive 2 s later (a
    failing second bind, "Address already in use", comes after the first port opened)."""
    for log in [os.path.join(work, "server.out")] + glob.glob("/var/log/**/*.log", recursive=True):
        try:
            if "Ready for connections" in open(log, errors="replace").read():
                return True
        except OSError:
            pass
    ports = [STOCK_HTTP_PORT] if not opens_a_port(work) else []
    for d in preprocessed_dirs(work):
        p = os.path.join(d, "config.xml")
        if os.path.isfile(p):
            text = open(p, errors="replace").read()
            ports += re.findall(r"<(?:http_port|tcp_port|https_port|tcp_port_secure)>\s*(\d+)\s*<", text)
    for port in ports:
        for host in ("127.0.0.1", "::1"):  # a tree may listen on IPv6 loopback only
            try:
                socket.create_connection((host, int(port)), timeout=0.2).close()
            except OSError:
                continue
            return time.time() - since > 2 and child.poll() is None
    return False


def opens_a_port(tree):
    """Whether any file of the tree names a port the server listens on."""
    for root, _, files in os.walk(tree):
        for f in files:
            try:
                if re.search(r"<(?:http_port|tcp_port|https_port|tcp_port_secure)[\s/>]", open(os.path.join(root, f), errors="replace").read()):
                    return True
            except OSError:
                pass
    return False


# The size the private tmpfs mounts report: a server's data disk, not this machine's memory
# (a filesystem cache's max_size is checked against the capacity of the disk holding it; a
# tmpfs takes memory only for what is written).
PRIVATE_SIZE = "4T"


def mount_private(d):
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={PRIVATE_SIZE}", "tmpfs", d], check=True)


# Where the server may write: private tmpfs mounts of the namespace (and the tree's copy).
PRIVATE_DIRS = ("/var/lib/", "/var/log/", "/tmp/")


def writes_outside(tree):
    """Absolute directories the tree has the server write to (data, tmp, user files, access
    storage, disks) outside the private directories: the namespace does not cover them."""
    found = []
    for root, _, files in os.walk(tree):
        for f in files:
            if not f.endswith(".xml"):
                continue
            try:
                top = ET.parse(os.path.join(root, f)).getroot()
            except (ET.ParseError, OSError):
                continue
            places = [top.find(t) for t in ("path", "tmp_path", "user_files_path", "access_control_path",
                                             "user_scripts_path", "user_defined_path")]
            places += top.findall("storage_configuration/disks/*/path")
            places += top.findall("storage_configuration/disks/*/metadata_path")
            places += top.findall("user_directories/local_directory/path")
            for e in places:
                value = (e.text or "").strip() if e is not None else ""
                if value.startswith("/") and not value.startswith(PRIVATE_DIRS):
                    found.append(value)
    return sorted(set(found))


def refuse_outside(tree):
    """The tree is not run when it would write outside the private directories."""
    outside = writes_outside(tree)
    if outside:
        print(f"harness: not run, the tree writes outside {', '.join(PRIVATE_DIRS)}: {', '.join(outside)}",
              file=sys.stderr)
    return outside


def http_url(work):
    """The URL of the running server's HTTP port (its preprocessed config's, else the stock
    port the harness gave it), on the loopback address that answers; None without one."""
    ports = [] if opens_a_port(work) else [STOCK_HTTP_PORT]
    for d in preprocessed_dirs(work):
        p = os.path.join(d, "config.xml")
        if os.path.isfile(p):
            ports += re.findall(r"<http_port>\s*(\d+)\s*<", open(p, errors="replace").read())
    for port in ports:
        for host, shown in (("127.0.0.1", "127.0.0.1"), ("::1", "[::1]")):
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
            except OSError:
                continue
            return f"http://{shown}:{port}/"
    return None


def start(tree, timeout, env_file, then=None):
    """In the namespace: run the server on TREE until it is ready or exits, run THEN against
    it when given; print the verdict."""
    outside = writes_outside(tree)
    if outside:
        print(json.dumps({"started": False, "exit_status": None,
                          "errors": [f"harness: not run, the tree writes outside the private directories: {', '.join(outside)}"]}))
        return
    for d in ("/var/lib", "/var/log"):
        mount_private(d)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False, stderr=subprocess.DEVNULL)
    for d in ("/var/lib/clickhouse", "/var/log/clickhouse-server"):  # as the package installs them
        os.makedirs(d)
    work = tempfile.mkdtemp(prefix="tree-", dir="/var/lib")
    shutil.copytree(tree, work, dirs_exist_ok=True)
    main = os.path.join(work, "config.xml")
    if not os.path.isfile(main):
        main = next((os.path.join(work, f) for f in ("config.yaml", "config.yml")
                     if os.path.isfile(os.path.join(work, f))), main)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLICKHOUSE_WATCHDOG_ENABLE": "0"}
    env.update(read_env(env_file))
    out = open(os.path.join(work, "server.out"), "w")
    # the error log where the harness reads why it stopped (a tree without <logger> logs
    # nothing it keeps); the tree's own logger settings stay as they are
    serve = [sys.executable, __file__, "--serve", main, "--serve-arg=--errorlog-file=/var/log/harness.err.log"]
    if not opens_a_port(work):
        # a rule fixture is a fragment of a real config, and a real config listens: without a
        # port the server stops with NO_ELEMENTS_IN_CONFIG, so give it the stock HTTP port
        # (a command-line override: the tree's files stay as written)
        serve += [f"--serve-override=http_port={STOCK_HTTP_PORT}"]
    child = subprocess.Popen(serve, cwd=work, env=env,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    since = time.time()
    end = since + timeout
    started = False
    while time.time() < end and child.poll() is None:
        if ready(work, child, since):
            started = True
            break
        time.sleep(0.1)
    then_status = None
    if started and then:
        url = None
        for _ in range(50):  # a port may open a moment after the server says it is ready
            url = http_url(work)
            if url or child.poll() is not None:
                break
            time.sleep(0.2)
        if url:
            then_status = subprocess.run(["bash", "-c", then], env=dict(os.environ, CHAUDIT_ENGINE_URL=url),
                                         stdout=sys.stderr).returncode
    status = child.poll()
    if status is None:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    errors = []
    for log in [os.path.join(work, "server.out")] + sorted(glob.glob("/var/log/**/*.log", recursive=True)):
        try:
            errors += [l.strip() for l in open(log, errors="replace")
                       if not QUIET_LEVELS.search(l) and ("<Error>" in l or "<Fatal>" in l or "Code: " in l)]
        except OSError:
            pass
    seen = []
    for e in errors:
        if e not in seen:
            seen.append(e)
    if not seen and not started:  # no error line: the last words it printed say why
        seen = [l.strip() for l in open(os.path.join(work, "server.out"), errors="replace") if l.strip()][-5:]
    verdict = {"started": started, "exit_status": status, "errors": seen[:5]}
    if then:
        verdict["then_status"] = then_status
    print(json.dumps(verdict))


def install(tree, server_dir):
    """In the namespace, after /var/lib is private: TREE's files at SERVER_DIR. A tmpfs goes
    over SERVER_DIR's parent (inside the namespace only), holding a link to each entry the
    parent had (kept reachable through a bind mount under /var/lib/.host, which the recursive
    globs of preprocessed_dirs skip) and the tree's copy."""
    server_dir = os.path.normpath(server_dir)
    parent = os.path.dirname(server_dir)
    if not os.path.isabs(server_dir) or parent == server_dir or not os.path.isdir(parent):
        sys.exit(f"--install-at {server_dir}: an absolute path whose parent directory exists")
    keep = os.path.join("/var/lib/.host", parent.strip("/").replace("/", "-") or "root")
    os.makedirs(keep)
    subprocess.run(["mount", "--rbind", parent, keep], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", parent], check=True)
    for name in os.listdir(keep):
        if os.path.join(parent, name) != server_dir:
            os.symlink(os.path.join(keep, name), os.path.join(parent, name))
    shutil.copytree(tree, server_dir)  # links (the shared mains) as files
    return server_dir


def inside(tree, out, timeout, env_file, install_at=None):
    """In the namespace: private /var/lib and /var/log, loopback up, one server run."""
    if refuse_outside(tree):
        return
    for d in ("/var/lib", "/var/log"):
        mount_private(d)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False, stderr=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="tree-", dir="/var/lib")
    if install_at:
        main = main_file(install(tree, install_at))  # the server's working directory stays `work`
    else:
        shutil.copytree(tree, work, dirs_exist_ok=True)  # links (the shared mains) as files
        main = main_file(work)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLICKHOUSE_WATCHDOG_ENABLE": "0"}
    env.update(read_env(env_file))
    log = open(os.path.join(out, "log"), "w")
    child = subprocess.Popen([sys.executable, __file__, "--serve", main], cwd=work, env=env,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    wanted = ("config.xml", "users.xml")
    end = time.time() + timeout
    found = {}
    while time.time() < end:
        for d in preprocessed_dirs(work):
            for name in wanted:
                p = os.path.join(d, name)
                if name not in found and os.path.isfile(p) and os.path.getsize(p) > 0:
                    found[name] = p
        if len(found) == len(wanted) or child.poll() is not None:
            break
        time.sleep(0.05)
    time.sleep(0.2)  # a file just created may still be being written
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
    rc = child.wait()
    log.write(f"\nengine exit status: {rc}\n")
    for d in preprocessed_dirs(work):
        for name in wanted:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                found[name] = p
    for name, p in found.items():
        shutil.copyfile(p, os.path.join(out, name))
    # why a file is missing: the server's own error log (the first errors, without traces)
    err = "/var/log/clickhouse-server/clickhouse-server.err.log"
    if os.path.isfile(err):
        errors = [l for l in open(err, errors="replace") if "<Error>" in l][:3]
        log.write("".join(errors))
    print(f"{tree}: {', '.join(sorted(found)) or 'nothing'} written", file=sys.stderr)


def main_file(work):
    """The tree's main config: config.xml, else config.yaml or config.yml."""
    for f in ("config.xml", "config.yaml", "config.yml"):
        if os.path.isfile(os.path.join(work, f)):
            return os.path.join(work, f)
    return os.path.join(work, "config.xml")


def complete(path):
    """Whether a preprocessed file the server is writing is all there (it parses)."""
    try:
        ET.parse(path)
        return True
    except (ET.ParseError, OSError):
        return False


def batch_inside(cases, timeout):
    """In the namespace: every CASES/*/tree, one after the other. The engine's library is
    loaded here once; each tree runs in a forked child (its own session, environment and
    working directory) on fresh tmpfs mounts over /var/lib and /var/log, as inside() does."""
    lib = ctypes.CDLL(library(), mode=os.RTLD_NOW | 0x8)  # RTLD_DEEPBIND, as chdb does
    entry = getattr(lib, ENTRY)
    entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    entry.restype = ctypes.c_int
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False, stderr=subprocess.DEVNULL)
    os.chdir("/")
    for tree in sorted(glob.glob(os.path.join(cases, "*/tree"))):
        case = os.path.dirname(tree)
        out = os.path.join(case, "expected")
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(out)
        log = open(os.path.join(out, "log"), "w")
        outside = writes_outside(tree)
        if outside:
            log.write(f"harness: not run, the tree writes outside {', '.join(PRIVATE_DIRS)}: {', '.join(outside)}\n")
            continue
        for d in ("/var/lib", "/var/log"):
            subprocess.run(["umount", "-l", d], check=False, stderr=subprocess.DEVNULL)
            mount_private(d)
        work = tempfile.mkdtemp(prefix="tree-", dir="/var/lib")
        shutil.copytree(tree, work, dirs_exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLICKHOUSE_WATCHDOG_ENABLE": "0"}
        env.update(read_env(os.path.join(case, "env")))
        argv = [b"clickhouse-server", f"--config-file={main_file(work)}".encode()]
        log.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.chdir(work)
                os.dup2(log.fileno(), 1)
                os.dup2(log.fileno(), 2)
                for sig in (signal.SIGPIPE, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                os.environ.clear()
                os.environ.update(env)
                rc = entry(len(argv), (ctypes.c_char_p * (len(argv) + 1))(*argv, None))
                os._exit(rc if 0 <= rc < 256 else 1)
            finally:
                os._exit(1)
        # the users file is preprocessed under its own name (users_config: accounts.xml, say);
        # a config without <path> is preprocessed beside itself, as NAME-preprocessed.xml
        wanted = ("config.xml", "users.xml")

        def written():
            for d in preprocessed_dirs(work):
                for p in glob.glob(os.path.join(d, "*.xml")):
                    yield "config.xml" if os.path.basename(p) == "config.xml" else "users.xml", p
            for p in glob.glob(os.path.join(work, "*-preprocessed.xml")):
                yield "config.xml" if os.path.basename(p) == "config-preprocessed.xml" else "users.xml", p

        end = time.time() + timeout
        found, status = {}, None
        while time.time() < end:
            for name, p in written():
                if name not in found and complete(p):
                    found[name] = p
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                break
            if len(found) == len(wanted):
                break
            time.sleep(0.02)
        if status is None:
            os.killpg(pid, signal.SIGKILL)
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        log.write(f"\nengine exit status: {status}\n")
        for name, p in written():
            found[name] = p
        for name, p in found.items():
            shutil.copyfile(p, os.path.join(out, name))
        err = "/var/log/clickhouse-server/clickhouse-server.err.log"
        if os.path.isfile(err):
            log.write("".join([l for l in open(err, errors="replace") if "<Error>" in l][:3]))
        log.close()


def run(tree, out, timeout, install_at=None):
    """From outside: re-run this script in a new user, network and mount namespace."""
    tree, out = os.path.abspath(tree), os.path.abspath(out)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    env_file = os.path.join(os.path.dirname(tree), "env")
    installed = ["--install-at", install_at] if install_at else []
    subprocess.run(["unshare", "-rnm", sys.executable, __file__, "--inside", tree, out,
                    "--timeout", str(timeout), "--env-file", env_file] + installed, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--all", metavar="CASES_DIR")
    ap.add_argument("--batch", metavar="CASES_DIR")
    ap.add_argument("--batch-inside", metavar="CASES_DIR", help=argparse.SUPPRESS)
    ap.add_argument("--start", metavar="TREE", help="does the server start on TREE (JSON verdict)")
    ap.add_argument("--start-inside", metavar="TREE", help=argparse.SUPPRESS)
    ap.add_argument("--install-at", metavar="SERVER_DIR",
                    help="with TREE OUT: run the tree installed at SERVER_DIR (inside the namespace)")
    ap.add_argument("--then", metavar="COMMAND", help="with --start: run COMMAND against the started server")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--serve-arg", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--serve-override", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--env-file", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        overrides = ["--"] + [f"--{o}" for o in args.serve_override] if args.serve_override else []
        server(args.serve, args.serve_arg + overrides)
    elif args.start_inside:
        start(args.start_inside, args.timeout, args.env_file, args.then)
    elif args.start:
        tree = os.path.abspath(args.start)
        env_file = os.path.join(os.path.dirname(tree), "env")
        then = ["--then", args.then] if args.then else []
        sys.exit(subprocess.run(["unshare", "-rnm", sys.executable, __file__, "--start-inside", tree,
                                 "--timeout", str(args.timeout), "--env-file", env_file] + then).returncode)
    elif args.batch_inside:
        batch_inside(args.batch_inside, args.timeout)
    elif args.batch:
        sys.exit(subprocess.run(["unshare", "-rnm", sys.executable, __file__, "--batch-inside",
                                 os.path.abspath(args.batch), "--timeout", str(args.timeout)]).returncode)
    elif args.inside:
        inside(args.tree, args.out, args.timeout, args.env_file, args.install_at)
    elif args.all:
        for case in sorted(glob.glob(os.path.join(args.all, "*/tree"))):
            run(case, os.path.join(os.path.dirname(case), "expected"), args.timeout)
    elif args.tree and args.out:
        run(args.tree, args.out, args.timeout, args.install_at)
    else:
        ap.error("TREE and OUT, or --all CASES_DIR")


if __name__ == "__main__":
    main()
