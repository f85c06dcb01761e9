"""Generators of hostile inputs for `test_hostile_fuzz.py` (issue #24): hypothesis strategies
for every file `rightsize` reads, as an attacker or a careless hand-editor would write them.

- names that break out of shell, Python, YAML, TOML and PromQL quoting (each payload tries to
  create a file called `pwned` in the working folder, or to add a key named `pwned`);
- numbers that are out of range or not numbers (0, negatives, 1e-12, 1e300, NaN, infinity,
  400-digit integers, strings, durations without a unit, `8k`), huge lists, deep nesting,
  YAML alias bombs and 5,000 unknown keys;
- spec, fleet, prices, calibration, profile (`calibrate`), monitor capture and plan JSON
  documents built from the bundled examples and mutated with the above.

Documents are returned as text where the hostility is textual (deep nesting, alias bombs), so
the strategies build them with `render_yaml`, which splices raw YAML into a safe dump.
These are new generators: `spec_fuzz.py` (issue #15) is not reused.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
MARK = "pwned"  # every injection payload tries to create a file or key of this name

# Fragments that close a quote or a line and then run `touch pwned` in some language.
SHELL = [
    "x$(touch pwned)",
    "x`touch pwned`",
    "x;touch pwned;",
    "x\ntouch pwned\n",
    "x' ; touch pwned ; '",
    'x" ; touch pwned ; "',
    "x && touch pwned #",
    "x|touch pwned",
    "$(touch${IFS}pwned)",
    "x\r\ntouch pwned",
    "x}\ntouch pwned\n${y",
    "${x:-$(touch pwned)}",
]
PYTHON = [
    'x"+__import__("os").system("touch pwned")+"',
    "x'+__import__('os').system('touch pwned')+'",
    'x"""\n__import__("os").system("touch pwned")\n"""',
    "x\n__import__('os').system('touch pwned')\n#",
    "{__import__('os').system('touch pwned')}",
    'x\\", __import__("os").system("touch pwned"), "',
]
YAMLISH = [
    "x\npwned: 1",
    "x: pwned",
    "&a x",
    "*a",
    '!!python/object/apply:os.system ["touch pwned"]',
    "- pwned",
    "x # pwned",
    '"x"\n  pwned: 1',
    "{pwned: 1}",
    "x\n---\npwned: 1",
    "x\n[pwned]\ny = 1",  # TOML table
    'x"\npwned = 1\n"',  # TOML key
]
PROMQL = [
    'x"} or vector(1) # pwned',
    'x",pwned="1',
    'x\\"} or on() vector(pwned)',
    "x'} or pwned{a='",
    "x`pwned`",
]
ODD = [
    "",
    " ",
    "-",
    "..",
    "../../pwned",
    "/tmp/pwned",
    "X_Y.Z",
    "a" * 300,
    "\u00e9\u4e2d\U0001f600",
    "\x00nul",
    "\t\v\f",
    "-rf",
    "--help",
    "%x-%j",
    "\\",
]
FRAGMENTS = SHELL + PYTHON + YAMLISH + PROMQL + ODD

hostile_names = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.lists(st.sampled_from(FRAGMENTS + ["llama", "-", "job"]), min_size=2, max_size=3).map("".join),
)

# Values put where a number, duration, size or rate goes.
BIG_INT = int("9" * 400)
BAD_NUMBERS: list[Any] = [
    0,
    -1,
    -0.0,
    1e-12,
    -1e-12,
    1e300,
    -1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    BIG_INT,
    -BIG_INT,
    "many",
    "",
    "50",
    50,
    "8k",
    "1e-9",
    "1e400",
    "-5s",
    "0s",
    True,
    None,
    [],
    {},
    [1, 2],
    "@@DEEP@@",
    "@@BOMB@@",
]
bad_numbers = st.sampled_from(BAD_NUMBERS)

# Raw YAML spliced in for markers (what a dumper cannot produce).
DEEP_YAML = "[" * 3000 + "]" * 3000
DEEP_MAP_YAML = "{a: " * 1500 + "1" + "}" * 1500
BOMB_YAML = (
    "[&a [x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
    "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c], "
    "&e [*d, *d, *d, *d, *d, *d, *d, *d, *d], &f [*e, *e, *e, *e, *e, *e, *e, *e, *e], "
    "&g [*f, *f, *f, *f, *f, *f, *f, *f, *f], &h [*g, *g, *g, *g, *g, *g, *g, *g, *g], "
    "&i [*h, *h, *h, *h, *h, *h, *h, *h, *h]]"
)
MARKERS = {"@@DEEP@@": DEEP_YAML, "@@DEEPMAP@@": DEEP_MAP_YAML, "@@BOMB@@": BOMB_YAML}
DEEP_JSON = "[" * 100_000 + "]" * 100_000
SECRET = "hostile-secret-7f3a9c1e"  # planted in files that are not what the tool expects
CREDENTIALS = f"[default]\naws_access_key_id = AKIAHOSTILE\naws_secret_access_key = {SECRET}\n"
CREDENTIALS_YAML = f"aws_access_key_id: AKIAHOSTILE\naws_secret_access_key: {SECRET}\n"

# Fast bases for hostile specs (each plans in about a second with one accelerator).
SPEC_BASES = [
    "examples/llama3-8b-lora-weekly.yaml",
    "examples/llama2-7b-batch1.yaml",
    "examples/llama3-70b-chat-serving.yaml",
    "examples/resnet50-imagenet-train.yaml",
    "examples/resnet50-video-inference.yaml",
    "examples/dlrm-criteo-serving.yaml",
    "examples/dlrm-criteo-train.yaml",
    "examples/gpt3-175b-megatron.yaml",
    "tests/data/monitor/serving.yaml",
]


def render_yaml(doc: Any) -> str:
    """A YAML dump of `doc` with every marker string replaced by its raw YAML."""
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000)
    for marker, raw in MARKERS.items():
        text = text.replace(f"'{marker}'", raw).replace(marker, raw)
    return text


@functools.cache
def _base(rel: str) -> Any:
    return yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))


def one_accelerator(spec: dict[str, Any]) -> dict[str, Any]:
    """Keep plans fast: the first listed accelerator only."""
    targets = spec.get("targets")
    if isinstance(targets, dict) and isinstance(targets.get("accelerators"), list):
        targets["accelerators"] = targets["accelerators"][:1] or ["h100-sxm"]
    return spec


def base_spec(rel: str) -> dict[str, Any]:
    return one_accelerator(copy.deepcopy(_base(rel)))


def leaves(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every scalar and list in a document (dict keys and list indexes)."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        if isinstance(value, dict):
            out += leaves(value, (*prefix, key))
        else:
            out.append(((*prefix, key), value))
            if isinstance(value, list):
                out += leaves(value, (*prefix, key))
    return out


def set_path(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def delete_path(doc: Any, path: tuple[Any, ...]) -> None:
    node = doc
    for key in path[:-1]:
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    elif isinstance(node, list) and node:
        node.pop(path[-1] if path[-1] < len(node) else -1)


def _is_number_like(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and bool(value) and value[0].isdigit()


@st.composite
def mutate(draw: st.DrawFn, doc: Any, max_ops: int = 3, names: bool = True) -> Any:
    """One to `max_ops` hostile edits of `doc` (in place; returned): a number-like leaf replaced
    by a bad number, a string leaf by a hostile name, a leaf deleted or retyped, a list made
    huge, or thousands of unknown keys."""
    for _ in range(draw(st.integers(1, max_ops))):
        all_leaves = leaves(doc)
        if not all_leaves:
            break
        op = draw(st.sampled_from(["number", "name", "delete", "retype", "huge", "unknown"]))
        numeric = [p for p, v in all_leaves if _is_number_like(v)]
        strings = [p for p, v in all_leaves if isinstance(v, str) and not _is_number_like(v)]
        if op == "number" and numeric:
            set_path(doc, draw(st.sampled_from(numeric)), draw(bad_numbers))
        elif op == "name" and strings and names:
            set_path(doc, draw(st.sampled_from(strings)), draw(hostile_names))
        elif op == "delete":
            delete_path(doc, draw(st.sampled_from([p for p, _ in all_leaves])))
        elif op == "retype":
            value = draw(st.sampled_from([{"a": 1}, [[]], "text", 3.5, None, "@@DEEPMAP@@"]))
            set_path(doc, draw(st.sampled_from([p for p, _ in all_leaves])), value)
        elif op == "huge":
            path, value = draw(st.sampled_from(all_leaves))
            plain = not isinstance(value, list | dict) and not str(value).startswith("@@")
            set_path(doc, path, [value if plain else "x"] * 5000)
        elif op == "unknown" and isinstance(doc, dict):
            doc.update({f"unknown_key_{i}": i for i in range(draw(st.sampled_from([1, 5000])))})
    return doc


@st.composite
def hostile_spec(draw: st.DrawFn, bases: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """(base example, spec): a bundled example with a hostile name and/or hostile values."""
    rel = draw(st.sampled_from(bases or SPEC_BASES))
    spec = base_spec(rel)
    if draw(st.booleans()):
        spec["name"] = draw(hostile_names)
    if draw(st.booleans()) or "name" not in spec:
        draw(mutate(spec))
    return rel, spec


@st.composite
def named_spec(draw: st.DrawFn, bases: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """A bundled example whose only change is a hostile name: it still plans, so its exports
    carry the name into every file."""
    rel = draw(st.sampled_from(bases or SPEC_BASES))
    spec = base_spec(rel)
    spec["name"] = draw(hostile_names)
    return rel, spec


# ---- fleet ----------------------------------------------------------------------------------

OUTSIDE_SPECS = ["../outside/valid.yaml", "link-valid.yaml"]  # valid specs outside the fleet's folder
FLEET_SPEC_PATHS = [
    "member.yaml",  # a copy of a valid spec next to the fleet file
    "../outside/secret.txt",
    "../outside/secret.yaml",
    "../outside/link.yaml",
    "link-out.yaml",  # a symlink in the fleet's folder to the secret outside it
    *OUTSIDE_SPECS,
    "../../../../../../etc/passwd",
    "/etc/passwd",
    "/dev/zero",
    ".",
    "missing.yaml",
    "\x00.yaml",
]


@st.composite
def fleet_workload(draw: st.DrawFn) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if draw(st.booleans()):
        entry["spec"] = draw(st.sampled_from(FLEET_SPEC_PATHS[:1] * 4 + FLEET_SPEC_PATHS))
    else:
        _, inline = draw(
            hostile_spec(["examples/fleet-2027/nightly-batch.yaml", "tests/data/monitor/serving.yaml"])
        )
        entry["spec"] = draw(st.sampled_from([inline, "@@BOMB@@", "@@DEEPMAP@@"]))
    if draw(st.booleans()):
        entry["name"] = draw(hostile_names)
    extras = {
        "priority": st.one_of(st.integers(-5, 200), bad_numbers),
        "start": st.sampled_from(["2027-02", "2026-13", "0000-01", "2027-02-30", -1, "@@DEEP@@"]),
        "end": st.sampled_from(["2027-03", "2026-01", "9999-12", 1e300]),
        "load": st.sampled_from([{"hourly": [1.0] * 24}, {"hourly": [-1.0] * 24}, {"hourly": [0.0] * 24}, {"hourly": [1e300] * 24}, {"hourly": [1.0] * 5000}]),
        "growth_per_year": bad_numbers,
        "batch": st.sampled_from([{"requests": "2M", "window": "22:00-06:00"}, {"requests": -5, "window": "25:00-99:00"}, {"requests": "1e300", "window": "x"}]),
        "turnaround": st.sampled_from(["1s", "0s", "-1h", 1, "24h"]),
    }  # fmt: skip
    for key in draw(st.lists(st.sampled_from(sorted(extras)), max_size=3, unique=True)):
        entry[key] = draw(extras[key])
    return entry


@st.composite
def hostile_fleet(draw: st.DrawFn) -> dict[str, Any]:
    fleet: dict[str, Any] = {
        "kind": "fleet",
        "name": draw(st.one_of(st.just("fuzz-fleet"), hostile_names)),
        "start": "2027-01",
        "horizon_months": draw(st.sampled_from([3, 3, 3, 0, -1, 1e300, BIG_INT, "x"])),
        "workloads": draw(st.lists(fleet_workload(), min_size=1, max_size=2)),
        "policy": {
            "capacity": ["reserved_1y", "on_demand"],
            "utilisation_target": draw(st.sampled_from([0.85, 0.85, 1e-9, 0, 1.5, -0.5, float("nan")])),
            "safety_margin": draw(st.sampled_from([0.1, 0.1, -1, 1e300, float("inf")])),
        },
    }
    return fleet


# ---- prices, calibration, profiles ----------------------------------------------------------

PRICE_KEYS = ["on_demand_usd_per_gpu_hour", "reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour", "spot_usd_per_gpu_hour"]  # fmt: skip
PRICE_IDS = ["h100-sxm", "h200-sxm", "hgx-h100", "a100-sxm-80gb"]


@st.composite
def hostile_prices(draw: st.DrawFn) -> str:
    """Text of a `--prices` file: real ids with bad numbers, hostile ids, junk shapes."""
    shape = draw(st.sampled_from(["numbers", "numbers", "ids", "junk"]))
    if shape == "junk":
        return draw(st.sampled_from([CREDENTIALS, CREDENTIALS_YAML, "[" * 5000, "- 1\n- 2\n", "a: &a [*a]\n", "\x00\xff", render_yaml({"h100-sxm": "@@BOMB@@"}), "h100-sxm: {on_demand_usd_per_gpu_hour: " + "9" * 400 + "}\n"]))  # fmt: skip
    doc: dict[str, Any] = {}
    for acc in draw(st.lists(st.sampled_from(PRICE_IDS), min_size=1, max_size=3, unique=True)):
        if acc.startswith("hgx"):
            doc[acc] = {"capex_usd": draw(bad_numbers)}
        else:
            doc[acc] = {k: draw(st.one_of(bad_numbers, st.just(2.2))) for k in draw(st.lists(st.sampled_from(PRICE_KEYS), min_size=1, max_size=2, unique=True))}  # fmt: skip
    if draw(st.booleans()):
        doc["power_usd_per_kwh"] = draw(bad_numbers)
    if shape == "ids":
        doc[draw(hostile_names)] = {"on_demand_usd_per_gpu_hour": 1.0}
    return render_yaml(doc)


HW_FIGURES = ["gemm_fraction", "attention_fraction", "memory_bw_fraction", "scaleup_bw_fraction", "scaleout_bw_fraction", "scaleout_latency_s", "scaleup_latency_s", "kernel_overhead_s", "peak_flops_per_s"]  # fmt: skip


@st.composite
def hostile_calibration(draw: st.DrawFn) -> str:
    """Text of a `--calibration` file (JSON)."""
    shape = draw(st.sampled_from(["values", "values", "values", "junk"]))
    if shape == "junk":
        return draw(st.sampled_from([DEEP_JSON, CREDENTIALS, CREDENTIALS_YAML, '{"overrides": ' + "[" * 5000 + "]" * 5000 + "}", '{"overrides": {"h100-sxm": {"gemm_fraction": ' + "9" * 5000 + "}}}", '{"overrides": []}', "null", '{"overrides": {"h100-sxm": {"gemm_fraction": NaN}}}']))  # fmt: skip
    acc = draw(st.sampled_from(["h100-sxm", "h100-sxm", "a100-sxm-80gb", "l40s", "no-such-gpu"]))
    figures = draw(st.dictionaries(st.sampled_from(HW_FIGURES), st.one_of(bad_numbers, st.sampled_from([1e-9, 0.999, 1.0, 5.0, 1e9])), min_size=1, max_size=3))  # fmt: skip
    figures = {k: (None if isinstance(v, str) and v.startswith("@@") else v) for k, v in figures.items()}
    text = json.dumps({"kind": "rightsize-calibration", "overrides": {acc: figures}}, default=str)
    return text.replace("NaN", draw(st.sampled_from(["NaN", "1e999", "-1e999"])))


def comms_records() -> list[dict[str, Any]]:
    recs = []
    for tier, n, bw in (("intra_node", 8, 150e9), ("inter_node", 16, 20e9)):
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            for b in (2**16, 2**20, 2**24):
                recs.append({"type": "result", "kind": "comms", "key": f"comms:{op}:{b}:{n}:{tier}", "status": "ok", "op": op, "bytes": b, "world_size": n, "tier": tier, "time_s": {"median": 1e-5 + 2 * b / bw}})  # fmt: skip
    return recs


def micro_records() -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = []
    for m in (256, 512, 1024):
        recs.append({"type": "result", "kind": "gemm", "status": "ok", "m": m, "n": m, "k": m, "dtype": "fp32", "flops_per_s": 5e10, "time_s": {"median": 2 * m**3 / 5e10}})  # fmt: skip
    recs.append({"type": "result", "kind": "membw", "status": "ok", "bytes": 2**26, "bytes_per_s": 1e10, "time_s": {"median": 2**26 / 1e10}})  # fmt: skip
    return recs


@st.composite
def hostile_profile(draw: st.DrawFn) -> str:
    """Text of a profile (JSON Lines) for `calibrate`: a comms or CPU micro-benchmark profile
    with hostile numbers, deleted keys, garbage lines and deep nesting."""
    gpu = draw(st.booleans())
    header = {"type": "header", "schema_version": 1, "kind": "comms" if gpu else "micro", "created": "2026-11-23T00:00:00+00:00", "config": {"backend": "nccl" if gpu else "gloo", "device": "cuda" if gpu else "cpu"}, "environment": {"gpu_name": "NVIDIA H100 80GB HBM3"} if gpu else {"cpu_count_physical": 8, "host_memory_bytes": 2**35}}  # fmt: skip
    records: list[Any] = [header, *(comms_records() if gpu else micro_records())]
    draw(mutate(records, max_ops=4))
    lines = [json.dumps(r, default=str) for r in records]
    junk = draw(st.sampled_from([None, None, DEEP_JSON, "not json", CREDENTIALS, "9" * 5000, "{}", "[]"]))
    if junk is not None:
        lines.insert(draw(st.integers(0, len(lines))), junk)
    return "\n".join(lines) + "\n"


JSON_MARKERS = {
    '"@@DEEP@@"': "[" * 3000 + "]" * 3000,
    '"@@DEEPMAP@@"': '{"a": ' * 1500 + "1" + "}" * 1500,
    '"@@BOMB@@"': json.dumps(["x" * 1000] * 2000),
}


def render_json(doc: Any) -> str:
    """JSON of `doc` (NaN and infinities as Python writes them), markers made raw."""
    text = json.dumps(doc, default=str)
    for marker, raw in JSON_MARKERS.items():
        text = text.replace(marker, raw)
    return text


# Parts of a plan that export and monitor read (a mutation elsewhere changes nothing).
PLAN_PARTS = ["name", "model", "kind", "schema_version", "best", "sizing", "spec", "scenario", "workloads", "pools", "quotas", "policy", "start", "horizon_months"]  # fmt: skip


@st.composite
def hostile_plan(draw: st.DrawFn, plan: dict[str, Any]) -> dict[str, Any]:
    """A hand-edited plan: a read part of it renamed, retyped, deleted or given bad numbers."""
    plan = copy.deepcopy(plan)
    parts = [k for k in PLAN_PARTS if k in plan]
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(parts))
        value = plan.get(key)
        roll = draw(st.sampled_from(["subtree", "subtree", "subtree", "replace", "delete"]))
        if roll == "subtree" and isinstance(value, dict | list) and value:
            draw(mutate(value))
        elif roll == "delete":
            plan.pop(key, None)
        else:
            plan[key] = draw(st.one_of(hostile_names, bad_numbers))
    return plan


@st.composite
def hostile_capture(draw: st.DrawFn, capture: dict[str, Any]) -> dict[str, Any]:
    """A monitor capture (`--from`) with a bad window, bad sample values or a bad shape."""
    cap = copy.deepcopy(capture)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["window", "window", "values", "values", "shape", "header"]))
        queries = cap.get("queries") if isinstance(cap.get("queries"), dict) else {}
        if op == "window":
            key = draw(st.sampled_from(["start_s", "end_s", "step_s"]))
            late = float(capture["end_s"]) + 3600  # after the end: a reversed window
            cap[key] = draw(st.one_of(bad_numbers, st.sampled_from([late, -1e15, 1e15, 1e-9])))
        elif op == "values":
            payloads = [
                q for q in queries.values() if isinstance(q, dict) and isinstance(q.get("data"), dict)
            ]
            results = [
                r
                for q in payloads
                if isinstance(q["data"].get("result"), list)
                for r in q["data"]["result"]
                if isinstance(r, dict) and isinstance(r.get("values"), list) and r["values"]
            ]
            if results:
                series = draw(st.sampled_from(results))
                bad = draw(st.sampled_from(["NaN", "-1", "-1e300", "1e300", "+Inf", "x", None, 0, "0"]))
                how = draw(st.sampled_from(["all", "one", "time"]))
                for i, point in enumerate(series["values"]):
                    if (how == "all" or i == 0) and isinstance(point, list) and len(point) == 2:
                        point[0 if how == "time" else 1] = (
                            bad if how != "time" else draw(st.sampled_from([None, "x", -1e300, 1e300]))
                        )
        elif op == "shape" and queries:
            query = draw(st.sampled_from(sorted(queries)))
            queries[query] = draw(st.sampled_from([[], "x", {"status": "success", "data": []}, {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "1"]}]}}, {"status": "success", "data": {"result": [{"values": [[1]]}]}}, {"status": "success", "data": {"result": [{"metric": [], "values": {}}]}}, {"status": "error"}, "@@DEEP@@"]))  # fmt: skip
        else:
            cap[draw(st.sampled_from(["kind", "version", "selectors", "queries"]))] = draw(
                st.one_of(bad_numbers, hostile_names)
            )
    return cap
