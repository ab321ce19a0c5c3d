#!/usr/bin/env python3
"""deploy/kubernetes parsed (PyYAML) and checked on the fields that decide whether it works:

- every manifest parses, has apiVersion/kind/metadata.name, and lives in namespace fabric-chaos;
  kustomization.yaml lists every manifest but the secrets example;
- the agent DaemonSet: hostNetwork, not privileged, no privilege escalation, capabilities dropped
  to ALL plus exactly the four the injectors use, GPU tolerations, the token from a Secret, TLS
  with client certificates, files named in args mounted from the volumes that hold them;
- serve: a single-replica StatefulSet, non-root, its database on the volume claim, TLS towards
  clients and agents, HTTPS probes on /healthz;
- the Service selects serve's pods and targets a port the container declares;
- every --flag in a container's args is one `fabric-chaos ROLE --help` documents.
"""

import argparse
import os
import re
import subprocess
import sys

import yaml

AGENT_CAPS = {"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "IPC_LOCK"}
NAMESPACE = "fabric-chaos"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)
    return condition


def load(directory):
    docs = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(directory, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.setdefault(name, []).append(doc)
    return docs


def flag_args(container):
    """{flag: value} from args like --flag=value."""
    out = {}
    for arg in container.get("args", []):
        if arg.startswith("--"):
            flag, _, value = arg.partition("=")
            out[flag] = value
    return out


def mounted_file(pod_spec, container, path):
    """Whether `path` lies under a volumeMount whose volume provides that file."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        volume = volumes.get(mount["name"], {})
        if "secret" in volume:
            items = volume["secret"].get("items")
            return items is None or any(item["path"] == rest for item in items)
        return True
    return False


def check_flags(binary, role, container, where):
    help_text = subprocess.run([binary, role, "--help"], capture_output=True, text=True).stdout
    for flag in flag_args(container):
        check(re.search(r"(^|\s)" + re.escape(flag) + r"(\s|$)", help_text),
              "%s passes %s, which `fabric-chaos %s --help` does not know" % (where, flag, role))


def pod_of(workload):
    return workload["spec"]["template"]["spec"]


def check_agent(ds, binary):
    where = "DaemonSet " + ds["metadata"]["name"]
    spec = pod_of(ds)
    check(spec.get("hostNetwork") is True, where + ": hostNetwork must be true")
    check(ds["spec"]["selector"]["matchLabels"].items() <=
          ds["spec"]["template"]["metadata"]["labels"].items(),
          where + ": the selector does not match the pod template's labels")
    tolerated = {t.get("key") for t in spec.get("tolerations", [])}
    check("nvidia.com/gpu" in tolerated, where + ": no toleration for nvidia.com/gpu nodes")
    (container,) = spec["containers"]
    sc = container.get("securityContext", {})
    check(sc.get("privileged") is not True, where + ": must not be privileged")
    check(sc.get("allowPrivilegeEscalation") is False, where + ": allowPrivilegeEscalation")
    caps = sc.get("capabilities", {})
    check(caps.get("drop") == ["ALL"], where + ": capabilities must drop ALL")
    check(set(caps.get("add", [])) == AGENT_CAPS,
          where + ": capabilities add %s, expected %s" % (caps.get("add"), sorted(AGENT_CAPS)))
    check(container["command"][-1] == "agent", where + ": the container does not run `agent`")
    flags = flag_args(container)
    for flag in ("--token-file", "--tls-cert", "--tls-key", "--tls-client-ca"):
        if check(flag in flags, where + ": " + flag + " missing"):
            check(mounted_file(spec, container, flags[flag]),
                  where + ": " + flags[flag] + " (" + flag + ") is not mounted")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    token_mounts = [m for m in container["volumeMounts"]
                    if flags.get("--token-file", "").startswith(m["mountPath"])]
    check(token_mounts and "secret" in volumes[token_mounts[0]["name"]],
          where + ": the token does not come from a Secret")
    listen_port = int(flags.get("--listen", ":0").rsplit(":", 1)[1])
    ports = [p["containerPort"] for p in container.get("ports", [])]
    check(listen_port in ports, where + ": --listen port %d not among %s" % (listen_port, ports))
    check_flags(binary, "agent", container, where)


def check_serve(sts, services, binary):
    where = "StatefulSet " + sts["metadata"]["name"]
    check(sts["spec"].get("replicas") == 1, where + ": SQLite has one writer: replicas must be 1")
    spec = pod_of(sts)
    check(spec.get("securityContext", {}).get("runAsNonRoot") is True,
          where + ": runAsNonRoot")
    (container,) = spec["containers"]
    check(container["command"][-1] == "serve", where + ": the container does not run `serve`")
    flags = flag_args(container)
    db_dir = os.path.dirname(flags.get("--db", ""))
    claims = {c["metadata"]["name"] for c in sts["spec"].get("volumeClaimTemplates", [])}
    db_mounts = [m for m in container["volumeMounts"] if m["mountPath"] == db_dir]
    check(db_mounts and db_mounts[0]["name"] in claims,
          where + ": the database directory %s is not on a volume claim" % db_dir)
    for flag in ("--tls-cert", "--tls-key", "--agent-ca", "--agent-cert", "--agent-key"):
        if check(flag in flags, where + ": " + flag + " missing"):
            check(mounted_file(spec, container, flags[flag]),
                  where + ": " + flags[flag] + " (" + flag + ") is not mounted")
    port_names = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    listen_port = int(flags.get("--listen", ":0").rsplit(":", 1)[1])
    check(listen_port in port_names.values(), where + ": --listen port not declared")
    for probe in ("readinessProbe", "livenessProbe"):
        get = container.get(probe, {}).get("httpGet", {})
        check(get.get("path") == "/healthz" and get.get("scheme") == "HTTPS" and
              get.get("port") in port_names, where + ": " + probe + " is not HTTPS /healthz")
    check(sts["spec"].get("serviceName") in services,
          where + ": serviceName names no Service")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    for name, service in services.items():
        check(service["spec"]["selector"].items() <= labels.items(),
              "Service %s does not select serve's pods" % name)
        for port in service["spec"]["ports"]:
            check(port["targetPort"] in port_names or port["targetPort"] in port_names.values(),
                  "Service %s targets port %s, which serve does not declare" %
                  (name, port["targetPort"]))
    check_flags(binary, "serve", container, where)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    directory = os.path.join(args.source_dir, "deploy/kubernetes")
    docs = load(directory)
    objects = []
    for name, items in docs.items():
        for doc in items:
            if doc.get("kind") == "Kustomization":
                continue
            check(doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"),
                  name + ": apiVersion, kind and metadata.name are required")
            if doc.get("kind") != "Namespace":
                check(doc["metadata"].get("namespace") == NAMESPACE,
                      name + ": not in namespace " + NAMESPACE)
            objects.append((name, doc))
    kustomization = docs.get("kustomization.yaml", [{}])[0]
    listed = set(kustomization.get("resources", []))
    expected = {n for n in docs if n not in ("kustomization.yaml", "secrets.example.yaml")}
    check(listed == expected, "kustomization.yaml lists %s, expected %s" %
          (sorted(listed), sorted(expected)))

    by_kind = {}
    for _, doc in objects:
        by_kind.setdefault(doc["kind"], []).append(doc)
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    check(len(by_kind.get("DaemonSet", [])) == 1, "expected one DaemonSet (the agents)")
    check(len(by_kind.get("StatefulSet", [])) == 1, "expected one StatefulSet (serve)")
    for ds in by_kind.get("DaemonSet", []):
        check_agent(ds, args.binary)
    for sts in by_kind.get("StatefulSet", []):
        check_serve(sts, services, args.binary)
    # Every Secret a pod mounts is the one the example shows or the TLS bundle it documents.
    example = open(os.path.join(directory, "secrets.example.yaml")).read()
    for kind in ("DaemonSet", "StatefulSet"):
        for workload in by_kind.get(kind, []):
            for volume in pod_of(workload).get("volumes", []):
                if "secret" in volume:
                    name = volume["secret"]["secretName"]
                    check(name in example, "secret %s is not explained in secrets.example.yaml" %
                          name)
                    for item in volume["secret"].get("items", []):
                        check(item["key"] in example, "secret key %s of %s is not in the "
                              "example's create command" % (item["key"], name))
    print("%d manifest object(s) checked, %d failure(s)" % (len(objects), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
