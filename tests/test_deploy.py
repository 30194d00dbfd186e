"""deploy/: the Kubernetes Jobs validated against Kubernetes' own schemas (kubernetes-validate), their
commands run here for real, and the grading container file parsed and checked for what it must hold."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from kubernetes_validate import validate

from tests.conftest import COURSE_PARTS, REPO, copy_course
from tests.test_cli import kata_exe
from tests.test_grade import reference, write

KUBE = REPO / "deploy" / "kubernetes"
KUBERNETES_VERSIONS = ["1.31.0", "1.37.0"]  # backoffLimitPerIndex: beta from 1.29, GA in 1.33


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((KUBE / name).read_text()) if d]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name", ["grade-job.yaml", "merge-job.yaml"])
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


def test_the_jobs_commands_grade_and_merge_a_class(tmp_path):
    """Each pod's command, run here as the Job would run it (the index in JOB_COMPLETION_INDEX, /class and
    /grades where the volumes would be), then the merge Job's: every student graded once, merged whole."""
    root = copy_course(tmp_path / "course")
    folder = tmp_path / "class"
    write(folder / "ann" / "9.1-softmax.py", reference(root, "9.1"))
    # Shapes right, values wrong: the checks of shapes and unchanged inputs count only beside one of values: 0.
    write(folder / "ben" / "9.1-softmax.py", "def softmax(x, dim=-1):\n    return x\n")
    grades = tmp_path / "grades"
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(tmp_path / "p.json"),
           "PATH": f"{Path(kata_exe()).parent}{os.pathsep}{os.environ['PATH']}"}

    def run(job: dict, **extra: str) -> subprocess.CompletedProcess:
        container = job["spec"]["template"]["spec"]["containers"][0]
        script = container["args"][0].replace("/class", str(folder)).replace("/grades", str(grades))
        return subprocess.run([*container["command"], script], env={**env, **container_env(job), **extra},
                              capture_output=True, text=True, timeout=300)

    job, _ = documents("grade-job.yaml")
    job["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] = "9.1"  # KATAS: a cheap assignment
    for index in range(job["spec"]["completions"]):
        done = run(job, JOB_COMPLETION_INDEX=str(index))
        assert done.returncode == 0, done.stderr[-2000:]
    (merge,) = documents("merge-job.yaml")
    done = run(merge)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((grades / "merged" / "grades.json").read_text())
    assert report["complete"] and {s["student"]: s["total"] for s in report["students"]} == {"ann": 10, "ben": 0}
    assert (grades / "merged" / "canvas.csv").read_text().splitlines()[0].endswith(',"Transformer katas, unit 9"')


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
    # What runs after the build (the entry point) is kata itself: nothing fetched at grading time.
    assert json.loads(next(v for k, v in steps if k == "ENTRYPOINT")) == ["kata"]
    job, _ = documents("grade-job.yaml")
    assert str(job["spec"]["template"]["spec"]["securityContext"]["runAsUser"]) == user[-1]
