"""The image, built from the Dockerfile by a real Docker daemon and run as the plain manifests
(deploy/k8s) run it: the Rollout's ``pull-model`` init container fills the model volume, the
engine serves the real model from it, the gateway Deployment routes to the engine by its
Service name, each with its manifest's arguments, user, read-only root, dropped capabilities,
Secret keys and ConfigMap files.

``.ci/container`` starts a daemon and makes the base image CI builds on (Docker Hub is out of
reach there). Where this machine's pip takes torch from a local file (this CI's CPU build), the
build's torch index is a PEP 503 index of those files served on 127.0.0.1; elsewhere the
Dockerfile's own index is used.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from mcp.engine import kernels as host_kernels
from mcp.modelfile.reader import open_model
from mcp.runtime import Session

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
K8S = ROOT / "deploy" / "k8s"
CI_BASE_IMAGE = "mcp2026-ci/python:3.11-bookworm"
IMAGE = "mcp2026/mcp2026:ci"
PULLED = "/models/models/smollm2-135m-instruct.mcp"  # where pull-model compiles the default model
MESSAGES = [{"role": "user", "content": "Name three colours."}]


def docker(*args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess:
    # The classic builder: it needs no buildx plugin and reads the Dockerfile's syntax line as a comment.
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def daemon() -> None:
    problem = None
    if shutil.which("docker") is None:
        problem = "the docker CLI is not installed"
    elif subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        problem = "no Docker daemon answers"
    if problem:
        message = f"{problem} (Debian: apt-get install docker.io; `bash .ci/container` installs and starts it)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def manifests() -> dict[tuple[str, str], dict]:
    """(kind, name) -> object, every document under deploy/k8s."""
    objects = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


@pytest.fixture(scope="module")
def torch_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """The build's TORCH_INDEX_URL (None: the Dockerfile's own). pip's resolution of
    ``-c constraints/cpu.txt torch`` says where this machine's torch lies: a local file is served,
    with what it needs, as a PEP 503 index on 127.0.0.1 (the build runs with --network host)."""
    folder = tmp_path_factory.mktemp("torch-index")
    report = folder / "report.json"
    pip = [sys.executable, "-m", "pip", "-q"]
    constraints = str(ROOT / "constraints" / "cpu.txt")
    subprocess.run([*pip, "install", "--dry-run", "--ignore-installed", "--report", str(report),
                    "-c", constraints, "torch"], check=True, capture_output=True, timeout=300)
    [torch] = [item for item in json.loads(report.read_text())["install"] if item["metadata"]["name"] == "torch"]
    if not torch["download_info"]["url"].startswith("file:"):
        yield None
        return
    wheels = folder / "wheels"
    subprocess.run([*pip, "download", "-d", str(wheels), "-c", constraints, "torch"],
                   check=True, capture_output=True, timeout=600)
    simple = folder / "simple"
    for wheel in wheels.iterdir():
        project = wheel.name.split("-")[0].lower().replace("_", "-").replace(".", "-")
        (simple / project).mkdir(parents=True, exist_ok=True)
        wheel.rename(simple / project / wheel.name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def image(daemon: None, torch_index: str | None) -> str:
    args = ["build", "--network", "host", "-t", IMAGE]
    if docker("image", "inspect", CI_BASE_IMAGE, check=False).returncode == 0:
        args += ["--build-arg", f"PYTHON_IMAGE={CI_BASE_IMAGE}"]
    if torch_index:
        args += ["--build-arg", f"TORCH_INDEX_URL={torch_index}"]
    docker(*args, str(ROOT), timeout=1800)
    return IMAGE


@pytest.fixture(scope="module")
def cluster(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(image, manifests(), tmp_path_factory.mktemp("cluster"))
    yield cluster
    cluster.tear_down()


class Cluster:
    """The manifests' pods as containers on one Docker network, a Service name as an alias."""

    def __init__(self, image: str, objects: dict[tuple[str, str], dict], folder: Path) -> None:
        self.image, self.objects, self.folder = image, objects, folder
        self.suffix = uuid.uuid4().hex[:8]
        self.network = f"mcp2026-ci-{self.suffix}"
        self.volume = f"mcp2026-ci-models-{self.suffix}"
        self.containers: list[str] = []
        docker("network", "create", self.network)
        docker("volume", "create", self.volume)

    def tear_down(self) -> None:
        for name in self.containers:
            docker("rm", "-f", "-v", name, check=False)
        docker("network", "rm", self.network, check=False)
        docker("volume", "rm", "-f", self.volume, check=False)

    @property
    def engine_pod(self) -> dict:
        """The engine Rollout's pod spec."""
        return pod_of(self.objects, "Rollout", "mcp2026-engine")

    def stat_model(self, fmt: str) -> str:
        """`stat -c fmt` of the compiled model in the volume, from inside the image."""
        return docker("run", "--rm", "--volume", f"{self.volume}:/models", "--entrypoint", "stat", self.image,
                      "-c", fmt, PULLED).stdout.strip()

    def secret(self, name: str, key: str) -> str:
        return self.objects[("Secret", name)]["stringData"][key]

    def config_map(self, name: str, edit: Callable[[str, str], str] | None = None) -> Path:
        """The ConfigMap's files in a folder of their own, to mount as the pod would."""
        folder = self.folder / f"{name}-{uuid.uuid4().hex[:6]}"
        folder.mkdir()
        for file, text in self.objects[("ConfigMap", name)]["data"].items():
            (folder / file).write_text(edit(file, text) if edit else text)
        folder.chmod(0o755)
        return folder

    def docker_run_args(self, pod: dict, container: dict, config_maps: dict[str, Path]) -> list[str]:
        """`docker run` flags for one of a pod spec's containers, as Kubernetes would run it."""
        security = pod.get("securityContext", {})
        args = ["--user", f"{security['runAsUser']}:{security['runAsGroup']}"] if "runAsUser" in security else []
        context = container.get("securityContext", {})
        if context.get("readOnlyRootFilesystem"):
            args.append("--read-only")
        if "ALL" in context.get("capabilities", {}).get("drop", []):
            args += ["--cap-drop", "ALL"]
        if context.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        if "limits" in container.get("resources", {}) and "memory" in container["resources"]["limits"]:
            args += ["--memory", container["resources"]["limits"]["memory"].replace("Gi", "g").replace("Mi", "m")]
        for env in container.get("env", []):
            if "value" in env:
                value = env["value"]
            else:
                ref = env["valueFrom"]["secretKeyRef"]
                value = self.secret(ref["name"], ref["key"])
            args += ["--env", f"{env['name']}={value}"]
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for mount in container.get("volumeMounts", []):
            volume = volumes[mount["name"]]
            if "emptyDir" in volume:
                args += ["--tmpfs", f"{mount['mountPath']}:mode=1777"]
            elif "persistentVolumeClaim" in volume:
                args += ["--volume", f"{self.volume}:{mount['mountPath']}"]
            elif "configMap" in volume:
                source = config_maps.get(volume["configMap"]["name"]) or self.config_map(volume["configMap"]["name"])
                args += ["--volume", f"{source}:{mount['mountPath']}:ro"]
            else:
                raise AssertionError(f"volume {volume['name']}: a kind this rehearsal does not mount")
        return args

    def run_once(self, pod: dict, container: dict) -> subprocess.CompletedProcess:
        """An init container: run to the end."""
        flags = self.docker_run_args(pod, container, {})
        return docker("run", "--rm", "--network", self.network, *flags, self.image, *container["args"],
                      timeout=600, check=False)

    def start(self, pod: dict, container: dict, alias: str, config_maps: dict[str, Path] | None = None,
              extra: tuple[str, ...] = ()) -> Container:
        name = f"{alias}-{self.suffix}-{len(self.containers)}"
        flags = self.docker_run_args(pod, container, config_maps or {})
        docker("run", "--detach", "--name", name, "--network", self.network, "--network-alias", alias,
               *extra, *flags, self.image, *container["args"])
        self.containers.append(name)
        address = docker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                         name).stdout.strip()
        [port] = [p["containerPort"] for p in container["ports"] if p["name"] == "http"]
        return Container(name, f"http://{address}:{port}", container["readinessProbe"]["httpGet"]["path"])


@dataclass
class Container:
    name: str
    url: str
    ready_path: str

    def wait_ready(self, timeout_s: float = 180.0) -> None:
        """The readiness probe's path answering 200, as the kubelet waits for it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = json.loads(docker("inspect", "--format", "{{json .State}}", self.name).stdout)
            if not state["Running"]:
                raise AssertionError(f"{self.name} exited {state['ExitCode']}:\n{self.logs()}")
            try:
                if httpx.get(self.url + self.ready_path, timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{self.name} was not ready in {timeout_s} s:\n{self.logs()}")

    def logs(self) -> str:
        done = docker("logs", self.name, check=False)
        return done.stdout + done.stderr


def pod_of(objects: dict, kind: str, name: str) -> dict:
    return objects[(kind, name)]["spec"]["template"]["spec"]


def tensors(path: Path) -> list[tuple]:
    """Every tensor's name, encoding, shape and sha256, each hash checked against the bytes."""
    with open_model(path, verify=True) as model:
        return [(spec.name, spec.encoding, spec.shape, spec.sha256) for spec in model.header.tensors]


@pytest.fixture(scope="module")
def pulled(cluster: Cluster) -> subprocess.CompletedProcess:
    """The Rollout's pull-model init container, run once on the empty model volume."""
    pod = cluster.engine_pod
    [init] = pod["initContainers"]
    return cluster.run_once(pod, init)


@pytest.fixture(scope="module")
def engine(cluster: Cluster, pulled: subprocess.CompletedProcess) -> Container:
    pod = cluster.engine_pod
    [container] = pod["containers"]
    # The image's own HEALTHCHECK, run every second instead of every 15 s.
    engine = cluster.start(pod, container, alias="mcp2026-engine", extra=("--health-interval", "1s"))
    engine.wait_ready()
    return engine


@pytest.fixture(scope="module")
def gateway(cluster: Cluster, engine: Container) -> Container:
    pod = pod_of(cluster.objects, "Deployment", "mcp2026-gateway")
    [container] = pod["containers"]
    gateway = cluster.start(pod, container, alias="mcp2026-gateway")
    gateway.wait_ready()
    return gateway


@pytest.fixture(scope="module")
def host_answer(smollm2_auto_mcp: Path) -> str:
    """The same model through the SDK in this process: what every container must answer."""
    with Session() as session:
        model = session.load_model(str(smollm2_auto_mcp))
        return model.chat(MESSAGES, max_tokens=12, temperature=0.0, ignore_eos=True).text


def ask(url: str, key: str) -> str:
    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=120.0)
    reply = client.chat.completions.create(model="smollm2", messages=MESSAGES, max_tokens=12, temperature=0.0,
                                           extra_body={"ignore_eos": True})
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 12
    return reply.choices[0].message.content


def test_the_image_runs_as_the_dockerfile_says(image: str) -> None:
    config = json.loads(docker("image", "inspect", "--format", "{{json .Config}}", image).stdout)
    assert config["User"] == "10001:10001"
    assert set(config["Volumes"]) == {"/models"}
    assert config["Entrypoint"] == ["mcp2026"]
    assert config["Cmd"] == ["serve", "--config", "/etc/mcp2026/mcp-config.yaml"]
    assert set(config["ExposedPorts"]) == {"8000/tcp", "8080/tcp", "50051/tcp"}
    assert "MCP_HOME=/models" in config["Env"]
    assert "http://127.0.0.1:8000/health" in " ".join(config["Healthcheck"]["Test"])
    who = docker("run", "--rm", "--entrypoint", "id", image)
    assert who.stdout.startswith("uid=10001(mcp) gid=10001(mcp)")
    # The native kernels are built in the image and pick this CPU's instruction set, as here.
    kernels = docker("run", "--rm", "--entrypoint", "python", image, "-c",
                     "from mcp.engine import kernels; print(kernels.available(), kernels.isa())")
    assert kernels.stdout.split() == ["True", host_kernels.isa()], kernels.stdout + kernels.stderr


def test_the_init_container_compiles_the_model_the_host_compiles(cluster: Cluster, pulled, smollm2_auto_mcp: Path,
                                                                  tmp_path: Path) -> None:
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert pulled.stdout.strip().splitlines()[-1] == PULLED
    # The file in the volume belongs to the pod's user and holds the host's compile, tensor for
    # tensor (the header's time and licence text differ from a compile without the catalog).
    assert cluster.stat_model("%u:%g") == "10001:10001"
    copy = docker("create", "--volume", f"{cluster.volume}:/models", cluster.image).stdout.strip()
    try:
        docker("cp", f"{copy}:{PULLED}", str(tmp_path / "pulled.mcp"))
    finally:
        docker("rm", "-v", copy)
    assert tensors(tmp_path / "pulled.mcp") == tensors(smollm2_auto_mcp)


def test_a_second_pod_finds_the_model_in_the_volume(cluster: Cluster, pulled) -> None:
    pod = cluster.engine_pod
    before = cluster.stat_model("%Y")
    again = cluster.run_once(pod, pod["initContainers"][0])
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip().splitlines()[-1] == PULLED
    assert cluster.stat_model("%Y") == before  # not compiled again


def test_the_engine_answers_what_the_sdk_answers(cluster: Cluster, engine: Container, host_answer: str) -> None:
    key = cluster.secret("mcp2026-keys", "engine-api-key")
    assert ask(engine.url, key) == host_answer
    refused = httpx.post(engine.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES},
                         headers={"Authorization": "Bearer not-the-key"}, timeout=30.0)
    assert refused.status_code == 401
    assert "api key" in refused.json()["error"]["message"].lower()


def test_the_image_healthcheck_reports_the_engine_healthy(engine: Container) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        health = json.loads(docker("inspect", "--format", "{{json .State.Health}}", engine.name).stdout)
        if health["Status"] == "healthy":
            assert health["Log"][-1]["ExitCode"] == 0
            return
        time.sleep(1)
    raise AssertionError(f"{engine.name} not healthy: {health}")


def test_the_gateway_routes_to_the_engine_by_its_service_name(cluster: Cluster, gateway: Container,
                                                              host_answer: str) -> None:
    key = cluster.secret("mcp2026-keys", "client-api-key")
    assert ask(gateway.url, key) == host_answer
    # The engine's key is the gateway's, not a client's.
    refused = httpx.post(gateway.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES},
                         headers={"Authorization": f"Bearer {cluster.secret('mcp2026-keys', 'engine-api-key')}"},
                         timeout=30.0)
    assert refused.status_code == 401


def test_the_site_policy_refuses_by_its_rule_once_governance_is_on(cluster: Cluster, pulled) -> None:
    """docs/operations.md: the mounted policy bundle is evaluated once serving.governance names it."""
    def with_governance(file: str, text: str) -> str:
        config = yaml.safe_load(text)
        config["serving"]["governance"] = {"policy_bundle": "/etc/mcp2026-policies"}
        return yaml.safe_dump(config)

    pod = cluster.engine_pod
    [container] = pod["containers"]
    governed = cluster.start(pod, container, alias="mcp2026-engine-governed",
                             config_maps={"mcp2026-config": cluster.config_map("mcp2026-config", with_governance)})
    governed.wait_ready()
    key = cluster.secret("mcp2026-keys", "engine-api-key")
    refused = httpx.post(governed.url + "/v1/chat/completions",
                         json={"model": "smollm2", "messages": MESSAGES, "max_tokens": 2000},
                         headers={"Authorization": f"Bearer {key}"}, timeout=60.0)
    assert refused.status_code == 403, refused.text
    assert "max_tokens is over this site's 1024" in refused.text
    assert ask(governed.url, key)  # a request within the rule is served


def test_the_docs_one_container_recipe_serves(cluster: Cluster, pulled, tmp_path: Path) -> None:
    """docs/operations.md's "To try the image on one machine", run by bash as written; only the
    names that would clash here change: the image tag, the volume (already filled), the
    container's name and the published port."""
    docs = (ROOT / "docs" / "operations.md").read_text()
    recipe = docs.split("To try the image on one machine", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    name = f"mcp2026-recipe-{cluster.suffix}"
    script = recipe
    for old, new in (("mcp2026/mcp2026:0.1.0", cluster.image), ("mcp-models:", f"{cluster.volume}:"),
                     ("--name mcp2026 ", f"--name {name} "), ("-p 8000:8000", f"-p 127.0.0.1:{port}:8000"),
                     ("localhost:8000", f"localhost:{port}")):
        assert old in script, f"the recipe no longer says {old!r}"
        script = script.replace(old, new)
    cluster.containers.append(name)
    done = subprocess.run(["timeout", "300", "bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=330)
    assert done.returncode == 0, done.stdout + done.stderr
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert reply["object"] == "chat.completion" and reply["model"].startswith("smollm2")
    assert reply["choices"][0]["message"]["content"] and 0 < reply["usage"]["completion_tokens"] <= 32


def test_sigterm_drains_and_exits_cleanly(cluster: Cluster, engine: Container) -> None:
    docker("stop", "--time", "45", engine.name, timeout=90)  # the pod's terminationGracePeriodSeconds
    state = json.loads(docker("inspect", "--format", "{{json .State}}", engine.name).stdout)
    assert state["ExitCode"] == 0, engine.logs()
    assert "draining in-flight requests" in engine.logs()
