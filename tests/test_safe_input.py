"""Issue #24, safe input: every file rightsize reads goes through one capped path (regular files only,
size checked before reading, depth, alias and number caps before parsing, fleet includes confined to
the fleet's folder, nothing of a file's text in a message).

The table at the top runs each reader the CLI has (spec, fleet `spec:` entry, --prices, --calibration,
a spec's model `config:`, a monitor capture, a profile for `calibrate`, a plan for `export` and for
`monitor`) against each hostile file (a FIFO, a character device, a folder, a link to a credentials
file outside, a 400-digit number, 10,000-deep nesting, an alias bomb, a 2 GiB sparse file, bytes that
are not UTF-8, credentials in five common formats). Each must exit 2 without a traceback, within a
few seconds (an alarm fails a hang), and never print the secret. The CLI runs in this process, with
the real readers and parsers."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.monitor.prom import CAPTURE_KIND
from rightsize.safe_read import json_depth, loads_json, read_text_capped
from rightsize.spec.fleet_load import load_fleet, parse_fleet
from rightsize.spec.load import parse_spec, read_spec_yaml

ROOT = Path(__file__).resolve().parent.parent
SECRET = "SECRET-TOKEN-7f3a9c"
SMALL = "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64, train_tokens: 1B}\n"
BIG_INT = "1" * 400
DEEP = 10_000
SECONDS = 8  # a hostile file must be refused well within this (an alarm fails a hang)

CREDENTIALS = {
    "aws": f"[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = {SECRET}\n",
    "netrc": f"machine example.com\n  login alice\n  password {SECRET}\n",
    "env": f"API_TOKEN={SECRET}\nOTHER={SECRET}\n",
    "docker-json": json.dumps({"auths": {"registry.example.com": {"auth": SECRET}}}, indent=2),
    "kubeconfig": f"apiVersion: v1\nkind: Config\nusers:\n- name: alice\n  user:\n    token: {SECRET}\n",
}


# ------------------------------------------------------------------------------ the readers


def _alias_bomb() -> str:
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i, name in enumerate("bcdefghi"):
        text += f"{name}: &{name} [" + ", ".join([f"*{'abcdefghi'[i]}"] * 10) + "]\n"
    return text


YAML_DEEP = "name: " + "[" * DEEP + "]" * DEEP + "\n"
JSON_DEEP = "[" * DEEP + "]" * DEEP
PLAN_BIG_INT = '{"kind": "serving", "name": "x", "best": {"gpus": BIG}}'.replace("BIG", BIG_INT)
# reader -> (file extension, its 400-digit-number file, its deep file, whether it is YAML)
FORMATS: dict[str, tuple[str, str, str, bool]] = {
    "spec": (".yaml", SMALL.replace("1B", BIG_INT), SMALL + YAML_DEEP, True),
    "fleet-entry": (".yaml", SMALL.replace("1B", BIG_INT), SMALL + YAML_DEEP, True),
    "prices": (".yaml", f"h100-sxm: {{on_demand_usd_per_gpu_hour: {BIG_INT}}}\n", "x: " + YAML_DEEP, True),
    "calibration": (
        ".json",
        '{"overrides": {"h100-sxm": {"mfu": BIG}}}'.replace("BIG", BIG_INT),
        JSON_DEEP,
        False,
    ),
    "model-config": (
        ".json",
        json.dumps({"model_type": "llama", "num_hidden_layers": 2}).replace("2}", BIG_INT + "}"),
        JSON_DEEP,
        False,
    ),
    "capture": (
        ".json",
        json.dumps({"kind": CAPTURE_KIND, "version": 1, "start_s": 0, "end_s": 1, "step_s": 1}).replace(
            '"start_s": 0', '"start_s": ' + BIG_INT
        ),
        JSON_DEEP,
        False,
    ),
    "profile": (
        ".jsonl",
        '{"type": "header", "schema_version": BIG}\n'.replace("BIG", BIG_INT),
        JSON_DEEP + "\n",
        False,
    ),
    "export-plan": (".json", PLAN_BIG_INT, JSON_DEEP, False),
    "monitor-plan": (".json", PLAN_BIG_INT, JSON_DEEP, False),
}


@pytest.fixture(scope="module")
def plan_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real serving plan (for the capture reader, which reads a capture after the plan)."""
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert (
        main(
            [
                "plan",
                str(ROOT / "tests" / "data" / "monitor" / "serving.yaml"),
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def _argv(reader: str, hostile: Path, work: Path, plan_json: Path) -> list[str]:
    """The command line that makes `reader` read `hostile`."""
    spec = work / "good.yaml"
    spec.write_text(SMALL, encoding="utf-8")
    if reader == "spec":
        return ["plan", str(hostile)]
    if reader == "fleet-entry":
        fleet = work / "fleet.yaml"
        fleet.write_text(
            f"kind: fleet\nstart: 2027-01\nworkloads:\n  - spec: {hostile.name}\n", encoding="utf-8"
        )
        return ["plan", str(fleet)]
    if reader == "prices":
        return ["plan", str(spec), "--prices", str(hostile)]
    if reader == "calibration":
        return ["plan", str(spec), "--calibration", str(hostile)]
    if reader == "model-config":
        spec.write_text(SMALL.replace("llama3-8b", f"{{config: {hostile.name}}}"), encoding="utf-8")
        return ["plan", str(spec)]
    if reader == "capture":
        return ["monitor", str(plan_json), "--from", str(hostile)]
    if reader == "profile":
        return ["calibrate", str(hostile), "--calibration-out", str(work / "out" / "cal.json")]
    if reader == "export-plan":
        return ["export", str(hostile), "--target", "slurm", "--out", str(work / "export")]
    assert reader == "monitor-plan"
    return ["monitor", str(hostile), "--from", str(work / "capture.json")]


# ------------------------------------------------------------------------------ the hostile files


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _outside_credentials(work: Path) -> Path:
    outside = work.parent / f"{work.name}-private"
    outside.mkdir(exist_ok=True)
    return _write(outside / "credentials", CREDENTIALS["aws"])


HOSTILE: dict[str, Callable[[Path, str], Path | None]] = {
    "fifo": lambda p, r: (os.mkfifo(p), p)[1],
    "char-device": lambda p, r: (p.symlink_to("/dev/zero"), p)[1],
    "folder": lambda p, r: (p.mkdir(), p)[1],
    "link-to-credentials": lambda p, r: (p.symlink_to(_outside_credentials(p.parent)), p)[1],
    "400-digit-number": lambda p, r: _write(p, FORMATS[r][1]),
    "10000-deep": lambda p, r: _write(p, FORMATS[r][2]),
    "alias-bomb": lambda p, r: _write(p, _alias_bomb()) if FORMATS[r][3] else None,
    "2GiB-sparse": lambda p, r: (_write(p, b""), os.truncate(p, 2**31), p)[2],
    "not-utf8": lambda p, r: _write(p, b'{"a": "\xff\xfe\x80 bytes"}\n'),
    **{
        f"credentials-{name}": (lambda content: lambda p, r: _write(p, content))(text)
        for name, text in CREDENTIALS.items()
    },
}


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail a hang: SIGALRM after SECONDS raises in the test."""

    def ring(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a reader took more than {SECONDS} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("hostile", list(HOSTILE))
@pytest.mark.parametrize("reader", list(FORMATS))
def test_every_reader_refuses_every_hostile_file(
    reader: str,
    hostile: str,
    tmp_path: Path,
    plan_json: Path,
    capsys: pytest.CaptureFixture[str],
    alarm: None,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = HOSTILE[hostile](work / f"hostile{FORMATS[reader][0]}", reader)
    if path is None:
        pytest.skip("alias bombs are a YAML hazard; this reader reads JSON")
    capsys.readouterr()
    started = time.monotonic()
    code = main(_argv(reader, path, work, plan_json))
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "Traceback" not in err + out and "please report" not in err
    assert SECRET not in err + out
    assert time.monotonic() - started < SECONDS
    assert len(err) < 4000, "an error message is a few lines"


# ------------------------------------------------------------------------------ one test per failure


def _fleet_file(folder: Path, entry: str) -> Path:
    return _write(folder / "fleet.yaml", f"kind: fleet\nstart: 2027-01\nworkloads:\n  - spec: {entry}\n")


def test_fleet_entries_outside_the_fleet_folder_are_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fleets = tmp_path / "fleets"
    fleets.mkdir()
    _write(tmp_path / "lora.yaml", SMALL)
    secret = _write(tmp_path / "creds.yaml", f"aws_secret_access_key: {SECRET}\n")
    (fleets / "inside-link.yaml").symlink_to(secret)
    for entry, how in [
        ("../lora.yaml", "leads out"),
        (str(tmp_path / "lora.yaml"), "leads out"),
        ("inside-link.yaml", "link inside it points out"),
    ]:
        code = main(["plan", str(_fleet_file(fleets, entry))])
        err = capsys.readouterr().err
        assert code == 2 and "outside the folder" in err and how in err, err
        assert "RIGHTSIZE_ALLOW_OUTSIDE=1" in err and SECRET not in err
    with pytest.raises(BadInput, match="outside the folder"):
        load_fleet(_fleet_file(fleets, "../lora.yaml"))
    assert len(load_fleet(fleets / "fleet.yaml", allow_outside=True).entries) == 1
    monkeypatch.setenv("RIGHTSIZE_ALLOW_OUTSIDE", "1")
    assert len(load_fleet(fleets / "fleet.yaml").entries) == 1
    code = main(["plan", str(_fleet_file(fleets, "inside-link.yaml"))])  # allowed: read, never echoed
    err = capsys.readouterr().err
    assert code == 2 and "aws_secret_access_key: unknown key" in err and SECRET not in err


def test_a_subfolder_of_the_fleet_folder_is_inside(tmp_path: Path) -> None:
    (tmp_path / "teams").mkdir()
    _write(tmp_path / "teams" / "lora.yaml", SMALL)
    _write(tmp_path / "inner.yaml", "kind: fleet\nworkloads:\n  - spec: teams/lora.yaml\n")
    fleet = load_fleet(_fleet_file(tmp_path, "inner.yaml"))
    assert [e.name for e in fleet.entries] == ["lora"]


def test_an_alias_bomb_in_an_inline_fleet_spec_is_refused_at_once(tmp_path: Path, alarm: None) -> None:
    bomb = "".join(
        f"      {n}: &{n} [" + ", ".join([f"*{p}"] * 10) + "]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    text = (
        "kind: fleet\nstart: 2027-01\nworkloads:\n  - spec:\n      model: llama3-8b\n"
        "      a: &a [x, x, x, x, x, x, x, x, x, x]\n" + bomb
    )
    started = time.monotonic()
    with pytest.raises(BadInput, match="too many values"):
        load_fleet(_write(tmp_path / "fleet.yaml", text))
    # the same bomb built in memory (shared lists: what YAML aliases make) and given to the API
    inner: Any = ["x"] * 10
    for _ in range(8):
        inner = [inner] * 10
    with pytest.raises(BadInput, match="too many values"):
        parse_fleet(
            {"kind": "fleet", "start": "2027-01", "workloads": [{"spec": {"model": "llama3-8b", "a": inner}}]}
        )
    with pytest.raises(BadInput, match="too many values"):
        parse_spec({"model": "llama3-8b", "a": inner})
    assert time.monotonic() - started < 2


def test_spec_and_price_files_are_capped_before_reading(tmp_path: Path) -> None:
    for name in ("spec.yaml", "prices.yaml"):
        path = _write(tmp_path / name, b"")
        os.truncate(path, 2**32)  # 4 GiB, sparse
    started = time.monotonic()
    with pytest.raises(BadInput, match="is at most 1.0 MiB"):
        read_spec_yaml(tmp_path / "spec.yaml")
    from rightsize.spec.prices import load_user_prices

    with pytest.raises(BadInput, match="is at most 8.0 MiB"):
        load_user_prices(tmp_path / "prices.yaml")
    assert time.monotonic() - started < 1


def test_400_digit_numbers_are_bad_input_naming_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "spec.yaml", SMALL.replace("1B", BIG_INT))
    with pytest.raises(BadInput) as info:
        read_spec_yaml(path)
    assert (
        "line 2" in info.value.what and "400 digits" in info.value.why and BIG_INT not in info.value.message()
    )
    with pytest.raises(BadInput, match="more than 24 digits"):
        loads_json('{"a": [' + BIG_INT + "]}", "the file", "f.json", "")
    # digits inside a JSON string are text, not a number
    assert loads_json('{"a": "' + BIG_INT + '"}', "the file", "f.json", "") == {"a": BIG_INT}
    # a 13th month is out of range, not a traceback
    with pytest.raises(BadInput, match="line 1, column 8 is out of range"):
        read_spec_yaml(_write(tmp_path / "date.yaml", "start: 2027-13-45\n"))


def test_json_depth_is_counted_on_the_text() -> None:
    assert json_depth(b"[]") == 1 and json_depth(b"1") == 0
    assert json_depth(b'{"a": [1, {"b": []}]}'.replace(b'"a"', b"").replace(b'"b"', b"")) == 4
    # brackets inside strings (with escaped quotes) do not count
    assert loads_json('{"a": "[[[[\\"[[[["}', "the file", "f.json", "", max_depth=1) == {"a": '[[[["[[[['}
    with pytest.raises(BadInput, match="nested more than 64 levels"):
        loads_json("[" * 65 + "]" * 65, "the file", "f.json", "")
    assert loads_json("[" * 64 + "]" * 64, "the file", "f.json", "") is not None
    with pytest.raises(BadInput, match="not valid JSON"):
        loads_json("[" * 5000, "the file", "f.json", "")  # unmatched: json.loads says so, no RecursionError


def test_many_unknown_keys_give_a_short_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = "".join(f"k{i}: 1\n" for i in range(45_000))
    code = main(["plan", str(_write(tmp_path / "spec.yaml", SMALL + keys))])
    err = capsys.readouterr().err
    assert code == 2 and len(err) < 3000, len(err)
    assert "45,000 problems" in err and "and 44,988 more problems, 44,988 of them unknown keys" in err
    assert "k0: unknown key" in err and "k44999" not in err


def test_unknown_keys_are_named_short_and_printable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "\x1b[31m" + "x" * 500
    code = main(["plan", str(_write(tmp_path / "spec.yaml", SMALL + json.dumps({key: SECRET})[1:-1] + "\n"))])
    err = capsys.readouterr().err
    assert code == 2 and "\x1b" not in err and "x" * 100 not in err and SECRET not in err


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_fifo_or_folder_as_prices_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, alarm: None
) -> None:
    path = tmp_path / "prices.yaml"
    path.mkdir() if kind == "folder" else os.mkfifo(path)
    code = main(["plan", str(_write(tmp_path / "spec.yaml", SMALL)), "--prices", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "No such file" not in err
    assert ("It is a folder" if kind == "folder" else "a named pipe (FIFO), not a regular file") in err


def test_a_price_value_is_never_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = _write(tmp_path / "prices.yaml", f"h100-sxm: {SECRET}\n")
    code = main(["plan", str(_write(tmp_path / "spec.yaml", SMALL)), "--prices", str(prices)])
    err = capsys.readouterr().err
    assert (
        code == 2 and "prices.h100-sxm must be a mapping" in err and "got a str" in err and SECRET not in err
    )


@pytest.mark.parametrize(
    ("plan", "key"),
    [
        ({"kind": "serving", "best": {"gpus": "eight"}}, "best.gpus"),
        ({"kind": "serving", "best": {"gpus": 8, "replicas": 2.5}}, "best.replicas"),
        ({"kind": "serving", "best": {"gpus": 8, "memory": [1, 2]}}, "best.memory"),
        ({"kind": "serving", "best": {"gpus": 8}, "sizing": {"power": "lots"}}, "sizing.power"),
        ({"kind": "serving", "best": {"gpus": 8}, "sizing": {"margins": {"a": 1}}}, "sizing.margins"),
        (
            {"kind": "serving", "best": {"gpus": 8, "latency_s": {"ttft_p95_s": [1]}}},
            "best.latency_s.ttft_p95_s",
        ),
        ({"kind": "training", "best": {"accelerator": 7}}, "best.accelerator"),
        ({"kind": "serving", "best": ["x"]}, "best"),
        ({"kind": ["serving"], "best": {}}, "kind"),
    ],
)
def test_hand_edited_plans_for_monitor_name_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: dict[str, Any], key: str
) -> None:
    path = _write(tmp_path / "plan.json", json.dumps(plan))
    code = main(["monitor", str(path), "--from", str(tmp_path / "capture.json")])
    err = capsys.readouterr().err
    assert code == 2 and f"`{key}`" in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "Its top level is a list"),
        ('{"best": {}}', "no textual `kind`"),
        ('{"kind": 3, "best": {}}', "no textual `kind`"),
        ('"plan"', "Its top level is a str"),
    ],
)
def test_export_reads_only_a_plan_shaped_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _write(tmp_path / "plan.json", text)
    code = main(["export", str(path), "--target", "slurm", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "is JSON but not a plan" in err and message in err, err


def test_a_capture_with_wrong_parts_is_bad_input(
    tmp_path: Path, plan_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {"kind": CAPTURE_KIND, "version": 1, "start_s": 0, "end_s": 3600, "step_s": 60}
    answers = [
        "x",
        {"status": "success", "data": "x"},
        {"status": "success", "data": {"result": [1]}},
        {"status": "success", "data": {"result": [{"metric": ["a"], "values": []}]}},
    ]
    cases = [({"selectors": ["x"]}, "selectors"), ({"queries": "x"}, "queries")]
    cases += [({"queries": {"up": answer}}, "queries.up") for answer in answers]
    for extra, key in cases:
        path = _write(tmp_path / "cap.json", json.dumps({**base, **extra}))
        code = main(["monitor", str(plan_json), "--from", str(path)])
        err = capsys.readouterr().err
        assert code == 2 and f"`{key}`" in err and "Traceback" not in err and "internal error" not in err, err


def test_a_malformed_yaml_message_never_quotes_an_alias_or_tag(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        read_spec_yaml(_write(tmp_path / "spec.yaml", f"model: *{SECRET}\n"))
    assert SECRET not in info.value.message() and "line 1" in info.value.message()
    with pytest.raises(BadInput) as info:
        read_spec_yaml(_write(tmp_path / "spec.yaml", f"model: !{SECRET} x\n"))
    assert SECRET not in info.value.message()


def test_a_link_that_appears_after_the_check_is_not_followed(tmp_path: Path) -> None:
    target = _write(tmp_path / "secret", SECRET)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(BadInput, match="symbolic link"):
        read_text_capped(tmp_path / "link", "the spec", 2**20, follow_links=False)


def _comms_profile(**change: Any) -> str:
    header = {"type": "header", "schema_version": 1, "kind": "comms", "config": {}, "environment": {}}
    header["environment"] = {"gpu_name": "NVIDIA A100-SXM4-80GB"}
    rows = [
        {"type": "result", "kind": "comms", "key": f"comms:all_reduce:{b}:8:intra_node", "status": "ok",
         "op": "all_reduce", "bytes": b, "world_size": 8, "tier": "intra_node", "time_s": {"median": 1e-5 + b / 1e11}}
        for b in (2**16, 2**20, 2**24)
    ]  # fmt: skip
    rows[0].update(change)
    return "\n".join(json.dumps(r) for r in [header, *rows]) + "\n"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bytes": "x"}, "bytes"),
        ({"bytes": 1e308}, "bytes"),
        ({"world_size": 2.5}, "world_size"),
        ({"op": ["all_reduce"]}, "op"),
        ({"time_s": "fast"}, "time_s"),
        ({"time_s": {"mean": 1}}, "time_s"),
        ({"time_s": {"median": -1}}, "time_s.median"),
    ],
)
def test_hand_edited_profiles_name_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str
) -> None:
    path = _write(tmp_path / "comms.jsonl", _comms_profile(**change))
    code = main(["calibrate", str(path), "--calibration-out", str(tmp_path / "cal.json")])
    err = capsys.readouterr().err
    assert code == 2 and f"bad `{field}`" in err and "comms:all_reduce:65536" in err, err
    assert not (tmp_path / "cal.json").exists()


def test_an_unedited_profile_still_calibrates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "comms.jsonl", _comms_profile())
    assert main(["calibrate", str(path), "--calibration-out", str(tmp_path / "cal.json")]) == 0, (
        capsys.readouterr().err
    )
    assert json.loads((tmp_path / "cal.json").read_text())["overrides"]


def test_names_with_a_nul_or_control_characters_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _write(
        tmp_path / "fleet.yaml", 'kind: fleet\nstart: 2027-01\nworkloads:\n  - spec: "a\\0b.yaml"\n'
    )
    spec = _write(tmp_path / "spec.yaml", SMALL.replace("llama3-8b", '{config: "a\\0b.json"}'))
    for argv in (["plan", str(fleet)], ["plan", str(spec)], ["plan", str(spec), "--prices", "a\x1b[2Jb"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and "internal error" not in err and "\x1b" not in err and "\x00" not in err, err


@pytest.mark.parametrize(
    ("window", "why"),
    [
        ((0, 3600, 0), "step must be a positive"),
        ((0, 3600, float("nan")), "finite number"),
        ((3600, 0, 60), "runs forward"),
        ((0, 1e8, 1e5), "at most 90 days"),
        ((0, 3600, True), "finite number"),
        ((0, 86400, 1), "at most 11,000 points"),
    ],
)
def test_a_capture_window_that_no_query_could_have_is_bad_input(
    tmp_path: Path, plan_json: Path, capsys: pytest.CaptureFixture[str], window: tuple[Any, ...], why: str
) -> None:
    start, end, step = window
    capture = {
        "kind": CAPTURE_KIND,
        "version": 1,
        "start_s": start,
        "end_s": end,
        "step_s": step,
        "queries": {},
    }
    path = _write(tmp_path / "cap.json", json.dumps(capture))
    code = main(["monitor", str(plan_json), "--from", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and why in err and "internal error" not in err, err


def test_a_prometheus_error_stored_in_a_capture_is_quoted_short(
    tmp_path: Path, plan_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rightsize.monitor.prom import FileSource, Window

    base = {"kind": CAPTURE_KIND, "version": 1, "start_s": 0, "end_s": 3600, "step_s": 60}
    answer = {"status": "error", "errorType": "bad_data", "error": "\x1b[2J" + "e" * 100_000}
    path = _write(tmp_path / "cap.json", json.dumps({**base, "queries": {"up": answer}}))
    with pytest.raises(BadInput) as info:
        FileSource.load(path).query_range("up", Window(0, 3600, 60))
    assert len(info.value.message()) < 1000 and "\x1b" not in info.value.message()
