"""Check the manifests of deploy/kubernetes: each against Kubernetes' JSON schemas, and all of
them against each other and against toolhost's rules. Run by validate.sh (which makes the
virtualenv); exits 1 when anything is wrong, naming every problem.

What the schemas cannot see is checked here too, because each of these mistakes passes
`kubectl apply` and fails only in the cluster:
- the kustomization lists exactly the manifests of this directory;
- selectors select the Deployment's pods, named ports and referenced ConfigMaps, Secrets and
  keys exist;
- toolhost.toml in the ConfigMap parses (and passes `toolhost config check` when a toolhost
  binary is at hand: $TOOLHOST);
- the token comes from a Secret, and the cache and state directories lie below an emptyDir's
  mount rather than at it (toolhost refuses a directory that is not its own or that others may
  write, and an emptyDir's root is root's, mode 0777);
- the sizing rules of deployment.yaml still hold for the config's [limits]: memory limit >=
  64 MiB + max_concurrency x memory_mib, and terminationGracePeriodSeconds > --drain-grace-ms
  + the longest timeout_ms.
"""

import os
import re
import subprocess
import sys
import tempfile

import yaml
import kubernetes_validate.utils as kv

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = os.path.dirname(os.path.abspath(__file__))

# What the process itself may hold besides its calls' linear memory (deployment.yaml).
PROCESS_MIB = 64
# toolhost's defaults when [limits] leaves a value out (docs/DESIGN.md §6, §8).
DEFAULT_LIMITS = {"max_concurrency": 10, "memory_mib": 256, "timeout_ms": 30000}
DEFAULT_DRAIN_GRACE_MS = 2000

errors = []


def error(where, message):
    errors.append(f"{where}: {message}")


def load_documents(name):
    with open(os.path.join(HERE, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def check_listing(kustomization):
    """The kustomization lists every manifest here, and only existing files."""
    listed = kustomization.get("resources") or []
    present = sorted(
        f for f in os.listdir(HERE) if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"
    )
    for name in listed:
        if not os.path.isfile(os.path.join(HERE, name)):
            error("kustomization.yaml", f"lists {name}, which does not exist")
    for name in present:
        if name not in listed:
            error("kustomization.yaml", f"does not list {name}")
    return [name for name in listed if os.path.isfile(os.path.join(HERE, name))]


def check_schema(name, doc, versions):
    """One object against the strict schema of each Kubernetes version. A kind or apiVersion
    with no schema is an error here (kubernetes-validate only warns)."""
    what = f"{doc.get('kind', '?')}/{(doc.get('metadata') or {}).get('name', '?')}"
    for field in ("apiVersion", "kind"):
        if not isinstance(doc.get(field), str):
            error(name, f"{what}: no {field}")
            return
    if not (doc.get("metadata") or {}).get("name"):
        error(name, f"{what}: no metadata.name")
        return
    for version in versions:
        try:
            kv.validate(doc, version, strict=True)
        except kv.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top)"
            error(name, f"{what} (Kubernetes {version}): {path}: {e.message}")
        except kv.SchemaNotFoundError as e:
            error(name, f"{what}: {e.message}")
        except kv.VersionNotSupportedError:
            error(name, f"kubernetes-validate has no schemas for Kubernetes {version}")
            return


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def mebibytes(quantity):
    """A Kubernetes memory quantity in MiB (binary or decimal suffix, or bytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(quantity))
    if not m:
        raise ValueError(f"not a memory quantity: {quantity!r}")
    scale = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[m.group(2)]
    return float(m.group(1)) * scale / 2**20


def flag(args, name):
    """The value of `--name=VALUE` or `--name VALUE` in a container's args, else None."""
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return None


def check_config(where, text):
    """toolhost.toml: it parses, and `toolhost config check` accepts it when a binary is given.
    Returns the parsed config (None if it does not parse)."""
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        error(where, f"toolhost.toml does not parse: {e}")
        return None
    binary = os.environ.get("TOOLHOST")
    if not binary:
        print(f"note  {where}: toolhost.toml parses; set TOOLHOST=path/to/toolhost to run `toolhost config check` too")
        return config
    if os.sep in binary:
        binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "toolhost.toml")
        with open(path, "w") as f:
            f.write(text)
        try:
            run = subprocess.run([binary, "--workspace", tmp, "config", "check", path],
                                 capture_output=True, text=True)
        except OSError as e:
            error(where, f"cannot run TOOLHOST={binary}: {e}")
            return config
    if run.returncode != 0:
        error(where, f"toolhost config check:\n{run.stdout}{run.stderr}".rstrip())
    else:
        print(f"ok    {where}: toolhost config check: {run.stdout.strip()}")
    return config


def check_together(docs):
    """What only the manifests together say."""
    by_kind = {}
    for name, doc in docs:
        by_kind.setdefault(doc["kind"], []).append((name, doc))
    configmaps = {d["metadata"]["name"]: d for _, d in by_kind.get("ConfigMap", [])}
    secrets = {d["metadata"]["name"]: d for _, d in by_kind.get("Secret", [])}
    deployments = by_kind.get("Deployment", [])
    if len(deployments) != 1:
        error("manifests", f"expected one Deployment, found {len(deployments)}")
        return
    name, deployment = deployments[0]
    where = f"{name}: deployment/{deployment['metadata']['name']}"
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"].get("metadata", {}).get("labels", {})
    if not selects(spec["selector"].get("matchLabels"), labels):
        error(where, "spec.selector does not select the pod template's labels")
    for kind in ("Service", "PodDisruptionBudget"):
        for other_name, other in by_kind.get(kind, []):
            selector = other["spec"].get("selector") or {}
            selector = selector.get("matchLabels", selector) if kind == "PodDisruptionBudget" else selector
            if not selects(selector, labels):
                error(other_name, f"{kind.lower()}/{other['metadata']['name']} does not select the Deployment's pods")

    containers = pod["containers"]
    ports = {p.get("name") for c in containers for p in c.get("ports", [])}
    ports |= {p["containerPort"] for c in containers for p in c.get("ports", [])}
    for service_name, service in by_kind.get("Service", []):
        for port in service["spec"].get("ports", []):
            if port.get("targetPort", port["port"]) not in ports:
                error(service_name, f"targetPort {port.get('targetPort')!r} is no container port")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for volume in volumes.values():
        if "configMap" in volume and volume["configMap"]["name"] not in configmaps:
            error(where, f"volume {volume['name']}: no ConfigMap {volume['configMap']['name']} here")
        if "secret" in volume and volume["secret"]["secretName"] not in secrets:
            error(where, f"volume {volume['name']}: no Secret {volume['secret']['secretName']} here")

    container = next((c for c in containers if c["name"] == "toolhost"), None)
    if container is None:
        error(where, "no container named toolhost")
        return
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        port = (container.get(probe) or {}).get("httpGet", {}).get("port")
        if port is None:
            error(where, f"no {probe} over HTTP")
        elif port not in ports:
            error(where, f"{probe}: port {port!r} is no container port")

    env = {e["name"]: e for e in container.get("env", [])}
    for variable in env.values():
        source = variable.get("valueFrom", {})
        for key, store, kind in (("secretKeyRef", secrets, "Secret"), ("configMapKeyRef", configmaps, "ConfigMap")):
            if key in source:
                ref = source[key]
                obj = store.get(ref["name"])
                if obj is None:
                    error(where, f"env {variable['name']}: no {kind} {ref['name']} here")
                elif ref["key"] not in {**obj.get("data", {}), **obj.get("stringData", {})}:
                    error(where, f"env {variable['name']}: {kind} {ref['name']} has no key {ref['key']}")
    token = env.get("TOOLHOST_MCP_TOKEN")
    if token is None or "secretKeyRef" not in token.get("valueFrom", {}):
        error(where, "TOOLHOST_MCP_TOKEN must come from a Secret (valueFrom.secretKeyRef)")

    # toolhost's private directories: strictly below an emptyDir's mount point.
    mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container.get("volumeMounts", [])}
    for variable in ("TOOLHOST_CACHE_DIR", "TOOLHOST_STATE_DIR"):
        value = env.get(variable, {}).get("value")
        if not value:
            error(where, f"{variable} is not set (the image's root file system is read-only)")
            continue
        value = value.rstrip("/")
        below = [p for p in mounts if value.startswith(p + "/")]
        if value in mounts:
            error(where, f"{variable}={value} is a volume's mount point, which is root's and mode 0777: "
                         f"toolhost refuses it; point it at a directory below, which toolhost creates 0700")
        elif not below or "emptyDir" not in volumes.get(mounts[max(below, key=len)], {}):
            error(where, f"{variable}={value} is not below an emptyDir's mount (the root file system is read-only)")

    # The config, and the sizing that depends on it.
    config_arg = flag(container.get("args", []), "config")
    config = None
    for mount_path, volume_name in mounts.items():
        if config_arg and config_arg.startswith(mount_path + "/") and "configMap" in volumes.get(volume_name, {}):
            cm = configmaps.get(volumes[volume_name]["configMap"]["name"])
            key = config_arg[len(mount_path) + 1:]
            if cm is None:
                break
            if key not in cm.get("data", {}):
                error(where, f"--config={config_arg}: ConfigMap {cm['metadata']['name']} has no key {key}")
                break
            config = check_config(f"configmap/{cm['metadata']['name']}", cm["data"][key])
    if config_arg is None:
        error(where, "no --config")
    if config is None:
        return
    limits = {**DEFAULT_LIMITS, **config.get("limits", {})}
    tools = config.get("tools", {}).values()
    memory_mib = max([limits["memory_mib"]] + [t["memory_mib"] for t in tools if "memory_mib" in t])
    timeout_ms = max([limits["timeout_ms"]] + [t["timeout_ms"] for t in tools if "timeout_ms" in t])
    memory_limit = container.get("resources", {}).get("limits", {}).get("memory")
    needed = PROCESS_MIB + limits["max_concurrency"] * memory_mib
    if memory_limit is None:
        error(where, "no memory limit")
    elif mebibytes(memory_limit) < needed:
        error(where, f"memory limit {memory_limit} < {PROCESS_MIB} MiB + max_concurrency "
                     f"{limits['max_concurrency']} x memory_mib {memory_mib} = {needed} MiB")
    drain_ms = int(flag(container.get("args", []), "drain-grace-ms") or DEFAULT_DRAIN_GRACE_MS)
    grace_s = pod.get("terminationGracePeriodSeconds", 30)
    if grace_s * 1000 <= drain_ms + timeout_ms:
        error(where, f"terminationGracePeriodSeconds {grace_s} s does not exceed --drain-grace-ms "
                     f"{drain_ms} ms + the longest timeout_ms {timeout_ms} ms")


def main():
    versions = sys.argv[1:] or ["1.30.0"]
    with open(os.path.join(HERE, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f) or {}
    if kustomization.get("kind") != "Kustomization":
        error("kustomization.yaml", "kind is not Kustomization")
    docs = []
    for name in check_listing(kustomization):
        try:
            found = load_documents(name)
        except yaml.YAMLError as e:
            error(name, f"not YAML: {e}")
            continue
        if not found:
            error(name, "no object in it")
        for doc in found:
            if not isinstance(doc, dict):
                error(name, "a document that is not an object")
                continue
            count = len(errors)
            check_schema(name, doc, versions)
            if len(errors) == count:
                print(f"ok    {name}: {doc['kind'].lower()}/{doc['metadata']['name']} "
                      f"(Kubernetes {', '.join(versions)}, strict)")
                docs.append((name, doc))
    if not errors:
        count = len(errors)
        check_together(docs)
        if len(errors) == count:
            print("ok    the manifests agree with each other and with toolhost.toml's [limits]")
    for e in errors:
        print(f"error {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
