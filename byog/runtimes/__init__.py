"""Server runtimes: how a vLLM server is started, watched, recorded and torn down (local process, docker container, an
endpoint someone runs, multi-node groups)."""
