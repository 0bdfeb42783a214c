"""Bounds on every bundle input verify parses, so a hostile file fails one check in one line.

Why: a signed bundle can still be hostile (a trusted key can be stolen), and every parser has an
input that costs memory or time out of proportion to its size on disk: a YAML alias bomb, a
3 kB plan whose matrix expands to 200³ points, a 700 kB parquet file of 20 M rows, a parquet
cell that decompresses to 200 MB, JSON nested 100,000 deep. Each is refused here from sizes
and metadata before anything big is built:

- per-file size caps by kind (``SIZE_CAPS``, first matching glob wins; files verify never
  parses, like logs and plots, only have the archive's member cap);
- JSON: at most ``max_json_depth`` levels, integers of at most 20 digits, no NaN/Infinity
  and no float that overflows to infinity (Python's own 4,300-digit cap on int() keeps
  parsing a long number cheap);
- YAML: at most ``max_yaml_nodes`` nodes and ``max_yaml_depth`` levels with every alias
  expanded, measured on the composed node graph before anything is built (the alias bomb's
  billions of nodes cost nothing to count), no alias that refers to itself, one document,
  finite numbers (``.nan``/``.inf`` refused). Anchors and aliases as such are allowed: byog's
  own profiles use them (and merge keys), so a bundle of such a plan carries them;
- parquet: from the footer alone, at most ``max_parquet_rows`` rows per file and
  ``max_total_rows`` in the bundle, every column chunk at most ``max_column_bytes``
  decompressed (which caps a single cell), the file at most ``max_parquet_decoded_bytes``
  decompressed, all parquet files together at most ``max_total_decoded_bytes``; string and
  binary cells at most ``max_cell_bytes`` each (read one string column at a time);
- a plan expands to at most ``max_plan_points`` bench points, counted without expanding; the
  bundle holds at most ``max_bench_points`` bench point files and ``max_document_bytes`` of JSON
  and YAML in all, both counted from the archive before anything is parsed.

The content checks also run in a child process under memory and CPU limits
(``byog.bundles.isolate``): these caps make hostile input fail fast with a clear sentence, the
limits catch whatever a cap missed.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import yaml

from byog.core.errors import CheckFailed

KiB = 1024
MiB = 1024 * 1024

# glob -> cap in bytes; files a glob does not name keep the archive's member cap.
SIZE_CAPS: tuple[tuple[str, int], ...] = (
    ("manifest.intoto.json", 4 * MiB),
    ("manifest.intoto.json.sig", 8 * KiB),
    ("signer.json", 16 * KiB),
    ("plan.yaml", 256 * KiB),
    ("plan-pin.json", 16 * KiB),
    ("attestations.intoto.jsonl", 2 * MiB),  # rebuilt lines travel back from verify's child (4 MiB of output)
    ("claims.yaml", 256 * KiB),
    ("env.json", 1 * MiB),
    ("servers/*/server.json", 1 * MiB),
    ("bench/*/*.json", 1 * MiB),
    ("evals/*/*/results.json", 4 * MiB),
    ("reproduction.json", 4 * MiB),
    ("calibration.json", 1 * MiB),
    ("summary.json", 32 * MiB),
    ("report.md", 8 * MiB),
    ("*.parquet", 64 * MiB),
)


@dataclass(frozen=True)
class Caps:
    max_json_depth: int = 32
    max_yaml_depth: int = 32
    max_yaml_nodes: int = 200_000  # after alias expansion
    max_int_digits: int = 20
    max_parquet_rows: int = 1_000_000
    max_total_rows: int = 4_000_000
    max_parquet_columns: int = 256
    max_row_groups: int = 4096
    max_column_bytes: int = 64 * MiB  # one column of one file, decompressed: also caps one cell
    max_parquet_decoded_bytes: int = 128 * MiB  # one file, decompressed
    max_total_decoded_bytes: int = 512 * MiB  # every parquet file of the bundle, decompressed
    max_cell_bytes: int = 1 * MiB  # one string or binary cell
    max_plan_points: int = 4096
    # bench points a bundle holds (bench/**/*.parquet), counted from member names before anything
    # is read: ~9x the largest built-in profile (kimi-k3-gb300, full tier: 117 server-points).
    max_bench_points: int = 1024
    # JSON and YAML the bundle holds, summed, before any is parsed (a parsed document costs several
    # times its size, and every one is kept for the later checks); an honest full-tier kimi-k3-gb300
    # bundle holds a few MB, most of it summary.json.
    max_document_bytes: int = 64 * MiB
    max_yaml_doc_bytes: int = 1 * MiB  # YAML given on the command line (--claims, --policy)


CAPS = Caps()


# One regex for every glob (first match wins, as in SIZE_CAPS): the archive asks once per member.
_SIZE_CAP_RE = re.compile(
    "|".join(f"(?P<g{i}>{fnmatch.translate(pattern)})" for i, (pattern, _) in enumerate(SIZE_CAPS))
)


def size_cap(name: str) -> int | None:
    found = _SIZE_CAP_RE.match(name)
    return SIZE_CAPS[int(found.lastgroup[1:])][1] if found and found.lastgroup else None


def check_size(name: str, size: int) -> None:
    cap = size_cap(name)
    if cap is not None and size > cap:
        raise CheckFailed(f"{name} is {size:,} bytes, over the {_human(cap)} cap for this kind of file")


def _human(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


# --- JSON -------------------------------------------------------------------------------------


def _walk(value: Any, name: str, caps: Caps, max_depth: int) -> None:
    """Depth, integer size and finiteness of a parsed value, iteratively (deep input cannot overflow the stack)."""
    limit = 10**caps.max_int_digits
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise CheckFailed(f"{name} holds {item}, which is not a finite number")
            continue
        elif isinstance(item, int) and not isinstance(item, bool):
            if abs(item) >= limit:
                raise CheckFailed(f"{name} holds an integer of more than {caps.max_int_digits} digits")
            continue
        else:
            continue
        if level > max_depth:
            raise CheckFailed(f"{name} is nested deeper than {max_depth} levels")
        stack.extend((child, level + 1) for child in children)


def load_json(data: bytes, name: str, caps: Caps = CAPS) -> Any:
    """Parse a bundle's JSON file within the bounds of the module doc; CheckFailed (one line) otherwise."""

    def parse_constant(text: str) -> Any:
        raise CheckFailed(f"{name} holds {text}, which is not JSON (NaN and infinities are not numbers here)")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckFailed(f"{name} is not UTF-8 (byte {err.start})") from None
    try:
        value = json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise CheckFailed(f"{name} is nested deeper than {caps.max_json_depth} levels") from None
    except ValueError as err:  # json.JSONDecodeError, and Python's 4300-digit limit on int()
        raise CheckFailed(f"{name} is not valid JSON: {str(err).splitlines()[0][:120]}") from None
    _walk(value, name, caps, caps.max_json_depth)
    return value


# --- YAML -------------------------------------------------------------------------------------

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_error(name: str, err: yaml.YAMLError) -> CheckFailed:
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark else ""
    return CheckFailed(
        f"{name} is not valid YAML{where}: {str(getattr(err, 'problem', '') or err).splitlines()[0][:120]}"
    )


def _expanded_shape(root: yaml.Node, name: str, caps: Caps) -> None:
    """Nodes and depth of the document with every alias expanded, computed on the composed graph
    (where an alias is the same node object, so this is linear in the file): an alias bomb's
    billions of nodes, a recursive alias and deep nesting are refused before anything is built."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            size[key], depth[key] = 1, 0
            continue
        children = (
            [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        )
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if size[key] > caps.max_yaml_nodes:
                raise CheckFailed(f"{name} expands to more than {caps.max_yaml_nodes:,} YAML nodes (an alias bomb?)")
            if depth[key] > caps.max_yaml_depth:
                raise CheckFailed(f"{name} is nested deeper than {caps.max_yaml_depth} levels")
            continue
        if key in size:
            continue  # an alias of a node already measured
        if key in on_path:
            raise CheckFailed(f"{name} holds a YAML alias that refers to itself")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)
        if len(on_path) > caps.max_yaml_depth + 1:
            raise CheckFailed(f"{name} is nested deeper than {caps.max_yaml_depth} levels")


def load_yaml(data: bytes | str, name: str, caps: Caps = CAPS) -> Any:
    """Parse YAML (one document) whose alias-expanded size and depth are within caps, with finite numbers.

    Anchors and aliases themselves are allowed (byog's own profiles use them, merge keys too);
    what they expand to is what is bounded.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise CheckFailed(f"{name} is not UTF-8 (byte {err.start})") from None
    else:
        text = data
    try:
        root = yaml.compose(text, Loader=_BaseLoader)
    except yaml.YAMLError as err:  # more than one document is a ComposerError too
        raise _yaml_error(name, err) from None
    except RecursionError:
        raise CheckFailed(f"{name} is nested deeper than {caps.max_yaml_depth} levels") from None
    if root is None:
        return None
    _expanded_shape(root, name, caps)
    try:
        value = yaml.load(text, Loader=_BaseLoader)  # a safe loader: CSafeLoader or SafeLoader
    except yaml.YAMLError as err:
        raise _yaml_error(name, err) from None
    _walk(value, name, caps, caps.max_yaml_depth + 1)
    return value


# --- parquet ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParquetShape:
    rows: int
    decoded_bytes: int  # sum of the column chunks' decompressed sizes, as the footer states them


def check_parquet(path: Path, name: str, caps: Caps = CAPS) -> ParquetShape:
    """Rows, columns, row groups and decompressed sizes from the footer, each within its cap.

    The footer is attacker-written; a page larger than its chunk's stated size is still caught
    by the memory limit of the checking process. String/binary cells are checked by
    ``check_parquet_cells`` (which reads those columns).
    """
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as err:  # any pyarrow error means unreadable
        raise CheckFailed(
            f"{name} is not a readable parquet file: "
            f"{str(err).splitlines()[0][:120] if str(err) else type(err).__name__}"
        ) from None
    if meta.num_rows > caps.max_parquet_rows:
        raise CheckFailed(f"{name} has {meta.num_rows:,} rows, over the cap of {caps.max_parquet_rows:,}")
    if meta.num_columns > caps.max_parquet_columns:
        raise CheckFailed(f"{name} has {meta.num_columns:,} columns, over the cap of {caps.max_parquet_columns}")
    if meta.num_row_groups > caps.max_row_groups:
        raise CheckFailed(f"{name} has {meta.num_row_groups:,} row groups, over the cap of {caps.max_row_groups}")
    per_column: dict[int, int] = {}
    total = 0
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        for column in range(row_group.num_columns):
            size = max(int(row_group.column(column).total_uncompressed_size), 0)
            per_column[column] = per_column.get(column, 0) + size
            total += size
            if per_column[column] > caps.max_column_bytes:
                path_in_schema = row_group.column(column).path_in_schema
                raise CheckFailed(
                    f"{name} column '{path_in_schema}' decompresses to more than {_human(caps.max_column_bytes)} (a "
                    "bomb?)"
                )
    if total > caps.max_parquet_decoded_bytes:
        raise CheckFailed(
            f"{name} decompresses to {total / MiB:.0f} MiB, over the {_human(caps.max_parquet_decoded_bytes)} cap"
        )
    return ParquetShape(rows=int(meta.num_rows), decoded_bytes=total)


def check_parquet_cells(path: Path, name: str, caps: Caps = CAPS) -> None:
    """Every string/binary cell (top-level columns) at most ``max_cell_bytes``; one column read at a time.

    A cell's length is the difference of consecutive offsets of the column's buffer (numpy; no
    pyarrow.compute, which costs a tenth of a second to import)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    text_columns = [
        f.name
        for f in schema
        if pa.types.is_string(f.type)
        or pa.types.is_large_string(f.type)
        or pa.types.is_binary(f.type)
        or pa.types.is_large_binary(f.type)
    ]
    for column in text_columns:
        chunks = pq.ParquetFile(path).read(columns=[column], use_threads=False).column(column).chunks
        for chunk in chunks:
            if len(chunk) == 0:
                continue
            # a string or binary array always carries its offsets buffer (buffers()[1])
            value_offsets = cast("pa.Buffer", chunk.buffers()[1])
            offsets = np.frombuffer(
                memoryview(value_offsets), dtype=np.int64 if "large" in str(chunk.type) else np.int32
            )
            offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
            longest = int(np.diff(offsets).max())
            if longest > caps.max_cell_bytes:
                raise CheckFailed(
                    f"{name} column '{column}' holds a cell of {longest:,} bytes, over the "
                    f"{_human(caps.max_cell_bytes)} cap"
                )


# --- plans ------------------------------------------------------------------------------------


def plan_point_count(plan: Any) -> int:
    """How many bench points ``expand_plan`` would make from a parsed plan.yaml, counted without
    making them: the sum over workloads of |ISL| x |OSL| x |loads| (an upper bound: a repeated
    value is measured once). Works on the raw mapping, before any model sees it."""
    if not isinstance(plan, dict) or not isinstance(plan.get("workloads"), list):
        return 0

    def count(value: Any) -> int:
        return len(value) if isinstance(value, list) else 1

    total = 0
    for workload in plan["workloads"]:
        if not isinstance(workload, dict):
            continue
        loads = next((workload[key] for key in ("batch_sizes", "concurrencies", "rates") if key in workload), None)
        if loads is None:
            continue  # agentic workloads expand to no bench point
        total += count(workload.get("isl")) * count(workload.get("osl")) * count(loads)
    return total


def check_plan_points(plan: Any, caps: Caps = CAPS) -> int:
    count = plan_point_count(plan)
    if count > caps.max_plan_points:
        raise CheckFailed(f"plan.yaml expands to {count:,} bench points, over the cap of {caps.max_plan_points:,}")
    return count
