#!/usr/bin/env bash
# HERE: cut staging sets into the per-call folders that benchmarks/gpu/place-parts.sh places on the
# GPU machine. A device call carries at most 64 MiB *including* the checkout (~32 MB), so each
# folder .stage/cNN holds one piece of at most 30 MiB; a set's sha256 rides with its last piece.
#
#   benchmarks/gpu/split-parts.sh STAGE PREFIX=FILE [PREFIX=FILE ...]
#   e.g. split-parts.sh .stage pp=<(cat .stage/p*/part.*) rr=.stage/ray.tar
#
# PREFIX is what place-parts.sh dispatches on: pp (the vLLM payload), ww (the wheelhouse tar),
# rr (the Ray tar). Then carry each folder in its own call: carry [".stage/cNN"].
set -euo pipefail
stage=${1:?usage: split-parts.sh STAGE PREFIX=FILE ...}; shift
sha_name() { case $1 in pp) echo payload.sha256 ;; ww) echo wh.sha256 ;; rr) echo ray.sha256 ;; *) echo "$1.sha256" ;; esac; }
n=$(find "$stage" -maxdepth 1 -name 'c[0-9][0-9]' | wc -l)
for set in "$@"; do
  prefix=${set%%=*}; file=${set#*=}
  tmp=$(mktemp -d); cat "$file" > "$tmp/whole"
  sha256sum "$tmp/whole" | cut -c1-64 > "$tmp/$(sha_name "$prefix")"
  ( cd "$tmp" && split -b 30M -d whole "$prefix." )
  pieces=("$tmp/$prefix".*)
  for piece in "${pieces[@]}"; do
    n=$((n + 1)); d=$(printf '%s/c%02d' "$stage" "$n"); mkdir -p "$d"; mv "$piece" "$d/"
  done
  mv "$tmp/$(sha_name "$prefix")" "$d/"; rm -rf "$tmp"
  echo "$prefix: ${#pieces[@]} pieces, sha256 $(cat "$d/$(sha_name "$prefix")") (last in $d)"
done
