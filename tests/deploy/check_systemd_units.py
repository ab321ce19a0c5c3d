#!/usr/bin/env python3
"""The systemd units of deploy/systemd, checked by systemd's own tools and by running them.

verify (any user):
  - `systemd-analyze verify` accepts each unit without a word (ExecStart pointed at the built
    binary, since verify checks that the program exists);
  - every --flag on an ExecStart line is one the subcommand's --help documents;
  - the agent's capability bounding set is exactly the four its injectors use, serve has none;
  - `systemd-analyze security --offline` exposure, printed, within a bound.
run (root; a namespace and veth pair of its own, fcdep-*):
  - the agent's ExecStart, under setpriv with the unit's capability bounding set and
    no_new_privs, serves HTTPS with client certificates (curl), and with only those capabilities
    takes a veth down in a namespace and puts a drop rule there (seen by ip and nft), then
    reverts both; /proc shows the bounding set it ran with;
  - serve's ExecStart, as nobody with no capabilities, answers /healthz over HTTPS (curl).
Certificates come from the openssl tool.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

AGENT_CAPS = {"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_SYS_ADMIN", "CAP_IPC_LOCK"}
# systemd-analyze security's 0-10 exposure: what these units reach today, with a little slack so
# that a systemd update re-weighting one setting does not fail the suite.
EXPOSURE_BOUND = {"fabric-chaos-agent.service": 5.5, "fabric-chaos-serve.service": 2.5}
INSTALLED_BINARY = "/usr/local/bin/fabric-chaos"
NETNS = "fcdep-t"

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, flush=True)


def read_unit(path):
    """{section: [(key, value)]}, continuation lines joined, comments dropped."""
    sections, current, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if pending:
                line = pending + " " + line.strip()
                pending = ""
            if line.endswith("\\"):
                pending = line[:-1].rstrip()
                continue
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                current = stripped[1:-1]
                sections.setdefault(current, [])
                continue
            key, _, value = stripped.partition("=")
            sections[current].append((key.strip(), value.strip()))
    return sections


def values(unit, section, key):
    return [v for k, v in unit.get(section, []) if k == key]


def exec_start(unit):
    lines = values(unit, "Service", "ExecStart")
    if len(lines) != 1:
        raise ValueError("expected one ExecStart, got %d" % len(lines))
    return shlex.split(lines[0])


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def verify(source_dir, binary, tmp):
    units = sorted(f for f in os.listdir(os.path.join(source_dir, "deploy/systemd"))
                   if f.endswith(".service"))
    if units != sorted(EXPOSURE_BOUND):
        fail("deploy/systemd holds %s, expected %s" % (units, sorted(EXPOSURE_BOUND)))
    for name in units:
        source = os.path.join(source_dir, "deploy/systemd", name)
        with open(source) as f:
            text = f.read()
        copy = os.path.join(tmp, name)
        with open(copy, "w") as f:
            f.write(text.replace(INSTALLED_BINARY, binary))
        out = run(["systemd-analyze", "verify", copy])
        said = (out.stdout + out.stderr).strip()
        if out.returncode != 0 or said:
            fail("systemd-analyze verify %s (exit %d): %s" % (name, out.returncode, said))
        else:
            print("ok: systemd-analyze verify %s: nothing to say" % name)

        unit = read_unit(source)
        argv = exec_start(unit)
        if argv[0] != INSTALLED_BINARY:
            fail("%s runs %s, not %s" % (name, argv[0], INSTALLED_BINARY))
        role = argv[1]
        help_text = run([binary, role, "--help"]).stdout
        for arg in argv[2:]:
            if arg.startswith("--"):
                flag = arg.split("=")[0]
                if not re.search(r"(^|\s)" + re.escape(flag) + r"(\s|$)", help_text):
                    fail("%s passes %s, which `fabric-chaos %s --help` does not know" %
                         (name, flag, role))
        caps = set(" ".join(values(unit, "Service", "CapabilityBoundingSet")).split())
        expected = AGENT_CAPS if role == "agent" else set()
        if caps != expected:
            fail("%s: CapabilityBoundingSet %s, expected %s" % (name, sorted(caps),
                                                                sorted(expected)))
        if values(unit, "Service", "NoNewPrivileges") != ["yes"]:
            fail("%s: NoNewPrivileges=yes missing" % name)

        out = run(["systemd-analyze", "security", "--offline=true", copy])
        match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", out.stdout + out.stderr)
        if not match:
            fail("%s: no exposure level in systemd-analyze security's output" % name)
            continue
        exposure = float(match.group(1))
        print("%s: systemd-analyze security exposure %.1f (bound %.1f)" %
              (name, exposure, EXPOSURE_BOUND.get(name, 0)))
        if exposure > EXPOSURE_BOUND.get(name, 0):
            fail("%s: exposure %.1f above %.1f" % (name, exposure, EXPOSURE_BOUND[name]))


def make_certificates(tmp):
    script = r"""set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
key ca.key; openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=fc-deploy-ca
leaf() {
  key "$1.key"; openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf '%s\n' "$2" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
    -days 2 -extfile "$1.ext"
}
leaf agent 'subjectAltName=IP:127.0.0.1'
leaf serve 'subjectAltName=IP:127.0.0.1'
leaf controller 'extendedKeyUsage=clientAuth'
"""
    out = run(["bash", "-c", script], cwd=tmp)
    if out.returncode != 0:
        raise RuntimeError("openssl: " + out.stdout + out.stderr)


def start(argv, prefix, log_path):
    log = open(log_path, "w")
    return subprocess.Popen(prefix + argv, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_for(pattern, log_path, proc, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(log_path) as f:
            match = re.search(pattern, f.read())
        if match:
            return match
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    with open(log_path) as f:
        raise RuntimeError("no %r in %s: %s" % (pattern, log_path, f.read()[-2000:]))


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def substitute(argv, replacements):
    out = []
    for arg in argv:
        for old, new in replacements.items():
            arg = arg.replace(old, new)
        out.append(arg)
    return out


def curl(args):
    out = run(["curl", "-sS", "--max-time", "10"] + args)
    return out.returncode, out.stdout + out.stderr


def link_up(ifname):
    out = run(["ip", "-n", NETNS, "-o", "link", "show", "dev", ifname])
    return re.search(r"<[^>]*\bUP\b", out.stdout) is not None


def run_units(source_dir, binary, tmp):
    make_certificates(tmp)
    token = os.path.join(tmp, "agent.token")
    with open(token, "w") as f:
        f.write("deploy-check-token-0123456789abcdef\n")
    os.chmod(token, 0o600)

    run(["ip", "netns", "del", NETNS])
    for cmd in (["ip", "netns", "add", NETNS],
                ["ip", "-n", NETNS, "link", "add", "fcdep0", "type", "veth", "peer", "fcdep1"],
                ["ip", "-n", NETNS, "link", "set", "fcdep0", "up"],
                ["ip", "-n", NETNS, "link", "set", "fcdep1", "up"]):
        out = run(cmd)
        if out.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(cmd), out.stderr))
    try:
        check_agent(source_dir, binary, tmp, token)
    finally:
        run(["ip", "netns", "del", NETNS])
    check_serve(source_dir, binary, tmp)


def check_agent(source_dir, binary, tmp, token):
    unit = read_unit(os.path.join(source_dir, "deploy/systemd/fabric-chaos-agent.service"))
    caps = " ".join(values(unit, "Service", "CapabilityBoundingSet")).split()
    bounding = "-all," + ",".join("+" + c[len("CAP_"):].lower() for c in caps)
    argv = substitute(exec_start(unit), {
        INSTALLED_BINARY: binary,
        "0.0.0.0:7100": "127.0.0.1:0",
        "/etc/fabric-chaos/agent.token": token,
        "/etc/fabric-chaos/tls": tmp,
        "/run/fabric-chaos-agent": os.path.join(tmp, "agent-state"),
    }) + ["--allow", NETNS + "/fcdep0", "--mgmt-if", "lo"]
    prefix = ["setpriv", "--bounding-set=" + bounding, "--inh-caps=-all", "--no-new-privs", "--"]
    log = os.path.join(tmp, "agent.log")
    agent = start(argv, prefix, log)
    try:
        port = wait_for(r"agent listening on 127\.0\.0\.1:(\d+)", log, agent).group(1)
        with open("/proc/%d/status" % agent.pid) as f:
            cap_bnd = int(re.search(r"CapBnd:\s*([0-9a-f]+)", f.read()).group(1), 16)
        names = {"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_SYS_ADMIN": 21}
        expected = sum(1 << names[c] for c in caps)
        if cap_bnd != expected:
            fail("the agent ran with CapBnd %x, the unit says %x" % (cap_bnd, expected))
        base = "https://127.0.0.1:%s/agent/v1" % port
        tls = ["--cacert", os.path.join(tmp, "ca.crt"), "--cert",
               os.path.join(tmp, "controller.crt"), "--key", os.path.join(tmp, "controller.key"),
               "-H", "Authorization: Bearer deploy-check-token-0123456789abcdef",
               "-H", "Content-Type: application/json"]
        code, out = curl(["--cacert", os.path.join(tmp, "ca.crt"), base + "/info"])
        if code == 0:
            fail("the agent answered a client without a certificate: " + out)
        target = {"type": "interface", "netns": NETNS, "ifname": "fcdep0"}
        applied = []
        for fault, check in (
                ({"kind": "link_flap", "target": target, "params": {"down_ms": 60000}},
                 lambda: not link_up("fcdep0")),
                ({"kind": "packet_loss", "target": target,
                  "params": {"percent": 50, "backend": "nftables"}},
                 lambda: "numgen" in run(["ip", "netns", "exec", NETNS, "nft", "list",
                                          "ruleset"]).stdout)):
            code, out = curl(tls + ["-X", "POST", "--data",
                                    json.dumps({"fault": fault, "lease_ms": 30000}),
                                    base + "/faults"])
            try:
                answer = json.loads(out)
            except ValueError:
                answer = {}
            if code != 0 or "id" not in answer:
                fail("%s through the agent's unit (curl %d): %s" % (fault["kind"], code, out))
                continue
            applied.append(answer["id"])
            if not check():
                fail("%s answered %s but ip/nft do not see it" % (fault["kind"], out))
            else:
                print("ok: %s applied by the agent with only %s (seen by ip/nft)" %
                      (fault["kind"], " ".join(caps)))
        for fault_id in reversed(applied):
            code, out = curl(tls + ["-X", "DELETE", base + "/faults/" + fault_id])
            if code != 0 or '"reverted":true' not in out.replace(" ", ""):
                fail("revert of %s: %s" % (fault_id, out))
        if not link_up("fcdep0"):
            fail("fcdep0 still down after the revert")
        if "numgen" in run(["ip", "netns", "exec", NETNS, "nft", "list", "ruleset"]).stdout:
            fail("the drop rule is still there after the revert")
    finally:
        code = stop(agent)
        if code != 0:
            with open(log) as f:
                fail("the agent exited %d on SIGTERM: %s" % (code, f.read()[-2000:]))


def check_serve(source_dir, binary, tmp):
    unit = read_unit(os.path.join(source_dir, "deploy/systemd/fabric-chaos-serve.service"))
    state = os.path.join(tmp, "serve-state")
    credentials = os.path.join(tmp, "credentials")
    os.makedirs(credentials)
    for key, value in (v.split(":", 1) for v in values(unit, "Service", "LoadCredential")):
        local = os.path.join(tmp, os.path.basename(value))
        shutil.copy(local, os.path.join(credentials, key))
    for d in (state, os.path.join(tmp, "serve-run")):
        os.makedirs(d)
    subprocess.run(["chown", "-R", "nobody:nogroup", state, credentials,
                    os.path.join(tmp, "serve-run")], check=True)
    os.chmod(tmp, 0o755)
    argv = substitute(exec_start(unit), {
        INSTALLED_BINARY: binary,
        "0.0.0.0:8443": "127.0.0.1:0",
        "${CREDENTIALS_DIRECTORY}": credentials,
        "/var/lib/fabric-chaos": state,
        "/run/fabric-chaos": os.path.join(tmp, "serve-run"),
        "/usr/local/share/fabric-chaos/web": os.path.join(source_dir, "web/dist"),
    })
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
              "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
    log = os.path.join(tmp, "serve.log")
    serve = start(argv, prefix, log)
    try:
        port = wait_for(r"serving on https://127\.0\.0\.1:(\d+)", log, serve).group(1)
        code, out = curl(["--cacert", os.path.join(tmp, "ca.crt"),
                          "https://127.0.0.1:%s/healthz" % port])
        if code != 0:
            fail("serve's unit, as nobody: /healthz over HTTPS failed: " + out)
        else:
            print("ok: serve's unit as nobody without capabilities answers /healthz: " +
                  out.strip()[:120])
    finally:
        code = stop(serve)
        if code != 0:
            with open(log) as f:
                fail("serve exited %d on SIGTERM: %s" % (code, f.read()[-2000:]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["verify", "run"])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="fc-units-")
    try:
        if args.mode == "verify":
            verify(args.source_dir, os.path.abspath(args.binary), tmp)
        else:
            if os.geteuid() != 0:
                fail("running the units needs root")
            else:
                run_units(args.source_dir, os.path.abspath(args.binary), tmp)
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        fail("%s: %s" % (type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
