# byog-eval:<version>-gpu — the standard eval image.
#
# The official vLLM OpenAI-compatible server image, pinned by digest, plus pinned lm-eval and
# byog. The entrypoint is vLLM's own `vllm serve`, unchanged: a server config's `args` pass
# straight through (`docker run IMAGE MODEL --tensor-parallel-size 4 ...`).
#
# The digest is bumped deliberately, never by a moving tag: change VLLM_BASE_IMAGE (tag AND
# digest, checked with `docker buildx imagetools inspect vllm/vllm-openai:<tag>`), rebuild, and
# record the new image digest in the plans that use it. Build: `byog image build --flavour gpu`
# (or `docker build --build-arg BYOG_VERSION=$(byog version) -t byog-eval:$(byog version)-gpu .`).
ARG VLLM_BASE_IMAGE=vllm/vllm-openai:v0.30.0@sha256:8a69ffad015f138d7170c4ddc429e230a3bc1c1719f67e14324749df200a4b90
FROM ${VLLM_BASE_IMAGE}
ARG VLLM_BASE_IMAGE
ARG BYOG_VERSION=unknown
ARG LM_EVAL_VERSION=0.4.13

# byog from this checkout (base install: the client side; vLLM is the image's own).
COPY pyproject.toml README.md /opt/byog-src/
COPY byog/ /opt/byog-src/byog/
RUN python3 -m pip install --no-cache-dir "lm-eval[api]==${LM_EVAL_VERSION}" "/opt/byog-src[docker]" \
 && rm -rf /opt/byog-src

LABEL byog.version="${BYOG_VERSION}" \
      byog.flavour="gpu" \
      byog.accelerator="gpu" \
      byog.base="${VLLM_BASE_IMAGE}" \
      org.opencontainers.image.base.name="${VLLM_BASE_IMAGE}" \
      org.opencontainers.image.title="byog standard eval image (GPU)" \
      org.opencontainers.image.version="${BYOG_VERSION}"
ENTRYPOINT ["vllm", "serve"]
