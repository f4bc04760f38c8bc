"""Our own rules for the deployment files, beyond what the schemas check.

Run by scripts/validate-deploy.sh (which renders the kustomizations first):

    validate_deploy.py BINARY RENDERED.yaml...   # k8s renders, then docker-compose.yml

It checks what the schemas cannot: that the split deployment is wired together (every
URL names a Service or compose service that runs that component, Secrets and ConfigMaps
exist, probes hit /healthz), locked down, and scalable; and it runs
`switchboard serve --check` (or the worker's argument parser) with the exact command
line and environment of every container, so the configuration each one would start with
is the one our loader accepts. It then re-runs the rules on deliberately broken copies
and fails unless each of those is caught, so a rule that stopped biting is noticed.
"""

import base64
import copy
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPOSE = os.path.join(ROOT, "docker-compose.yml")
COMPOSE_SERVICES = ["registry", "tasks", "fanout", "dispatcher", "gateway", "worker"]
STATEFUL = {"tasks", "fanout", "dispatcher", "registry"}
URL_VARS = {
    "SWITCHBOARD_TASKS_URL": "tasks",
    "SWITCHBOARD_FANOUT_URL": "fanout",
    "SWITCHBOARD_REGISTRY_URL": "registry",
}
# Compose services allowed to turn the health check off, each for a reason given in
# docker-compose.yml: the worker has no port, the collector's image has no shell.
NO_HEALTHCHECK = {"worker", "otel-collector"}
# Secrets the base leaves to the operator (the Redis URL of production's own Redis).
OPERATOR_SECRETS = {"switchboard-redis"}
PLACEHOLDER_SECRET = "redis://:placeholder@redis.invalid:6379/0"


class Failures:
    def __init__(self):
        self.items = []

    def __call__(self, where, message):
        self.items.append(f"{where}: {message}")


# --- Kubernetes -----------------------------------------------------------------------


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def env_value(entry):
    return entry.get("value")


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def switchboard_role(container):
    """("serve", services) or ("worker", None) for switchboard containers, else None."""
    image = container.get("image", "")
    if not image.split("/")[-1].startswith("switchboard"):
        return None
    args = container.get("args") or container.get("command") or ["serve"]
    if args[0] == "worker":
        return ("worker", None)
    services = env_of(container).get("SWITCHBOARD_SERVICES")
    value = env_value(services) if services else None
    return ("serve", value.split(",") if value else [])


def check_k8s(name, docs, fail):
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    workloads = {**by_kind.get("Deployment", {}), **by_kind.get("StatefulSet", {})}
    services = by_kind.get("Service", {})
    secrets = by_kind.get("Secret", {})
    configmaps = by_kind.get("ConfigMap", {})
    hpas = by_kind.get("HorizontalPodAutoscaler", {})
    pdbs = by_kind.get("PodDisruptionBudget", {})
    roles_seen = [switchboard_role(c) for w in workloads.values() for c in pod_spec(w)["containers"]]
    split = any(r and (r[0] == "worker" or r[1]) for r in roles_seen)

    # Which component(s) the pods behind each label set run.
    runs = []  # (pod labels, set of services, workload)
    for wname, w in workloads.items():
        labels = w["spec"]["template"]["metadata"].get("labels", {})
        roles = set()
        for c in pod_spec(w)["containers"]:
            role = switchboard_role(c)
            if role and role[0] == "serve":
                roles |= set(role[1]) if role[1] else {"gateway", "tasks", "fanout", "dispatcher", "registry"}
        runs.append((labels, roles, w))

    for wname, w in workloads.items():
        where = f"{name}: {w['kind']}/{wname}"
        spec = pod_spec(w)
        psc = spec.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True:
            fail(where, "pod securityContext.runAsNonRoot must be true")
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            fail(where, "pod securityContext.seccompProfile.type must be RuntimeDefault")
        if spec.get("automountServiceAccountToken") is not False:
            fail(where, "automountServiceAccountToken must be false (nothing here calls the API)")
        if spec.get("enableServiceLinks") is not False:
            fail(where, "enableServiceLinks must be false (service links would inject SWITCHBOARD_* variables)")
        selector = w["spec"]["selector"]["matchLabels"]
        if not matches(selector, w["spec"]["template"]["metadata"].get("labels", {})):
            fail(where, "selector does not match the pod template's labels")
        for vol in spec.get("volumes", []):
            cm = vol.get("configMap", {}).get("name")
            if cm and cm not in configmaps:
                fail(where, f"volume {vol['name']} names ConfigMap {cm}, which is not in the render")
        for c in spec["containers"]:
            cwhere = f"{where} container {c['name']}"
            sc = c.get("securityContext", {})
            if sc.get("allowPrivilegeEscalation") is not False:
                fail(cwhere, "allowPrivilegeEscalation must be false")
            if sc.get("readOnlyRootFilesystem") is not True:
                fail(cwhere, "readOnlyRootFilesystem must be true")
            if "ALL" not in sc.get("capabilities", {}).get("drop", []):
                fail(cwhere, "capabilities.drop must contain ALL")
            res = c.get("resources", {})
            for part in ("requests", "limits"):
                for key in ("cpu", "memory"):
                    if key not in res.get(part, {}):
                        fail(cwhere, f"resources.{part}.{key} missing")
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret = secrets.get(ref["name"])
                    if secret is None and ref["name"] not in OPERATOR_SECRETS:
                        fail(cwhere, f"env {env['name']} reads Secret {ref['name']}, which nothing provides")
                    if secret is not None and ref["key"] not in {**secret.get("data", {}), **secret.get("stringData", {})}:
                        fail(cwhere, f"env {env['name']} reads key {ref['key']} missing from Secret {ref['name']}")
            role = switchboard_role(c)
            if role is None:
                continue
            kind, svc_list = role
            env = env_of(c)
            component = w["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
            ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
            if kind == "worker":
                if ports:
                    fail(cwhere, "a worker listens on nothing: no ports")
                if "SWITCHBOARD_TASKS_URL" not in env and "--tasks-url" not in c.get("args", []):
                    fail(cwhere, "a worker needs SWITCHBOARD_TASKS_URL")
                continue
            if ports.get("http") != 8080:
                fail(cwhere, "needs the container port `http` = 8080")
            for probe in ("readinessProbe", "livenessProbe"):
                get = c.get(probe, {}).get("httpGet", {})
                if get.get("path") != "/healthz" or get.get("port") not in ("http", 8080):
                    fail(cwhere, f"{probe} must be httpGet /healthz on port http")
            if svc_list:
                if component not in svc_list:
                    fail(cwhere, f"component label {component!r} but SWITCHBOARD_SERVICES={','.join(svc_list)}")
                backend = env.get("SWITCHBOARD_BACKEND")
                if set(svc_list) & STATEFUL:
                    if not backend or "secretKeyRef" not in backend.get("valueFrom", {}):
                        fail(cwhere, "tasks/fanout/dispatcher/registry need SWITCHBOARD_BACKEND from a Secret (secretKeyRef)")
                elif backend:
                    fail(cwhere, "the gateway needs no Redis: drop SWITCHBOARD_BACKEND")
        # Every URL a component is given names a Service in front of pods running that service.
        for c in spec["containers"]:
            for var, wanted in URL_VARS.items():
                entry = env_of(c).get(var)
                if not entry:
                    continue
                for url in env_value(entry).split(","):
                    m = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", url.strip())
                    if not m:
                        fail(where, f"{var}={url!r} is not http://SERVICE:PORT")
                        continue
                    svc = services.get(m.group(1))
                    if svc is None:
                        fail(where, f"{var} names Service {m.group(1)}, which is not in the render")
                        continue
                    if int(m.group(2)) not in [p["port"] for p in svc["spec"]["ports"]]:
                        fail(where, f"{var}: Service {m.group(1)} has no port {m.group(2)}")
                    backends = [roles for labels, roles, _ in runs if matches(svc["spec"].get("selector"), labels)]
                    if not any(wanted in roles for roles in backends):
                        fail(where, f"{var}: Service {m.group(1)} selects no pod running {wanted}")

    for sname, svc in services.items():
        where = f"{name}: Service/{sname}"
        targets = [w for labels, _, w in runs if matches(svc["spec"].get("selector"), labels)]
        if not targets:
            fail(where, "its selector matches no workload's pods")
        if svc["spec"].get("clusterIP") == "None" and any(roles for labels, roles, _ in runs if matches(svc["spec"].get("selector"), labels)):
            fail(where, "headless: gRPC clients would still use one pod each (see k8s/base/tasks.yaml)")
        for port in svc["spec"]["ports"]:
            tp = port.get("targetPort", port["port"])
            for w in targets:
                names = {p.get("name") for c in pod_spec(w)["containers"] for p in c.get("ports", [])}
                nums = {p["containerPort"] for c in pod_spec(w)["containers"] for p in c.get("ports", [])}
                if tp not in names and tp not in nums:
                    fail(where, f"targetPort {tp} is no port of {w['metadata']['name']}")

    for hname, hpa in hpas.items():
        where = f"{name}: HorizontalPodAutoscaler/{hname}"
        target = hpa["spec"]["scaleTargetRef"]
        if target["name"] not in workloads or workloads[target["name"]]["kind"] != target["kind"]:
            fail(where, f"scaleTargetRef {target['kind']}/{target['name']} is not in the render")
        if hpa["spec"].get("minReplicas", 1) > hpa["spec"]["maxReplicas"]:
            fail(where, "minReplicas > maxReplicas")
        if not any(m.get("resource", {}).get("name") == "cpu" for m in hpa["spec"].get("metrics", [])):
            fail(where, "expected a CPU metric")
    for pname, pdb in pdbs.items():
        if not any(matches(pdb["spec"]["selector"]["matchLabels"], labels) for labels, _, _ in runs):
            fail(f"{name}: PodDisruptionBudget/{pname}", "selector matches no workload's pods")
    if split:
        for wname, w in by_kind.get("Deployment", {}).items():
            component = w["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
            has_pdb = any(matches(p["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]["labels"]) for p in pdbs.values())
            if not has_pdb:
                fail(f"{name}: Deployment/{wname}", "no PodDisruptionBudget")
            has_hpa = any(h["spec"]["scaleTargetRef"]["name"] == wname for h in hpas.values())
            if component == "dispatcher":
                if w["spec"].get("replicas", 1) != 1 or has_hpa:
                    fail(f"{name}: Deployment/{wname}", "the dispatcher runs one replica, without an HPA (k8s/base/dispatcher.yaml)")
            elif not has_hpa:
                fail(f"{name}: Deployment/{wname}", "no HorizontalPodAutoscaler")


def k8s_checks_of_config(name, docs, binary, fail):
    """`serve --check` (or the worker's parser) per switchboard container, as it would start."""
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    secrets = by_kind.get("Secret", {})
    configmaps = by_kind.get("ConfigMap", {})
    workloads = {**by_kind.get("Deployment", {}), **by_kind.get("StatefulSet", {})}
    for wname, w in workloads.items():
        spec = pod_spec(w)
        for c in spec["containers"]:
            if switchboard_role(c) is None:
                continue
            where = f"{name}: {w['kind']}/{wname} container {c['name']}"
            with tempfile.TemporaryDirectory() as tmp:
                mounts = {}
                volumes = {v["name"]: v for v in spec.get("volumes", [])}
                for mount in c.get("volumeMounts", []):
                    cm = volumes.get(mount["name"], {}).get("configMap", {}).get("name")
                    if cm in configmaps:
                        local = os.path.join(tmp, mount["name"])
                        os.makedirs(local)
                        for key, text in configmaps[cm].get("data", {}).items():
                            with open(os.path.join(local, key), "w") as f:
                                f.write(text)
                        mounts[mount["mountPath"].rstrip("/")] = local

                def local_path(value):
                    for path, local in mounts.items():
                        if value == path or value.startswith(path + "/"):
                            return local + value[len(path):]
                    return value

                env = {}
                for entry in c.get("env", []):
                    ref = entry.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        secret = secrets.get(ref["name"], {})
                        if ref["key"] in secret.get("stringData", {}):
                            value = secret["stringData"][ref["key"]]
                        elif ref["key"] in secret.get("data", {}):
                            value = base64.b64decode(secret["data"][ref["key"]]).decode()
                        else:
                            value = PLACEHOLDER_SECRET
                    else:
                        value = entry.get("value", "")
                    env[entry["name"]] = local_path(value)
                args = [local_path(a) for a in (c.get("args") or ["serve"])]
                run_switchboard(where, binary, args, env, fail)


def run_switchboard(where, binary, args, env, fail):
    clean = {"PATH": "/usr/bin:/bin", **env}
    if args[0] == "worker":
        # The worker has no --check: `--help` after its arguments exits 0 only if clap
        # accepted every one of them; its configuration file goes through `serve --check`.
        probe = subprocess.run([binary, *args, "--help"], env=clean, capture_output=True, text=True)
        if probe.returncode != 0:
            fail(where, f"`switchboard {' '.join(args)}` is rejected: {probe.stderr.strip()}")
        config = None
        if "--config" in args:
            config = args[args.index("--config") + 1]
        config = config or env.get("SWITCHBOARD_CONFIG")
        if not env.get("SWITCHBOARD_TASKS_URL") and "--tasks-url" not in args:
            fail(where, "the worker has no task-state URL")
        cmd = [binary, "serve", "--check"] + (["--config", config] if config else [])
        # Only the file: the worker reads nothing else of the serve settings.
        clean = {"PATH": "/usr/bin:/bin"}
    else:
        cmd = [binary, *args, "--check"]
    out = subprocess.run(cmd, env=clean, capture_output=True, text=True)
    if out.returncode != 0:
        fail(where, f"`switchboard {' '.join(cmd[1:])}` exits {out.returncode}: {out.stderr.strip()}")
    else:
        print(f"  {where}: {out.stdout.strip()}")


# --- Compose --------------------------------------------------------------------------

INTERPOLATION = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, where, fail):
    """Compose interpolation with an empty environment: every default applies."""
    if isinstance(value, dict):
        return {k: interpolate(v, where, fail) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, where, fail) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        if m.group(4):
            fail(where, f"${m.group(4)} has no default: write ${{{m.group(4)}:-...}}")
            return ""
        op, default = m.group(2), m.group(3)
        if op in (":-", "-"):
            return default
        if op in (":?", "?"):
            fail(where, f"${{{m.group(1)}}} is required")
        else:
            fail(where, f"${{{m.group(1)}}} has no default: write ${{{m.group(1)}:-...}}")
        return ""

    return INTERPOLATION.sub(sub, value)


def dockerfile_defaults():
    """ENV and CMD of the image's final stage, which every compose service starts from."""
    text = open(os.path.join(ROOT, "Dockerfile")).read()
    final = text[text.rindex("\nFROM ") :]
    env = dict(re.findall(r"(SWITCHBOARD_[A-Z_]+)=(\S+)", final))
    cmd = re.search(r'^CMD \[(.*)\]', final, re.M)
    command = [a.strip().strip('"') for a in cmd.group(1).split(",")] if cmd else ["serve"]
    return env, command


def env_dict(env):
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {k: "" if v is None else str(v) for k, v in (env or {}).items()}


def check_compose(compose, binary, fail, run=True):
    services = compose.get("services", {})
    image_env, image_cmd = dockerfile_defaults()
    builds = {}
    host_ports = {}
    for name, svc in services.items():
        where = f"docker-compose.yml: services.{name}"
        svc = interpolate(svc, where, fail)
        if "container_name" in svc:
            fail(where, "no container_name: it makes --scale impossible")
        hc = svc.get("healthcheck")
        if hc is None:
            fail(where, "needs a healthcheck (or `disable: true` with its reason)")
        elif hc.get("disable"):
            if name not in NO_HEALTHCHECK:
                fail(where, "turns its healthcheck off; only " + ", ".join(sorted(NO_HEALTHCHECK)) + " may")
        elif not hc.get("test"):
            fail(where, "healthcheck without a test")
        for port in svc.get("ports", []):
            if isinstance(port, dict):
                host_ip, published = port.get("host_ip"), str(port.get("published", ""))
            else:
                parts = str(port).split(":")
                host_ip, published = (parts[0], parts[1]) if len(parts) == 3 else (None, parts[0] if len(parts) == 2 else "")
            if host_ip != "127.0.0.1":
                fail(where, f"port {port!r} must be bound to 127.0.0.1")
            if not published.isdigit():
                fail(where, f"port {port!r} needs one fixed host port (no range, no random port)")
            elif published in host_ports:
                fail(where, f"host port {published} is also published by {host_ports[published]}")
            else:
                host_ports[published] = name
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
            if source.startswith("./") and not os.path.exists(os.path.join(ROOT, source)):
                fail(where, f"mounts {source}, which does not exist")
        depends = svc.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {dep: None for dep in depends}
        for dep, cond in depends.items():
            if dep not in services:
                fail(where, f"depends on {dep}, which is no service")
                continue
            other = services[dep]
            if other.get("profiles") and not set(other["profiles"]) & set(svc.get("profiles", [])):
                fail(where, f"depends on {dep}, which only exists in profiles {other['profiles']}")
            dep_hc = other.get("healthcheck") or {}
            condition = cond.get("condition") if isinstance(cond, dict) else None
            if dep_hc.get("test") and not dep_hc.get("disable") and condition != "service_healthy":
                fail(where, f"depends_on {dep}: wait for condition service_healthy")
        if svc.get("image") != "switchboard:local":
            continue
        builds[name] = svc.get("build")
        command = svc.get("command") or image_cmd
        env = {**image_env, **env_dict(svc.get("environment"))}
        if name in COMPOSE_SERVICES or command[0] == "worker":
            if svc.get("ports"):
                fail(where, "a scalable component publishes no port (the edge does)")
            if svc.get("profiles") and name in COMPOSE_SERVICES:
                fail(where, "the split stack's components run without a profile")
        if command[0] == "worker":
            if not (hc or {}).get("disable"):
                fail(where, "the worker has no health endpoint: disable the image's HEALTHCHECK")
        elif (hc or {}).get("test") != ["CMD", "/switchboard", "health", "127.0.0.1:8080"]:
            fail(where, "healthcheck must be `/switchboard health 127.0.0.1:8080`")
        roles = env.get("SWITCHBOARD_SERVICES", "").split(",") if env.get("SWITCHBOARD_SERVICES") else []
        if name in COMPOSE_SERVICES and name != "worker" and roles != [name]:
            fail(where, f"SWITCHBOARD_SERVICES should be {name}")
        if set(roles) & STATEFUL:
            backend = env.get("SWITCHBOARD_BACKEND", "")
            m = re.match(r"rediss?://(?:[^@/]*@)?([a-z0-9-]+):\d+", backend)
            if not m or m.group(1) not in services:
                fail(where, f"SWITCHBOARD_BACKEND={backend!r} names no compose service")
        elif "SWITCHBOARD_BACKEND" in env and roles:
            fail(where, "the gateway needs no Redis: drop SWITCHBOARD_BACKEND")
        for var, wanted in URL_VARS.items():
            for url in filter(None, env.get(var, "").split(",")):
                m = re.fullmatch(r"http://([a-z0-9-]+):8080", url.strip())
                target = services.get(m.group(1)) if m else None
                target_roles = env_dict((target or {}).get("environment")).get("SWITCHBOARD_SERVICES", "").split(",")
                if not target or wanted not in target_roles:
                    fail(where, f"{var}={url!r} is not a compose service running {wanted} on 8080")
        if run:
            run_switchboard(where, binary, list(command), env, fail)
    for name in COMPOSE_SERVICES:
        if name not in services:
            fail("docker-compose.yml", f"the split stack needs the service {name}")
    if len({repr(b) for b in builds.values()}) != 1 or None in builds.values():
        fail("docker-compose.yml", "every switchboard:local service names the same build")

    redis = services.get("redis", {})
    cmd = " ".join(redis.get("command", []))
    if "--appendonly yes" not in cmd or "--appendfsync everysec" not in cmd:
        fail("docker-compose.yml: services.redis", "needs --appendonly yes --appendfsync everysec")
    if not any(str(v).endswith(":/data") for v in redis.get("volumes", [])):
        fail("docker-compose.yml: services.redis", "needs a volume on /data")

    # The edge proxies to the gateway service; the collector sends to the jaeger service.
    caddy = open(os.path.join(ROOT, "deploy/Caddyfile")).read()
    if not re.search(r"^\s*name gateway$", caddy, re.M) or not re.search(r"^\s*port 8080$", caddy, re.M):
        fail("deploy/Caddyfile", "must look up the `gateway` service on port 8080")
    check_collector(services, fail)


def check_collector(services, fail):
    where = "deploy/otel-collector.yaml"
    conf = yaml.safe_load(open(os.path.join(ROOT, where)))
    for kind in ("receivers", "processors", "exporters"):
        for pname, pipeline in conf["service"]["pipelines"].items():
            for component in pipeline.get(kind, []):
                if component not in conf.get(kind, {}):
                    fail(where, f"pipeline {pname} uses {kind[:-1]} {component}, which is not defined")
    otlp = conf["receivers"]["otlp"]["protocols"]
    if otlp["grpc"]["endpoint"] != "0.0.0.0:4317" or otlp["http"]["endpoint"] != "0.0.0.0:4318":
        fail(where, "OTLP must listen on 0.0.0.0:4317 (gRPC) and 0.0.0.0:4318 (HTTP)")
    for ename, exporter in conf["exporters"].items():
        host = str(exporter.get("endpoint", "")).split(":")[0]
        if ename.startswith("otlp") and host not in services:
            fail(where, f"exporter {ename} sends to {host}, which is no compose service")
    scraped = [n for sc in conf["receivers"]["prometheus"]["config"]["scrape_configs"] for d in sc.get("dns_sd_configs", []) for n in d["names"]]
    for name in scraped:
        if name not in services:
            fail(where, f"scrapes {name}, which is no compose service")
    mounted = [v for v in services.get("otel-collector", {}).get("volumes", []) if "otel-collector.yaml" in str(v)]
    if not mounted:
        fail("docker-compose.yml: services.otel-collector", "must mount deploy/otel-collector.yaml")


# --- Self-test: each rule must catch its breakage --------------------------------------


def self_test(binary, k8s_docs):
    """Break the files in known ways; each must be caught."""
    compose = yaml.safe_load(open(COMPOSE))
    base = k8s_docs.get("k8s/base")

    def compose_breaks(mutate):
        broken = copy.deepcopy(compose)
        mutate(broken["services"])
        fail = Failures()
        check_compose(broken, binary, fail, run=False)
        return fail.items

    def k8s_breaks(mutate):
        broken = copy.deepcopy(base)
        mutate({(d["kind"], d["metadata"]["name"]): d for d in broken})
        fail = Failures()
        check_k8s("k8s/base", broken, fail)
        return fail.items

    def container(docs, name):
        return pod_spec(docs[("Deployment", name)])["containers"][0]

    def set_env(c, name, value):
        for e in c["env"]:
            if e["name"] == name:
                e.clear()
                e.update({"name": name, "value": value})

    cases = {
        "compose: container_name on a scaled service": lambda s: s["fanout"].update(container_name="fanout"),
        "compose: gateway publishes a fixed port": lambda s: s["gateway"].update(ports=["127.0.0.1:8080:8080"]),
        "compose: port on every interface": lambda s: s["edge"].update(ports=["8080:8080"]),
        "compose: port range": lambda s: s["edge"].update(ports=["127.0.0.1:8080-8081:8080"]),
        "compose: no healthcheck": lambda s: s["tasks"].pop("healthcheck"),
        "compose: healthcheck turned off": lambda s: s["gateway"].update(healthcheck={"disable": True}),
        "compose: plain depends_on": lambda s: s["gateway"].update(depends_on=["tasks"]),
        "compose: gateway points at the wrong service": lambda s: s["gateway"]["environment"].update(SWITCHBOARD_TASKS_URL="http://fanout:8080"),
        "compose: a second build": lambda s: s["worker"].update(build={"context": "elsewhere"}),
        "compose: Redis without AOF": lambda s: s["redis"].update(command=["redis-server"]),
        "k8s: writable root filesystem": lambda d: container(d, "switchboard-tasks")["securityContext"].update(readOnlyRootFilesystem=False),
        "k8s: no limits": lambda d: container(d, "switchboard-fanout")["resources"].pop("limits"),
        "k8s: Redis URL in plain text": lambda d: set_env(container(d, "switchboard-tasks"), "SWITCHBOARD_BACKEND", "redis://redis:6379/0"),
        "k8s: gateway points at the wrong Service": lambda d: set_env(container(d, "switchboard-gateway"), "SWITCHBOARD_TASKS_URL", "http://switchboard-fanout:8080"),
        "k8s: Service to nowhere": lambda d: d[("Service", "switchboard-tasks")]["spec"]["selector"].update({"app.kubernetes.io/component": "nope"}),
        "k8s: headless Service": lambda d: d[("Service", "switchboard-fanout")]["spec"].update(clusterIP="None"),
        "k8s: HPA aimed at a missing Deployment": lambda d: d[("HorizontalPodAutoscaler", "switchboard-tasks")]["spec"]["scaleTargetRef"].update(name="switchboard-task"),
        "k8s: probe off /healthz": lambda d: container(d, "switchboard-registry")["readinessProbe"]["httpGet"].update(path="/"),
        "k8s: service links on": lambda d: pod_spec(d[("Deployment", "switchboard-worker")]).update(enableServiceLinks=True),
    }
    missed = []
    for case, mutate in cases.items():
        caught = (compose_breaks if case.startswith("compose") else k8s_breaks)(mutate)
        if not caught:
            missed.append(case)
    if missed:
        print("self-test: these breakages were NOT caught:\n  " + "\n  ".join(missed))
        return False
    print(f"self-test: {len(cases)} deliberate breakages, each caught")
    return True


def main():
    binary, renders = sys.argv[1], sys.argv[2:]
    fail = Failures()
    k8s_docs = {}
    for path in renders:
        name = os.path.basename(path)[: -len(".yaml")].replace("__", "/")
        docs = [d for d in yaml.safe_load_all(open(path)) if d]
        k8s_docs[name] = docs
        print(f"{name}: {len(docs)} objects")
        check_k8s(name, docs, fail)
        k8s_checks_of_config(name, docs, binary, fail)
    print("docker-compose.yml:")
    check_compose(yaml.safe_load(open(COMPOSE)), binary, fail)
    if fail.items:
        print("deployment files: FAILED\n  " + "\n  ".join(fail.items))
        sys.exit(1)
    if "k8s/base" not in k8s_docs or not self_test(binary, k8s_docs):
        sys.exit(1)
    print("deployment files: our rules pass")


if __name__ == "__main__":
    main()
