#!/usr/bin/env python3
"""The real-node figures of BENCHMARKS.md § On a real node, in one run on one node.

Run under the node wrapper (root, the node's packages, kubectl on PATH):

    cargo build --release -p apiary
    cargo run -p apiary-envtest --example apiary_node -- \
        python3 crates/envtest/bench/node_bench.py target/release/apiary [RUNS]

For each run, in a fresh namespace: `apiary deploy` of a container that traps SIGTERM against
`kubectl run` + `kubectl wait --for=condition=Ready` of the same container (wall, CPU of the
client, and kubectl's requests from its `-v=6` lines; apiary logs no line per request), then
`apiary undeploy` against `kubectl delete pod --wait`; then, of a container that ignores SIGTERM
(`sh` as PID 1), `apiary undeploy --grace-period 5s` against `kubectl delete pod --grace-period=5
--wait` (docs/deploy.md § Grace periods). Prints medians and the ratios. Talks only to the
node's loopback apiserver.
"""
import json, os, resource, statistics, subprocess, sys, tempfile, time

node = os.environ["APIARY_NODE"]
info = json.load(open(os.path.join(node, "run/node.json")))
apiary = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
token = open(os.path.join(node, "certs/admin.token")).read().strip()
SLEEPER = "trap 'exit 0' TERM; sleep 3600 & wait"
IGNORER = "echo started; sleep 3600"
image = info["images"]["agent"]


def kubeconfig(namespace):
    f = tempfile.NamedTemporaryFile("w", delete=False, suffix=".kubeconfig")
    f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {{server: {info['server_url']}, certificate-authority: {info['ca_path']}}}
users:
- name: admin
  user: {{token: {token}}}
contexts:
- name: admin@node
  context: {{cluster: node, user: admin, namespace: {namespace}}}
current-context: admin@node
""")
    f.close()
    return f.name


def timed(cmds, env):
    """Runs the commands in order; wall seconds, client CPU seconds, request count."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    requests = 0
    for cmd in cmds:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{cmd[0]} failed: {out.stderr[-2000:]}")
        requests += sum(
            1
            for line in out.stderr.splitlines()
            if ("round_trippers.go" in line and " milliseconds" in line)
            or ("HTTP" in line and "finished processing request" in line)
        )
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, requests


admin = kubeconfig("default")
env = dict(os.environ, KUBECONFIG=admin)
env.pop("RUST_LOG", None)
rows = {k: [] for k in ["apiary deploy", "kubectl run+wait", "apiary undeploy", "kubectl delete --wait",
                        "apiary undeploy --grace-period 5s", "kubectl delete --grace-period=5"]}
for i in range(runs):
    # Alternate who goes first, so neither always pays the node's first pull or a cold cache.
    for tool in (["apiary", "kubectl"] if i % 2 == 0 else ["kubectl", "apiary"]):
        ns = f"bench-{tool}-{i}-{os.getpid()}"
        subprocess.run(["kubectl", "create", "namespace", ns], env=env, check=True, capture_output=True)
        while subprocess.run(["kubectl", "-n", ns, "get", "sa", "default"], env=env, capture_output=True).returncode:
            time.sleep(0.1)
        cfg = dict(env, KUBECONFIG=kubeconfig(ns))
        sizes = ["--cpu-request", "10m", "--memory-request", "16Mi", "--cpu-limit", "200m", "--memory-limit", "64Mi"]
        if tool == "apiary":
            rows["apiary deploy"].append(timed([[apiary, "-vvv", "deploy", "bench", "--image", image, "--command", "sh",
                                                  "--arg=-c", "--arg", SLEEPER, *sizes]], cfg))
            rows["apiary undeploy"].append(timed([[apiary, "-vvv", "undeploy", "bench"]], cfg))
            timed([[apiary, "deploy", "ignorer", "--image", image, "--command", "sh", "--arg=-c",
                    "--arg", IGNORER, *sizes]], cfg)
            rows["apiary undeploy --grace-period 5s"].append(
                timed([[apiary, "-vvv", "undeploy", "ignorer", "--grace-period", "5s"]], cfg))
        else:
            rows["kubectl run+wait"].append(timed([
                ["kubectl", "-v=6", "run", "bench", f"--image={image}", "--restart=Never",
                 "--overrides", json.dumps({"spec": {"containers": [{
                     "name": "bench", "image": image, "command": ["sh", "-c", SLEEPER],
                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                   "limits": {"cpu": "200m", "memory": "64Mi"}}}]}})],
                ["kubectl", "-v=6", "wait", "--for=condition=Ready", "pod/bench", "--timeout=120s"]], cfg))
            rows["kubectl delete --wait"].append(timed([["kubectl", "-v=6", "delete", "pod", "bench", "--wait"]], cfg))
            timed([["kubectl", "run", "ignorer", f"--image={image}", "--restart=Never",
                    "--overrides", json.dumps({"spec": {"containers": [{
                        "name": "ignorer", "image": image, "command": ["sh", "-c", IGNORER],
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                      "limits": {"cpu": "200m", "memory": "64Mi"}}}]}})],
                   ["kubectl", "wait", "--for=condition=Ready", "pod/ignorer", "--timeout=120s"]], cfg)
            rows["kubectl delete --grace-period=5"].append(timed(
                [["kubectl", "-v=6", "delete", "pod", "ignorer", "--grace-period=5", "--wait"]], cfg))
        subprocess.run(["kubectl", "delete", "namespace", ns, "--wait=false"], env=env, capture_output=True)


def med(k, j):
    return statistics.median(r[j] for r in rows[k])


for k in rows:
    requests = f"{med(k, 2):4.0f}" if k.startswith("kubectl") else " n/a"
    print(f"{k:24} wall {med(k, 0):6.3f} s  cpu {med(k, 1):6.3f} s  requests {requests}  (median of {runs})")
print(f"deploy   wall ratio apiary/kubectl {med('apiary deploy', 0) / med('kubectl run+wait', 0):.2f}, "
      f"cpu ratio {med('apiary deploy', 1) / med('kubectl run+wait', 1):.2f}")
print(f"undeploy wall ratio apiary/kubectl {med('apiary undeploy', 0) / med('kubectl delete --wait', 0):.2f}, "
      f"cpu ratio {med('apiary undeploy', 1) / med('kubectl delete --wait', 1):.2f}")
print(f"grace 5s wall ratio apiary/kubectl "
      f"{med('apiary undeploy --grace-period 5s', 0) / med('kubectl delete --grace-period=5', 0):.2f}, "
      f"cpu ratio {med('apiary undeploy --grace-period 5s', 1) / med('kubectl delete --grace-period=5', 1):.2f}")
