"""deploy/: the Kubernetes Jobs and volumes validated against Kubernetes' own schemas (kubernetes-validate),
the grading pod's command run here for real under the image's conditions (bubblewrap where the image puts
it; and without it, or without what a pod must allow it, the refusal that says why), the numbers of the
manifests checked against each other, and the grading container file parsed for what it must hold."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from kubernetes_validate import validate

from kata.course import load_course
from kata.grade import Shard
from kata.gradescope import RESERVE_MB
from kata.grading import cgroup, isolation
from tests.conftest import COURSE_PARTS, REPO, copy_course
from tests.test_cli import kata_exe
from tests.test_grade import reference, write

KUBE = REPO / "deploy" / "kubernetes"
KUBERNETES_VERSIONS = ["1.31.0", "1.37.0"]  # backoffLimitPerIndex: beta from 1.29, GA in 1.33


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((KUBE / name).read_text()) if d]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name", ["grade-job.yaml", "merge-job.yaml", "volumes.yaml"])
def test_the_manifests_are_valid_kubernetes(name, version):
    for document in documents(name):
        validate(document, version, strict=True)  # raises on an unknown field, a wrong type, a missing one


def container_env(job: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_the_indexed_job_grades_one_shard_per_index_without_network():
    job, policy = documents("grade-job.yaml")
    spec = job["spec"]
    shards = int(container_env(job)["SHARDS"])
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == shards
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert '--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in container["args"][0]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["class"]["readOnly"], "the students' files cannot be changed by grading"
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    # Both directions listed, no rule allowing anything: no traffic at all.
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in policy["spec"] and "egress" not in policy["spec"]
    (merge,) = documents("merge-job.yaml")
    selected = policy["spec"]["podSelector"]["matchLabels"].items()
    assert merge["spec"]["template"]["metadata"]["labels"].items() >= selected


IMAGE_BWRAP = "/usr/bin/bwrap"  # where the image's `apt-get install bubblewrap` puts it (Debian)


class Pods:
    """The Jobs' pods run here as Kubernetes would run them: each container's command and arguments, its
    environment (the index in JOB_COMPLETION_INDEX), /class, /grades and the Secret's key where the volumes
    would be, and the image's PATH: `kata`'s folder, then the system's (no other folder of this machine's).
    Run by root, the grading pod's command runs as the pod's user (runAsUser, its fsGroup its group), without
    capabilities and with no_new_privs (allowPrivilegeEscalation: false), through setpriv(1): bubblewrap then
    makes its namespaces unprivileged, as in the pod; /grades is the user's and the key readable by its group,
    as the volume and the Secret would be."""

    def __init__(self, base: Path):
        self.root = copy_course(base / "course")
        self.folder, self.grades, self.key = base / "class", base / "grades", base / "secret" / "key"
        write(self.folder / "ann" / "9.1-softmax.py", reference(self.root, "9.1"))
        # Shapes right, values wrong: the checks of shapes and unchanged inputs count only beside one of values: 0.
        write(self.folder / "ben" / "9.1-softmax.py", "def softmax(x, dim=-1):\n    return x\n")
        write(self.key, "0f" * 32 + "\n")
        self.grades.mkdir()
        self.path = os.pathsep.join([str(Path(kata_exe()).parent), "/usr/bin", "/bin"])
        self.env = {**os.environ, "KATA_COURSE": str(self.root), "KATA_PROGRESS": str(base / "p.json"),
                    "HOME": str(self.grades)}
        self.user: tuple[str, ...] = ()

    def as_pod_user(self, job: dict) -> bool:
        """Run the pod's command as the pod's user from now on, if that user can run this Python (a Python
        under root's own home cannot be); whether it will."""
        pod = job["spec"]["template"]["spec"]["securityContext"]
        uid, gid = pod["runAsUser"], pod["fsGroup"]
        user = (shutil.which("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all")
        if subprocess.run([*user, "sh", "-c", f'"{Path(kata_exe()).parent}/python" -c pass'], cwd="/").returncode:
            return False
        os.chown(self.grades, uid, gid)
        os.chown(self.key, 0, gid)
        self.key.chmod(0o440)
        self.user = user
        return True

    def run(self, job: dict, *, around: tuple[str, ...] = (), path: str | None = None,
            **extra: str) -> subprocess.CompletedProcess:
        container = job["spec"]["template"]["spec"]["containers"][0]
        script = container["args"][0].replace("/class", str(self.folder)).replace("/grades", str(self.grades))
        env = {**self.env, **container_env(job), "KATA_GRADE_KEY_FILE": str(self.key), "PATH": path or self.path,
               **extra}
        return subprocess.run([*around, *self.user, *container["command"], script], env=env, capture_output=True,
                              text=True, timeout=300)


@pytest.fixture
def pods(tmp_path):
    """Pods in a folder the pod's user can reach where the tests run as root (pytest's own is root's alone)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        yield Pods(tmp_path)
        return
    base = Path(tempfile.mkdtemp(prefix="kata-pods-"))
    base.chmod(0o755)
    try:
        yield Pods(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def grade_job(katas: str = "9.1") -> dict:
    """The grading Job, its KATAS a cheap assignment."""
    job, _ = documents("grade-job.yaml")
    for variable in job["spec"]["template"]["spec"]["containers"][0]["env"]:
        if variable["name"] == "KATAS":
            variable["value"] = katas
    return job


def test_the_jobs_commands_grade_and_merge_a_class(pods):
    """Each pod's command, run here as the Job would run it in the image (bubblewrap where the image puts
    it; as the pod's user, where the tests run as root), then the merge Job's: every student graded once,
    in the sandbox, merged whole."""
    if shutil.which("bwrap", path=pods.path) != IMAGE_BWRAP:
        pytest.skip(f"bubblewrap is not at {IMAGE_BWRAP} here, where the image has it")
    job = grade_job()
    as_pod_user = os.geteuid() == 0 and pods.as_pod_user(job)
    for index in range(job["spec"]["completions"]):
        done = pods.run(job, JOB_COMPLETION_INDEX=str(index))
        assert done.returncode == 0, done.stderr[-2000:]
    (merge,) = documents("merge-job.yaml")
    pods.user = ()  # the merge Job's pod runs no student code
    done = pods.run(merge)
    assert done.returncode == 0, done.stderr[-2000:]
    grades = pods.grades
    report = json.loads((grades / "merged" / "grades.json").read_text())
    assert report["complete"] and {s["student"]: s["total"] for s in report["students"]} == {"ann": 10, "ben": 0}
    assert report["isolation"].startswith("bubblewrap")
    assert (grades / "merged" / "canvas.csv").read_text().splitlines()[0].endswith(',"Transformer katas, unit 9"')
    assert not list(grades.rglob(".kata-grade.key")), "the journals are signed with the Secret's key only"
    if as_pod_user:
        uid = job["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
        assert {p.stat().st_uid for p in grades.glob("shard-*/grades.json")} == {uid}


def test_where_the_pod_cannot_sandbox_its_command_refuses_and_says_why(pods, tmp_path):
    """The grading pod's command where its conditions are not met exits 2, before grading anything, naming
    what is missing: bubblewrap not in the image (a PATH without it: the image before it installed it), a
    masked /proc (a pod without procMount: Unmasked: here a mount namespace with /proc/keys covered, as
    container runtimes cover it) and no user namespaces (here a user namespace whose
    user.max_user_namespaces is 0). The last two need root and unshare(1), else they are skipped; the masked
    /proc meets the pod's user, the missing user namespaces root (the only user such a namespace maps)."""
    job = grade_job()
    count = job["spec"]["completions"]
    index = str(next(i for i in range(count) if Shard(i, count).holds("ann", "9.1")))  # a pod with a unit to grade
    bare = tmp_path / "bin-without-bwrap"
    bare.mkdir()
    (bare / "sh").symlink_to(shutil.which("sh"))
    without = os.pathsep.join([str(Path(kata_exe()).parent), str(bare)])
    assert shutil.which("bwrap", path=without) is None
    done = pods.run(job, path=without, JOB_COMPLETION_INDEX=index)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "grading for credit needs an operating-system sandbox" in said, said
    assert "bubblewrap (bwrap) is not installed" in said
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0 or shutil.which("bwrap", path=pods.path) is None:
        pytest.skip("a masked /proc and no user namespaces are simulated with root's unshare(1)")
    masked = (unshare, "--mount", "--propagation", "private", "sh", "-c",
              'mount --bind /dev/null /proc/keys && exec "$@"', "-")
    pods.as_pod_user(job)
    done = pods.run(job, around=masked, JOB_COMPLETION_INDEX=index)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "Can't mount proc" in said and "/proc is masked" in said, said
    assert "procMount: Unmasked" in said and "hostUsers: false" in said
    pods.user = ()  # a user namespace mapping root alone: the pod's user is not in it
    no_namespaces = (unshare, "--user", "--map-root-user", "sh", "-c",
                     'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "-")
    done = pods.run(job, around=no_namespaces, JOB_COMPLETION_INDEX=index)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "cannot make a sandbox here" in said and "hostUsers: false" in said, said
    assert not list(pods.grades.rglob("results.jsonl")), "nothing graded"


def test_the_grading_pod_allows_bubblewrap_its_namespaces():
    """What bubblewrap needs in a pod (deploy/kubernetes/grade-job.yaml says why each)."""
    job, _ = documents("grade-job.yaml")
    pod = job["spec"]["template"]["spec"]
    assert pod["hostUsers"] is False, "a user namespace of the pod's own: procMount Unmasked needs it"
    assert pod["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert pod["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
    container = pod["containers"][0]["securityContext"]
    assert container["procMount"] == "Unmasked" and container["allowPrivilegeEscalation"] is False
    assert container["capabilities"] == {"drop": ["ALL"]}, "bubblewrap needs no capability: it is not setuid"


def test_the_jobs_sign_and_verify_with_one_secret_outside_the_volumes():
    job, _ = documents("grade-job.yaml")
    (merge,) = documents("merge-job.yaml")
    for each in (job, merge):
        pod = each["spec"]["template"]["spec"]
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"] if m["name"] in secrets}
        key = container_env(each)["KATA_GRADE_KEY_FILE"]
        (where,) = [path for path in mounts if key.startswith(path + "/")]
        assert secrets[mounts[where]["name"]] == "kata-grade-key" and mounts[where]["readOnly"]
        assert not any(where.startswith(m["mountPath"]) for m in pod["containers"][0]["volumeMounts"]
                       if m["name"] not in secrets), "the key is in no volume a pod writes"


def quantity_mib(text: str) -> float:
    """A Kubernetes memory quantity ("10Gi", "512Mi", "3G") in MiB."""
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?)?", text).groups()
    powers = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    return float(number) * powers.get(unit, 1) / 2**20


def test_the_pods_memory_holds_jobs_units_at_their_katas_limit():
    """--jobs units at once, each up to its kata's memory limit, its sandbox's /tmp and /dev/shm and its judge
    (the per-unit cgroup's limit, `cgroup.limit_bytes`), and `kata grade` itself: within the pod's limit, so
    that no student's memory can get the pod, and the other units in flight, killed."""
    job, _ = documents("grade-job.yaml")
    container = job["spec"]["template"]["spec"]["containers"][0]
    jobs = int(re.search(r"--jobs (\d+)", container["args"][0]).group(1))
    course = load_course(REPO)
    katas = [course.find(k) for k in container_env(job)["KATAS"].split(",")]
    unit_mib = max(cgroup.limit_bytes(k.memory_mb, isolation.TMPFS_MB) for k in katas) / 2**20
    resources = container["resources"]
    limit = quantity_mib(resources["limits"]["memory"])
    assert jobs * unit_mib + RESERVE_MB <= limit, (jobs, unit_mib, limit)
    assert quantity_mib(resources["requests"]["memory"]) == limit, "requested as limited: never evicted for memory"
    assert jobs <= float(resources["limits"]["cpu"]), "a unit per CPU"
    assert f"{jobs} x {int(unit_mib)} + {RESERVE_MB} MiB" in (KUBE / "grade-job.yaml").read_text(), \
        "the manifest's comment says the sum"


def test_the_volumes_are_shipped_and_the_grades_copied_out():
    """Every claim the Jobs mount is in volumes.yaml, ReadWriteMany (the shards' pods on many nodes at once);
    its files pod mounts both, so that the class goes in and the merged grades come out with `kubectl cp`."""
    shipped = {d["metadata"]["name"]: d for d in documents("volumes.yaml") if d["kind"] == "PersistentVolumeClaim"}
    job, _ = documents("grade-job.yaml")
    (merge,) = documents("merge-job.yaml")
    (files,) = [d for d in documents("volumes.yaml") if d["kind"] == "Pod"]
    for pod in (job["spec"]["template"]["spec"], merge["spec"]["template"]["spec"], files["spec"]):
        for volume in pod["volumes"]:
            if "persistentVolumeClaim" in volume:
                claim = shipped[volume["persistentVolumeClaim"]["claimName"]]
                assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    mounts = {m["name"]: m["mountPath"] for m in files["spec"]["containers"][0]["volumeMounts"]}
    assert mounts == {"class": "/class", "grades": "/grades"}
    assert "exec kata grade merge /grades/merged " in merge["spec"]["template"]["spec"]["containers"][0]["args"][0]
    for text in ("kubectl cp submissions/. kata-files:/class", "kubectl cp kata-files:/grades/merged ./grades"):
        assert text in (KUBE / "volumes.yaml").read_text()
    assert "kubectl cp kata-files:/grades/merged ./grades" in (KUBE / "merge-job.yaml").read_text()
    policy = documents("grade-job.yaml")[1]
    assert files["metadata"]["labels"].items() >= policy["spec"]["podSelector"]["matchLabels"].items(), "no network"


def test_the_container_file_installs_the_pinned_cpu_torch_and_the_whole_course():
    parser = DockerfileParser(fileobj=open(REPO / "deploy" / "Containerfile", "rb"))  # noqa: SIM115
    steps = [(i["instruction"], i["value"]) for i in parser.structure if i["instruction"] != "COMMENT"]
    python = re.search(r'requires-python = ">=(\d+\.\d+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert parser.baseimage.startswith(f"python:{python}")
    copied = {source for kind, value in steps if kind == "COPY" for source in shlex.split(value)[:-1]}
    assert {*COURSE_PARTS, "kata", "pyproject.toml", "constraints.txt", "README.md"} <= copied
    assert all((REPO / source).exists() for source in copied), "every COPY source is in the build context"
    runs = [value for kind, value in steps if kind == "RUN"]
    install = next(r for r in runs if "pip install" in r)
    assert "-c constraints.txt" in install and "download.pytorch.org/whl/cpu" in install
    assert parser.envs["KATA_COURSE"] == "/course" and [v for k, v in steps if k == "WORKDIR"] == ["/course"]
    user = [v for k, v in steps if k == "USER"]
    assert user and user[-1] not in ("root", "0"), "graders do not run as root"
    # bubblewrap, without which `kata grade` refuses to grade, installed before the image drops root.
    (bubblewrap,) = [i for i, (k, v) in enumerate(steps) if k == "RUN" and "apt-get install" in v
                     and "bubblewrap" in v.split()]
    assert bubblewrap < next(i for i, (k, _) in enumerate(steps) if k == "USER")
    # What runs after the build (the entry point) is kata itself: nothing fetched at grading time.
    assert json.loads(next(v for k, v in steps if k == "ENTRYPOINT")) == ["kata"]
    job, _ = documents("grade-job.yaml")
    assert str(job["spec"]["template"]["spec"]["securityContext"]["runAsUser"]) == user[-1]
