"""Run directory layout, manifest, canonical JSON, pack/unpack, sign, verify, report."""
