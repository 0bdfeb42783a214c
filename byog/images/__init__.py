"""The standard eval image, runtimes that start a server, and the environment fingerprint."""
