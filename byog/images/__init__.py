"""Images and what a server loads: building and inspecting byog's images (tags, build context, the
host-Python mount), the Docker engine client, model preparation, the vLLM entry point and the
environment fingerprint. Runtimes that start a server live in ``byog.runtimes``."""
