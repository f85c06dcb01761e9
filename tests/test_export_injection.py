"""Issue 24: no injection through exported files. Hostile names (shell substitutions,
backticks, quotes, line breaks, `\"\"\"`, Python and YAML payloads, Unicode, long ones) put into
the plan dict (plan name, model name; fleet workload, queue, flavor and cohort names) come out
of every exported file as data only:

- Python (NeMo) parses, holds the name as one string constant, and runs under stub modules
  without creating the canary file; TOML (torchtitan) parses to the same keys with the name
  as the description's value;
- YAML parses to the expected objects and keys, every Kubernetes object name is an RFC 1035
  label, objects validate (Kubernetes OpenAPI / CRD schemas);
- container shell scripts run under bash with stub commands and never create the canary, and
  the stubs receive the name as one argument;
- promtool accepts the rules and the rule tests pass with the hostile model name;
- a name that cannot be made a Kubernetes name is refused with BadInput naming the rule.

Plans are planned once per module (`export_plans`); each example only edits the dict.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_kubernetes import CRD_FILES, _crd_schema, _validate

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.names import DNS_1035

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402

CANARY = "PWNED"
PAYLOADS = [
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"; touch {CANARY}",
    f"' ; touch {CANARY} ; '",
    f'" ; touch {CANARY} ; "',
    f"\ntouch {CANARY}\n",
    f"\r\ntouch {CANARY}",
    f'"""\n__import__("os").system("touch {CANARY}")\n"""',
    f"'''+__import__('os').system('touch {CANARY}')+'''",
    f'"+__import__("os").system("touch {CANARY}")+"',
    "\\",
    "\\n",
    "\u2028",
    "\u202e",
    "\x1b[2J",
    "\nkind: Secret\n",
    "\n---\napiVersion: v1\n",
    "#",
    '"}\nor vector(1)\n{x="',
    "]\n[injected]\nkey = 1\n",
    "{{ x }}",
    "${IFS}",
    "Llama-3 70B",
    "模型",
]
NAMES = st.lists(
    st.one_of(st.sampled_from(PAYLOADS), st.text(min_size=1, max_size=12)), min_size=1, max_size=5
).map("".join)
LONG = st.text(
    alphabet=st.sampled_from(["a", "Z", "$", "(", ")", "'", '"', "\n", "-", "9"]), min_size=200, max_size=900
)
HOSTILE = st.one_of(NAMES, LONG).filter(lambda s: "\x00" not in s)
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _k8s_nameable(name: str) -> bool:
    return any(c.isascii() and c.isalnum() for c in name.lower())


def _named(plan: dict[str, Any], name: str, model: str) -> dict[str, Any]:
    p = copy.deepcopy(plan)
    p["name"] = name
    p["model"] = model
    p["spec"]["name"] = name
    p["spec"]["model"]["name"] = model
    return p


@pytest.fixture(scope="module")
def plans() -> dict[str, dict[str, Any]]:
    out = {
        e: plan_dict(e) for e in ("llama3-70b-pretrain", "llama3-8b-lora-weekly", "llama3-70b-chat-serving")
    }
    lws = copy.deepcopy(out["llama3-70b-chat-serving"])
    lws["best"]["tp"] = 16  # a replica over two nodes: the LeaderWorkerSet's shell command
    out["lws"] = lws
    return out


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stub commands (each records its arguments, NUL-separated, and exits 0) and stub NeMo modules."""
    d = tmp_path_factory.mktemp("stubs")
    for cmd in ("torchrun", "ray", "vllm", "python", "srun"):
        exe = d / "bin" / cmd
        exe.parent.mkdir(exist_ok=True)
        exe.write_text(f'#!/bin/bash\nprintf \'%s\\0\' "$@" > "$PWD/{cmd}.args"\nexit 0\n')
        exe.chmod(0o755)
    (d / "py" / "nemo" / "collections").mkdir(parents=True)
    (d / "py" / "nemo" / "__init__.py").write_text("")
    (d / "py" / "nemo" / "collections" / "__init__.py").write_text(
        "from unittest.mock import MagicMock\nllm = MagicMock()\n"
    )
    (d / "py" / "nemo_run.py").write_text(
        "def run(*args, **kwargs):\n    return None\n\n\ndef Config(*args, **kwargs):\n    return None\n"
    )
    for module, name in (("nemo/collections/common/tokenizers/huggingface/auto_tokenizer", "AutoTokenizer"),
                         ("nemo/lightning/pytorch/callbacks", "PreemptionCallback")):  # fmt: skip
        path = d / "py" / f"{module}.py"
        for parent in path.relative_to(d / "py").parents[:-2]:
            (d / "py" / parent).mkdir(parents=True, exist_ok=True)
            (d / "py" / parent / "__init__.py").touch()
        path.write_text(f"{name} = object\n")
    return d


def _sandbox(tmp: Path) -> Path:
    run_dir = tmp / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    return run_dir


def _run_shell(shell: str, script: str, stubs: Path, tmp: Path) -> Path:
    """Run `script` with `shell -c` in a fresh folder, PATH only the stubs; the folder."""
    cwd = _sandbox(tmp)
    env = {"PATH": str(stubs / "bin"), "HOME": str(cwd)}
    subprocess.run(
        [shutil.which(shell) or shell, "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=20,
        check=False,
    )
    assert not (cwd / CANARY).exists(), "a name ran as a shell command"
    return cwd


def _recorded(cwd: Path, cmd: str) -> list[str]:
    return (cwd / f"{cmd}.args").read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1]


@functools.cache
def _crd_validator(group: str, kind: str, version: str) -> Any:
    import jsonschema

    schema = _crd_schema(group, kind, version)
    return jsonschema.validators.validator_for(schema)(schema)  # checked once, not per object


def _validate_fast(obj: dict[str, Any]) -> None:
    group, _, version = obj["apiVersion"].rpartition("/")
    if (group, obj["kind"]) in CRD_FILES:
        _crd_validator(group, obj["kind"], version).validate(obj)
    else:
        _validate(obj)


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _check_objects(docs: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> None:
    """Same objects (kinds and keys) as with a benign name, names valid, schemas valid."""
    assert [(d["kind"], sorted(d)) for d in docs] == [(d["kind"], sorted(d)) for d in baseline]
    for d, b in zip(docs, baseline, strict=True):
        assert sorted(d["metadata"]) == sorted(b["metadata"])
        assert DNS_1035.fullmatch(d["metadata"]["name"]) and len(d["metadata"]["name"]) <= 63
        for value in d["metadata"].get("labels", {}).values():
            assert len(value) <= 63
        _validate_fast(d)


def _check_nemo(py: str, name: str, baseline: str, stubs: Path, tmp: Path) -> None:
    tree = ast.parse(py)
    kinds = [type(n).__name__ for n in ast.walk(tree)]
    assert kinds == [type(n).__name__ for n in ast.walk(ast.parse(baseline))], "the script's shape changed"
    consts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert name in consts
    cwd = _sandbox(tmp)
    (cwd / "job.py").write_text(py, encoding="utf-8")
    code = "import json, runpy; g = runpy.run_path('job.py', run_name='__main__'); print(json.dumps(g['PLAN_NAME']))"
    env = {**os.environ, "PYTHONPATH": str(stubs / "py"), "DATA_PATH": "d", "TOKENIZER_MODEL": "t"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == name
    assert not (cwd / CANARY).exists(), "a name ran as Python"


def _toml_keys(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: _toml_keys(v) if isinstance(v, dict) else None for k, v in doc.items()}


def _check_training(files: dict[str, str], base: dict[str, str], name: str, stubs: Path, tmp: Path) -> None:
    docs = _docs(files["training.yaml"]) + _docs(files["kueue.yaml"])
    _check_objects(docs, _docs(base["training.yaml"]) + _docs(base["kueue.yaml"]))
    config = docs[0]["data"]
    if "torchtitan.toml" in config:
        toml = tomllib.loads(config["torchtitan.toml"])
        assert _toml_keys(toml) == _toml_keys(
            tomllib.loads(_docs(base["training.yaml"])[0]["data"]["torchtitan.toml"])
        )
        assert toml["job"]["description"] == name
    if "nemo_train.py" in config:
        _check_nemo(
            config["nemo_train.py"],
            name,
            _docs(base["training.yaml"])[0]["data"]["nemo_train.py"],
            stubs,
            tmp,
        )
    pod = docs[1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert pod["command"] == ["/bin/bash", "-c"]
    cwd = _run_shell("bash", pod["args"][0], stubs, tmp)
    args = _recorded(cwd, "torchrun")
    assert f"--rdzv-id={docs[1]['metadata']['name']}" in args


@given(name=HOSTILE)
@SETTINGS
@pytest.mark.parametrize(
    ("example", "framework"),
    [
        ("llama3-70b-pretrain", "megatron"),
        ("llama3-70b-pretrain", "torchtitan"),
        ("llama3-70b-pretrain", "nemo"),
        ("llama3-8b-lora-weekly", "nemo"),
    ],
)
def test_training_exports_hold_hostile_names_as_data(
    plans: dict[str, dict[str, Any]], stubs: Path, tmp_path: Path, example: str, framework: str, name: str
) -> None:
    base = render_files(_named(plans[example], "benign", "llama3-70b"), "kubernetes", framework)
    plan = _named(plans[example], name, name)
    if not _k8s_nameable(name):
        with pytest.raises(BadInput, match="Kubernetes name"):
            render_files(plan, "kubernetes", framework)
        return
    _check_training(render_files(plan, "kubernetes", framework), base, name, stubs, tmp_path)
    if framework == "megatron":  # the rules do not depend on the framework
        _check_prometheus(render_files(plan, "prometheus", framework), tmp_path)


def _promtool(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], cwd=tmp, capture_output=True, text=True, timeout=60)


def _check_prometheus(files: dict[str, str], tmp: Path, extra_exprs: list[str] | None = None) -> None:
    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    d = _sandbox(tmp)
    for fname, text in files.items():
        (d / fname).write_text(text, encoding="utf-8")
    rules = {
        "groups": [
            {
                "name": "extra",
                "rules": [{"record": f"x:{i}", "expr": e} for i, e in enumerate(extra_exprs or [])],
            }
        ]
    }
    (d / "extra.yml").write_text(yaml.safe_dump(rules, allow_unicode=True), encoding="utf-8")
    checked = _promtool(d, "check", "rules", "rightsize-rules.yml", *(["extra.yml"] if extra_exprs else []))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _promtool(d, "test", "rules", "rightsize-rules.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


@given(name=HOSTILE)
@SETTINGS
@pytest.mark.parametrize("example", ["llama3-70b-chat-serving", "lws"])
def test_serving_exports_hold_hostile_names_as_data(
    plans: dict[str, dict[str, Any]], stubs: Path, tmp_path: Path, example: str, name: str
) -> None:
    plan = _named(plans[example], name, name)
    _check_prometheus(render_files(plan, "prometheus"), tmp_path, _keda_queries(plan, name))
    _check_vllm_shell_args(plan, name, stubs, tmp_path)
    if not _k8s_nameable(name):
        with pytest.raises(BadInput, match="Kubernetes name"):
            render_files(plan, "kubernetes")
        return
    docs = _docs(render_files(plan, "kubernetes")["serving.yaml"])
    _check_objects(
        docs, _docs(render_files(_named(plans[example], "benign", "m"), "kubernetes")["serving.yaml"])
    )
    pod = docs[0]["spec"]["template"]["spec"] if docs[0]["kind"] == "Deployment" else None
    if pod is not None:  # an argument vector: the name is one argument, as it is
        args = pod["containers"][0]["args"]
        assert args[args.index("--served-model-name") + 1] == name
        return
    leader = docs[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["command"] == ["/bin/sh", "-c"]
    cwd = _run_shell("sh", leader["args"][0], stubs, tmp_path)
    args = _recorded(cwd, "vllm")
    assert args[args.index("--served-model-name") + 1] == name


def _check_vllm_shell_args(plan: dict[str, Any], name: str, stubs: Path, tmp: Path) -> None:
    """`vllm_args` joined into a continued shell line (as a job script does) reach vLLM as
    the same arguments: the model name one argument, the port expression expanded."""
    from rightsize.export.names import ShellExpr
    from rightsize.export.plan_view import serving_view
    from rightsize.export.vllm import vllm_args

    args = vllm_args(serving_view(plan), port=ShellExpr("$((8000 + 3))"))
    cwd = _run_shell("bash", "vllm serve MODEL \\\n    " + " \\\n    ".join(args) + "\n", stubs, tmp)
    got = _recorded(cwd, "vllm")
    assert got[got.index("--served-model-name") + 1] == name and got[-2:] == ["--port", "8003"]


def _keda_queries(plan: dict[str, Any], name: str) -> list[str]:
    if not _k8s_nameable(name):
        return []
    docs = _docs(render_files(plan, "kubernetes")["serving.yaml"])
    return [
        t["metadata"]["query"] for d in docs if d["kind"] == "ScaledObject" for t in d["spec"]["triggers"]
    ]


# --- fleets ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet_plan() -> dict[str, Any]:
    from rightsize.api import plan
    from rightsize.report.render import render

    return json.loads(render(plan(Path(__file__).parent.parent / "examples" / "fleet-2027.yaml"), "json"))  # type: ignore[no-any-return]


def _rename_fleet(plan: dict[str, Any], name: str) -> dict[str, Any]:
    """`name` as the fleet's name and cohort, its first workload, first queue and first flavor."""
    p = copy.deepcopy(plan)
    q = p["quotas"]
    p["name"], q["cohort"] = name, name + "-pool"
    old_w, old_q, old_f = (
        q["cluster_queues"][0]["workloads"][0],
        q["cluster_queues"][0]["name"],
        q["resource_flavors"][0]["name"],
    )
    q["resource_flavors"][0]["name"] = name
    for cq in q["cluster_queues"]:
        cq["workloads"] = [name if w == old_w else w for w in cq["workloads"]]
        cq["name"] = name + "\nq" if cq["name"] == old_q else cq["name"]
        for f in cq["flavors"]:
            f["name"] = name if f["name"] == old_f else f["name"]
    return p


@given(name=HOSTILE)
@SETTINGS
def test_fleet_names_never_inject_kueue_objects(fleet_plan: dict[str, Any], name: str) -> None:
    plan = _rename_fleet(fleet_plan, name)
    if not _k8s_nameable(name):
        with pytest.raises(BadInput, match="Kubernetes name"):
            render_files(plan, "kubernetes")
        return
    docs = _docs(render_files(plan, "kubernetes")["kueue-fleet.yaml"])
    _check_objects(docs, _docs(render_files(fleet_plan, "kubernetes")["kueue-fleet.yaml"]))
    by_kind: dict[str, set[str]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], set()).add(d["metadata"]["name"])
    n_workloads = sum(len(cq["workloads"]) for cq in plan["quotas"]["cluster_queues"])
    assert len(by_kind["LocalQueue"]) == n_workloads  # no two workloads share a queue
    for d in docs:
        if d["kind"] == "LocalQueue":
            assert d["spec"]["clusterQueue"] in by_kind["ClusterQueue"]
        if d["kind"] == "ClusterQueue":
            assert {f["name"] for f in d["spec"]["resourceGroups"][0]["flavors"]} <= by_kind["ResourceFlavor"]


# --- names that cannot be made valid, and limits -----------------------------------------


def test_a_name_with_no_letter_or_digit_is_refused_with_the_rule(plans: dict[str, dict[str, Any]]) -> None:
    with pytest.raises(BadInput, match="RFC 1035") as err:
        render_files(_named(plans["llama3-70b-pretrain"], "$(((;)))", "m"), "kubernetes", "megatron")
    assert "\n" not in err.value.what


def test_different_names_get_different_objects(plans: dict[str, dict[str, Any]]) -> None:
    names = {}
    for name in ("My Plan", "my-plan", "my plan", "MY_PLAN", "my--plan"):
        docs = _docs(
            render_files(_named(plans["llama3-70b-pretrain"], name, "m"), "kubernetes", "megatron")[
                "training.yaml"
            ]
        )
        names[name] = docs[1]["metadata"]["name"]
    assert names["my-plan"] == "my-plan"  # a valid name is kept
    assert len(set(names.values())) == len(names)


@pytest.mark.parametrize("bad", ["a" * 1001, "x\x00y", "\ud800"])
def test_names_that_are_not_text_are_refused(plans: dict[str, dict[str, Any]], bad: str) -> None:
    with pytest.raises(BadInput, match="`name`"):
        render_files(_named(plans["llama3-70b-pretrain"], bad, "m"), "prometheus")


# --- hand-edited plan JSON: BadInput naming the key, never a traceback --------------------

ODD_VALUES = [
    None,
    "x",
    "",
    -1,
    0,
    0.5,
    -1e-9,
    1e308,
    10**400,
    float("nan"),
    float("inf"),
    True,
    [],
    {},
    [1],
    {"a": 1},
]


def _read_keys() -> set[str]:
    """The keys `export.plan_view` reads (its `Fields` calls), so edits land where they matter."""
    import re

    import rightsize.export.plan_view as pv

    text = Path(pv.__file__).read_text()
    keys = set(re.findall(r'\.(?:num|integer|text|sub|flag|items)\(\s*"([a-z_0-9]+)"', text))
    return keys | {"schema_version", "kind", "name", "model", "spec", "best", "sizing"}


READ_KEYS = _read_keys()


def _paths(d: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(d, dict):
        for k, v in d.items():
            if k not in (
                "alternatives",
                "pareto",
                "rejected",
                "findings",
                "uncertainty",
                "search",
                "checklists",
            ):
                out += _paths(v, (*prefix, k))
    elif isinstance(d, list):
        for i, v in enumerate(d[:3]):
            out += _paths(v, (*prefix, i))
    return out


def _edit(plan: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> dict[str, Any]:
    p = copy.deepcopy(plan)
    cur: Any = p
    for key in path[:-1]:
        cur = cur[key]
    if delete and isinstance(cur, dict):
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return p


FUZZ_CASES = [
    ("llama3-70b-pretrain", "kubernetes", "megatron"),
    ("llama3-70b-pretrain", "kubernetes", "torchtitan"),
    ("llama3-70b-pretrain", "slurm", "nemo"),
    ("llama3-8b-lora-weekly", "prometheus", "nemo"),
    ("llama3-70b-chat-serving", "kubernetes", "auto"),
    ("llama3-70b-chat-serving", "slurm", "auto"),
    ("llama3-70b-chat-serving", "prometheus", "auto"),
]


@pytest.mark.parametrize(("example", "target", "framework"), FUZZ_CASES)
@given(data=st.data())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_hand_edited_plan_gives_bad_input_or_files(
    plans: dict[str, dict[str, Any]], example: str, target: str, framework: str, data: st.DataObject
) -> None:
    plan = plans[example]
    paths = [p for p in _paths(plan) if all(isinstance(k, int) or k in READ_KEYS for k in p)]
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        value = data.draw(st.sampled_from(ODD_VALUES), label="value")
        try:
            plan = _edit(plan, path, value, data.draw(st.booleans(), label="delete"))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or retyped the parent
    try:
        files = render_files(plan, target, framework)
    except BadInput as err:
        assert "Traceback" not in str(err)
        return
    assert files and all(isinstance(t, str) for t in files.values())


@given(data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_hand_edited_fleet_plan_gives_bad_input_or_files(
    fleet_plan: dict[str, Any], data: st.DataObject
) -> None:
    plan = fleet_plan
    paths = [p for p in _paths(plan) if p[0] in ("quotas", "name", "schema_version", "kind")]
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        value = data.draw(st.sampled_from(ODD_VALUES), label="value")
        try:
            plan = _edit(plan, path, value, data.draw(st.booleans(), label="delete"))
        except (KeyError, IndexError, TypeError):
            continue
    with contextlib.suppress(BadInput):
        render_files(plan, "kubernetes")


@pytest.mark.parametrize(
    "plan", [[], "plan", 3, None, {"schema_version": 2}, {"schema_version": 2, "kind": "training_plan"}]
)
def test_a_plan_that_is_not_a_plan_is_refused(plan: Any) -> None:
    with pytest.raises(BadInput):
        render_files(plan, "kubernetes")


def test_the_message_names_the_key() -> None:
    plan = plan_dict("llama3-70b-pretrain")
    plan["best"]["parallel"]["tp"] = float("nan")
    with pytest.raises(BadInput, match=r"`best\.parallel\.tp` must be a whole number from 1 to"):
        render_files(plan, "slurm", "megatron")
    plan["best"]["parallel"]["tp"] = -2
    with pytest.raises(BadInput, match=r"`best\.parallel\.tp`"):
        render_files(plan, "kubernetes", "megatron")


DELETE = object()
EDGE_VALUES = [DELETE, None, "x", -1, 0, 1, float("nan"), 10**400, 1e300, True, []]
RENDERS = {
    "training_plan": [("kubernetes", "megatron"), ("kubernetes", "torchtitan"), ("kubernetes", "nemo"),
                      ("slurm", "megatron"), ("prometheus", "auto")],
    "serving_plan": [("kubernetes", "auto"), ("slurm", "auto"), ("prometheus", "auto")],
}  # fmt: skip


@pytest.mark.parametrize("example", ["llama3-70b-pretrain", "llama3-70b-chat-serving"])
def test_every_read_key_edited_gives_bad_input_or_files(
    plans: dict[str, dict[str, Any]], example: str
) -> None:
    """Each key `plan_view` reads, deleted or set to each edge value in turn (exhaustive)."""
    from rightsize.export.plan_view import serving_view, training_view

    base = plans[example]
    view = training_view if base["kind"] == "training_plan" else serving_view
    paths = [p for p in _paths(base) if all(isinstance(k, int) or k in READ_KEYS for k in p)]
    rendered = 0
    for path in paths:
        for value in EDGE_VALUES:
            plan = _edit(base, path, value, value is DELETE)
            try:
                view(plan)
            except BadInput:
                continue
            for target, framework in RENDERS[base["kind"]]:
                try:
                    render_files(plan, target, framework)
                    rendered += 1
                except BadInput:
                    pass
    assert rendered  # some edits are harmless (a default applies)


# --- the quoting functions themselves ------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=80)


@given(text=TEXT)
@settings(max_examples=200, deadline=None)
def test_quoting_functions_round_trip(text: str) -> None:
    import shlex

    from rightsize.export.names import one_line, python_literal, shell_word, toml_string

    assert shlex.split(shell_word(text)) == [text] or (text == "" and shell_word(text) == "''")
    assert ast.literal_eval(python_literal(text)) == text
    assert tomllib.loads(f"k = {toml_string(text)}\n") == {"k": text}
    line = one_line(text)
    assert len(line.splitlines()) <= 1 and "\r" not in line and "\n" not in line
    assert ast.parse(f"# {line}\nx = 1\n").body[0].lineno == 2  # still a comment line


@given(text=TEXT)
@settings(max_examples=200, deadline=None)
def test_k8s_names_are_valid_deterministic_and_distinct(text: str) -> None:
    from rightsize.export.names import k8s_name, label_value

    if not _k8s_nameable(text):
        with pytest.raises(BadInput, match="RFC 1035"):
            k8s_name(text)
        return
    name = k8s_name(text)
    assert DNS_1035.fullmatch(name) and len(name) <= 63 and name == k8s_name(text)
    assert len(k8s_name(text, 40)) <= 40
    if name != text:  # changed names carry a hash of the original: no two collide
        assert k8s_name(text + "x") != name and k8s_name(text.upper() + "!") != name
    assert len(label_value(text)) <= 63


def test_promql_strings_parse_back(tmp_path: Path) -> None:
    """The escaped value is what Prometheus reads: a promtool rule test matches the series
    with the hostile label value exactly."""
    from rightsize.export.names import promql_string

    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    values = ['a"b', "back\\slash", "new\nline", "tab\there", "\u2028\x1b", "模型", "}) or vector(1) #"]
    rules = {"groups": [{"name": "g", "rules": [
        {"alert": f"A{i}", "expr": f"m{{v={promql_string(v)}}} > 0", "labels": {"n": str(i)}} for i, v in enumerate(values)
    ]}]}  # fmt: skip
    tests = {
        "rule_files": ["r.yml"],
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": f"m{{v={promql_string(v)}}}", "values": "1x5"} for v in values],
                "alert_rule_test": [
                    {
                        "eval_time": "1m",
                        "alertname": f"A{i}",
                        "exp_alerts": [{"exp_labels": {"v": v, "n": str(i)}}],
                    }
                    for i, v in enumerate(values)
                ],
            }
        ],
    }
    (tmp_path / "r.yml").write_text(yaml.safe_dump(rules, allow_unicode=True), encoding="utf-8")
    (tmp_path / "t.yml").write_text(yaml.safe_dump(tests, allow_unicode=True), encoding="utf-8")
    out = _promtool(tmp_path, "test", "rules", "t.yml")
    assert out.returncode == 0, out.stdout + out.stderr


@given(text=TEXT)
@settings(max_examples=200, deadline=None)
def test_plain_names_need_no_quoting(text: str) -> None:
    import shlex

    from rightsize.export.names import plain_name

    if not any(c.isascii() and c.isalnum() for c in text):
        with pytest.raises(BadInput):
            plain_name(text)
        return
    name = plain_name(text)
    assert shlex.quote(name) == name and "/" not in name and ".." not in name and len(name) <= 64
    assert name == plain_name(text) and (name == text or plain_name(text + "!") != name)
