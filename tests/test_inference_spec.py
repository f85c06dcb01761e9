"""The inference spec: length distributions, traffic, SLOs, cross-field checks, the loader, the schema."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.errors import BadInput
from rightsize.spec import (
    InferenceSpec,
    LengthDist,
    Spec,
    get_preset,
    load_spec,
    parse_spec,
    spec_json_schema,
)
from rightsize.spec.load import SPEC_KINDS

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"


def _spec(**sections: Any) -> dict[str, Any]:
    """A valid Llama 3 70B serving spec (64 heads, 8192-token context) with sections replaced."""
    base: dict[str, Any] = {
        "kind": "inference",
        "model": "llama3-70b",
        "serving": {"scenario": "serving"},
        "traffic": {"rate": 10, "prompt_tokens": 512, "output_tokens": 128},
    }
    return {**base, **sections}


def _traffic(**fields: Any) -> dict[str, Any]:
    """The base traffic section with some fields replaced (None removes a field)."""
    merged = {"rate": 10, "prompt_tokens": 512, "output_tokens": 128, **fields}
    return {key: value for key, value in merged.items() if value is not None}


def _problem(spec: dict[str, Any], base_dir: Path = DATA) -> str | None:
    try:
        parse_spec(spec, base_dir)
    except BadInput as err:
        return err.message()
    return None


def _check(spec: dict[str, Any], error: str | None) -> None:
    problem = _problem(spec)
    if error is None:
        assert problem is None, problem
    else:
        assert problem is not None and error in problem, problem


# ---------------------------------------------------------------------------------- cross-field checks

_LOGNORMAL = {"kind": "lognormal", "mean": 1024, "std": 512}


@pytest.mark.parametrize(
    ("sections", "error"),
    [
        # scenario 'serving' needs an arrival rate; either one of rate and peak_rate will do
        ({}, None),
        ({"traffic": _traffic(rate=None, peak_rate=50)}, None),
        ({"traffic": _traffic(rate=None)}, "traffic.rate is required for serving.scenario 'serving'"),
        # fixed_batch needs serving.batch, and no arrival rate
        ({"serving": {"scenario": "fixed_batch", "batch": 4}, "traffic": _traffic(rate=None)}, None),
        (
            {"serving": {"scenario": "fixed_batch"}, "traffic": _traffic(rate=None)},
            "serving.batch is required for serving.scenario 'fixed_batch'",
        ),
        (
            {"serving": {"scenario": "fixed_batch", "batch": 4}},
            "traffic.rate and traffic.peak_rate apply only to serving.scenario 'serving', not 'fixed_batch'",
        ),
        ({"serving": {"scenario": "offline"}, "traffic": _traffic(rate=None)}, None),
        # batch belongs to fixed_batch only
        (
            {"serving": {"scenario": "serving", "batch": 8}},
            "serving.batch (8) applies only to scenario 'fixed_batch', not 'serving'",
        ),
        # engine.max_batch cannot be below the fixed batch
        (
            {
                "serving": {"scenario": "fixed_batch", "batch": 8},
                "traffic": _traffic(rate=None),
                "engine": {"max_batch": 4},
            },
            "engine.max_batch (4) is smaller than serving.batch (8)",
        ),
        (
            {
                "serving": {"scenario": "fixed_batch", "batch": 8},
                "traffic": _traffic(rate=None),
                "engine": {"max_batch": 8},
            },
            None,
        ),
        # tp divides the heads (64)
        ({"targets": {"tp": 8}}, None),
        ({"targets": {"tp": 3}}, "targets.tp (3) must divide the model's attention heads (64)"),
        ({"targets": {"tp": 0}}, "targets.tp: must be greater than zero"),
        # the mean request fits the context (llama3-70b: 8192 tokens)
        ({"traffic": _traffic(prompt_tokens=7000, output_tokens=1000)}, None),
        (
            {"traffic": _traffic(prompt_tokens=8000, output_tokens=500)},
            "the mean request (prompt 8000 + output 500 = 8500 tokens) does not fit the model's context (8192",
        ),
        # normal / lognormal need mean and std
        ({"traffic": _traffic(prompt_tokens=_LOGNORMAL)}, None),
        ({"traffic": _traffic(prompt_tokens={"kind": "normal", "mean": 512, "std": 64})}, None),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "lognormal", "mean": 1024})},
            "traffic.prompt_tokens.std: required for kind 'lognormal'",
        ),
        (
            {"traffic": _traffic(output_tokens={"kind": "normal", "std": 64})},
            "traffic.output_tokens.mean: required for kind 'normal'",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "normal", "mean": 512, "std": 0})},
            "traffic.prompt_tokens.std: must be greater than zero",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"mean": 512, "std": 64})},  # kind defaults to fixed
            "traffic.prompt_tokens.std: applies only to kinds 'normal' and 'lognormal', not 'fixed'",
        ),
        # empirical needs a file (or inline values)
        ({"traffic": _traffic(prompt_tokens={"kind": "empirical", "values": [100, 200]})}, None),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "empirical"})},
            "traffic.prompt_tokens.file: required for kind 'empirical'",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "empirical", "file": "  "})},
            "traffic.prompt_tokens.file: must name a file",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "empirical", "values": []})},
            "traffic.prompt_tokens.values: List should have at least 1 item",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "empirical", "values": [100], "mean": 100})},
            "traffic.prompt_tokens.mean: does not apply to kind 'empirical'",
        ),
        (
            {"traffic": _traffic(prompt_tokens={"kind": "fixed", "mean": 5, "file": "lengths.txt"})},
            "traffic.prompt_tokens.file: applies only to kind 'empirical', not 'fixed'",
        ),
        # max >= min, and the mean lies between them
        ({"traffic": _traffic(prompt_tokens={**_LOGNORMAL, "min": 64, "max": 4096})}, None),
        (
            {"traffic": _traffic(prompt_tokens={**_LOGNORMAL, "min": 64, "max": 32})},
            "traffic.prompt_tokens.max: must be at least min (64)",
        ),
        (
            {"traffic": _traffic(prompt_tokens={**_LOGNORMAL, "max": 512})},
            "traffic.prompt_tokens.max: mean (1024) must lie within min (1) and max (512)",
        ),
        # peak_rate >= rate
        ({"traffic": _traffic(rate=10, peak_rate=20)}, None),
        (
            {"traffic": _traffic(rate=10, peak_rate=5)},
            "traffic.peak_rate: must be at least the average rate (10 requests/s)",
        ),
        ({"traffic": _traffic(rate=0)}, "traffic.rate: must be greater than zero"),
        # burst_cv > 0, and only with bursty arrivals
        ({"traffic": _traffic(arrival="bursty", burst_cv=3)}, None),
        (
            {"traffic": _traffic(arrival="bursty", burst_cv=0)},
            "traffic.burst_cv: Input should be greater than 0",
        ),
        ({"traffic": _traffic(burst_cv=2)}, "traffic.burst_cv: applies only to arrival: bursty"),
        # prefix cache hit rate in [0, 1)
        ({"traffic": _traffic(prefix_cache_hit_rate=0.5)}, None),
        (
            {"traffic": _traffic(prefix_cache_hit_rate=1)},
            "traffic.prefix_cache_hit_rate: Input should be less than 1",
        ),
        # the SLO percentile lies in [50, 99.99]
        ({"slo": {"percentile": 99.99}}, None),
        ({"slo": {"percentile": 40}}, "slo.percentile: must be between 50 and 99.99"),
        ({"slo": {"percentile": 100}}, "slo.percentile: must be between 50 and 99.99"),
        ({"slo": {"percentile": 0.95}}, "not a fraction: 0.95 is written 95"),
        ({"slo": {"percentile": "p-ninety"}}, "slo.percentile: write a percentile such as 95"),
        # goodput in (0, 1]
        ({"slo": {"goodput": 1}}, None),
        ({"slo": {"goodput": 0}}, "slo.goodput: Input should be greater than 0"),
        ({"slo": {"goodput": 1.5}}, "slo.goodput: Input should be less than or equal to 1"),
        # e2e cannot be shorter than ttft
        ({"slo": {"ttft": "2s", "e2e": "20s"}}, None),
        ({"slo": {"ttft": "2s", "e2e": "1s"}}, "slo.e2e: cannot be shorter than slo.ttft (2 s) (got '1s')"),
        # speculative decoding: k >= 1, 0 < acceptance <= 1
        ({"engine": {"speculative": {"draft_tokens": 4, "acceptance_rate": 0.7}}}, None),
        (
            {"engine": {"speculative": {"draft_tokens": 0, "acceptance_rate": 0.7}}},
            "engine.speculative.draft_tokens: Input should be greater than or equal to 1",
        ),
        (
            {"engine": {"speculative": {"draft_tokens": 4, "acceptance_rate": 0}}},
            "engine.speculative.acceptance_rate: Input should be greater than 0",
        ),
        # policy: 0 <= headroom < 1, 0 < utilisation_target <= 1
        ({"policy": {"headroom": 0.25, "utilization_target": 0.7}}, None),  # US spelling accepted
        ({"policy": {"headroom": 1}}, "policy.headroom: Input should be less than 1"),
        ({"policy": {"utilisation_target": 0}}, "policy.utilisation_target: must be from 0.05 to 1"),
        (
            {"policy": {"utilisation_target": 1e-9}},
            "must be from 0.05 to 1, the share of the time a resource is busy (0.8 is 80%); under 5% the plan is idle capacity (got 1e-09)",
        ),
        # enumerations
        ({"serving": {"weight_precision": "fp4", "kv_precision": "int4"}}, None),
        ({"serving": {"kv_precision": "fp4"}}, "serving.kv_precision"),
        ({"targets": {"objective": "throughput"}}, "'cost', 'gpus' or 'latency'"),
    ],
)
def test_checks(sections: dict[str, Any], error: str | None) -> None:
    _check(_spec(**sections), error)


def test_cross_field_problems_are_reported_together() -> None:
    problem = _problem(_spec(serving={"scenario": "serving", "batch": 8}, targets={"tp": 3}))
    assert problem is not None and "2 problems" in problem
    assert "serving.batch (8)" in problem and "targets.tp (3)" in problem


def test_field_problems_are_reported_together() -> None:
    traffic = _traffic(prompt_tokens={"kind": "lognormal", "mean": 1024}, peak_rate=5)
    problem = _problem(_spec(traffic=traffic, slo={"percentile": 40}))
    assert problem is not None and "3 problems" in problem
    for field in ("traffic.prompt_tokens.std", "traffic.peak_rate", "slo.percentile"):
        assert f"    - {field}: " in problem


@pytest.mark.parametrize(
    ("sections", "error"),
    [
        # a plain spec that forgot `kind: inference` is told so, not only that `training` is missing
        (
            {"kind": "training"},
            "traffic: unknown key for kind training; it belongs to kind inference (set `kind: inference`)",
        ),
        (
            {"training": {"seq_len": 8192, "global_batch": 8}},
            "training: unknown key for kind inference; it belongs to kind training",
        ),
        ({"traffic": _traffic(peak_rat=50)}, "traffic.peak_rat: unknown key; did you mean peak_rate?"),
        ({"slo": {"ttft": "500 ns"}}, "slo.ttft: Cannot read duration '500 ns'"),
        (
            {"traffic": _traffic(prompt_tokens="lots")},
            "traffic.prompt_tokens.mean: Cannot read length 'lots'",
        ),
        ({"traffic": {"rate": 10, "output_tokens": 5}}, "traffic.prompt_tokens: required, but missing"),
        ({"traffic": None}, "traffic: Input should be a valid dictionary"),
    ],
)
def test_errors_name_the_field(sections: dict[str, Any], error: str) -> None:
    _check(_spec(**sections), error)


def test_missing_traffic_is_named() -> None:
    spec = _spec()
    del spec["traffic"]
    _check(spec, "traffic: required, but missing")


# ---------------------------------------------------------------------------------------- values


def test_defaults() -> None:
    spec = parse_spec(_spec())
    assert isinstance(spec, InferenceSpec)
    assert (spec.serving.weight_precision, spec.serving.kv_precision, spec.serving.scenario) == (
        "bf16",
        "bf16",
        "serving",
    )
    assert (spec.slo.ttft_s, spec.slo.tpot_s, spec.slo.e2e_s, spec.slo.percentile) == (None, None, None, 95.0)
    engine = spec.engine
    assert (engine.continuous_batching, engine.chunked_prefill, engine.chunk_tokens, engine.block_tokens) == (
        True,
        True,
        2048,
        16,
    )
    assert engine.max_batch is None and engine.speculative is None
    assert (spec.policy.headroom, spec.policy.utilisation_target) == (0.2, 0.8)
    assert (spec.targets.objective, spec.targets.accelerators, spec.seed) == ("cost", None, 0)
    assert (spec.traffic.arrival, spec.traffic.burst_cv, spec.traffic.prefix_cache_hit_rate) == (
        "poisson",
        1.0,
        0.0,
    )


@pytest.mark.parametrize(
    ("traffic", "rate", "peak"),
    [
        ({"rate": 10}, 10.0, 10.0),  # peak defaults to the average
        ({"peak_rate": 50}, 50.0, 50.0),  # and the average to the peak
        ({"rate": 30, "peak_rate": 50}, 30.0, 50.0),
        ({"rate_per_s": "1.5k", "peak_rate_per_s": "2k"}, 1500.0, 2000.0),  # field names and counts work too
    ],
)
def test_rates(traffic: dict[str, Any], rate: float, peak: float) -> None:
    spec = parse_spec(_spec(traffic={"prompt_tokens": 512, "output_tokens": 128, **traffic}))
    assert isinstance(spec, InferenceSpec)
    assert (spec.traffic.rate_per_s, spec.traffic.peak_rate_per_s) == (rate, peak)


@pytest.mark.parametrize(
    ("slo", "expected"),
    [
        ({"ttft": "500ms", "tpot": "50 ms", "e2e": "20s"}, (0.5, 0.05, 20.0, 95.0)),
        ({"ttft_s": 0.2, "tpot_s": "30ms", "percentile": "p99"}, (0.2, 0.03, None, 99.0)),
        ({"tpot": "800us", "percentile": "P99.9"}, (None, 800e-6, None, 99.9)),
        ({"percentile": "90%"}, (None, None, None, 90.0)),
    ],
)
def test_slo_units_and_percentiles(slo: dict[str, Any], expected: tuple[Any, ...]) -> None:
    spec = parse_spec(_spec(slo=slo))
    assert isinstance(spec, InferenceSpec)
    got = (spec.slo.ttft_s, spec.slo.tpot_s, spec.slo.e2e_s, spec.slo.percentile)
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (512, ("fixed", 512, None)),  # the shorthand: a plain integer is a fixed length
        ("2k", ("fixed", 2048, None)),  # k on a token length is 1,024
        ({"mean": 128}, ("fixed", 128, None)),
        ({"kind": "lognormal", "mean": 1024, "std": 512, "max": "8k"}, ("lognormal", 1024, 512.0)),
    ],
)
def test_length_shorthand(value: Any, expected: tuple[Any, ...]) -> None:
    spec = parse_spec(_spec(traffic=_traffic(prompt_tokens=value)))
    assert isinstance(spec, InferenceSpec)
    dist = spec.traffic.prompt_tokens
    assert (dist.kind, dist.mean, dist.std) == expected
    assert dist.mean_tokens == expected[1]


def test_length_dist_standalone() -> None:
    assert LengthDist.model_validate(256) == LengthDist(kind="fixed", mean=256)
    assert LengthDist.model_validate({"values": [1, 2, 6]}).mean_tokens == 3.0  # kind implied


def test_accelerators_all_and_single() -> None:
    for value, expected in (("all", None), (["all"], None), ("h100-sxm", ["h100-sxm"])):
        spec = parse_spec(_spec(targets={"accelerators": value}))
        assert isinstance(spec, InferenceSpec) and spec.targets.accelerators == expected


# --------------------------------------------------------------------------------- empirical files


def _serving_spec_file(
    tmp_path: Path, lengths: str, prompt: str = "{kind: empirical, file: lengths.csv}"
) -> Path:
    (tmp_path / "lengths.csv").write_text(lengths)
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"kind: inference\nmodel: llama3-8b\ntraffic:\n  rate: 5\n  prompt_tokens: {prompt}\n  output_tokens: 64\n"
    )
    return path


@pytest.mark.parametrize(
    ("lengths", "values"),
    [
        ("100\n200\n300\n", [100, 200, 300]),
        # a header row, comments, blank lines, extra CSV columns, integer-valued floats, a BOM
        (
            "\ufeffprompt_tokens,output_tokens\n# from the gateway logs\n100,20\n\n200.0,35\n300 , 9\n",
            [100, 200, 300],
        ),
        ("42", [42]),  # no trailing newline
    ],
)
def test_empirical_file_is_read_relative_to_the_spec(tmp_path: Path, lengths: str, values: list[int]) -> None:
    spec = load_spec(_serving_spec_file(tmp_path, lengths))
    assert isinstance(spec, InferenceSpec)
    dist = spec.traffic.prompt_tokens
    assert (dist.kind, dist.file, dist.values) == ("empirical", "lengths.csv", values)
    assert dist.mean_tokens == pytest.approx(sum(values) / len(values))


def test_empirical_kind_is_implied_by_a_file(tmp_path: Path) -> None:
    spec = load_spec(_serving_spec_file(tmp_path, "7\n9\n", prompt="{file: lengths.csv}"))
    assert isinstance(spec, InferenceSpec) and spec.traffic.prompt_tokens.values == [7, 9]


@pytest.mark.parametrize(
    ("lengths", "prompt", "fragments"),
    [
        (
            "100\nabc\n300\n",
            None,
            ["traffic.prompt_tokens", "lengths.csv", "line 2", "is not a whole number"],
        ),
        ("100\n12.5\n", None, ["lengths.csv", "line 2", "not a whole number"]),
        ("100\n0\n", None, ["lengths.csv", "line 2", "from 1 to 2^31"]),
        ("100\n-5\n", None, ["lengths.csv", "line 2", "not a whole number"]),
        ("# nothing yet\n\n", None, ["lengths.csv", "holds no lengths"]),
        ("header_only\n", None, ["lengths.csv", "holds no lengths"]),
        (
            "1\n",
            "{kind: empirical, file: nope.csv}",
            ["traffic.prompt_tokens", "nope.csv", "No such file"],
        ),
        ("1\n", "{kind: empirical, file: lengths.csv, values: [1]}", ["either in file or inline in values"]),
    ],
)
def test_empirical_file_errors(
    tmp_path: Path, lengths: str, prompt: str | None, fragments: list[str]
) -> None:
    path = _serving_spec_file(tmp_path, lengths, **({"prompt": prompt} if prompt else {}))
    with pytest.raises(BadInput) as info:
        load_spec(path)
    message = info.value.message()
    for fragment in fragments:
        assert fragment in message, message
    # issue #15: a file's contents never reach an error message (the message names the file:
    # its path, pytest's numbered temporary folder, may hold any of these strings by chance)
    contents = message.replace(str(tmp_path), "<tmp>")
    for secret in ("abc", "12.5", "-5", "header_only"):
        assert secret not in contents


# ------------------------------------------------------------------------- model, same as training


@pytest.mark.parametrize(
    ("model", "name", "layers"),
    [
        ("Meta-Llama-3-70B", "llama3-70b", 80),  # a preset alias
        ("meta-llama/Meta-Llama-3-70B", "llama3-70b", 80),  # a Hugging Face id
        ("Meta-Llama-3-8B/config.json", "Meta-Llama-3-8B", 32),  # a config.json relative to the spec
        ({"preset": "llama3-70b", "layers": 40, "name": "half-70b"}, "half-70b", 40),
        ({"config": "Meta-Llama-3-8B", "max_seq_len": 131072}, "Meta-Llama-3-8B", 32),
    ],
)
def test_model_inputs(model: Any, name: str, layers: int) -> None:
    spec = parse_spec(_spec(model=model), DATA)
    assert (spec.model.name, spec.model.layers) == (name, layers)


def test_model_preset_matches_training() -> None:
    assert parse_spec(_spec(model="llama3-70b")).model == get_preset("llama3-70b")


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("llama3-7b", "model: Unknown model preset 'llama3-7b'"),
        ("./no/such/config.json", "Cannot find the model config"),
        ({"preset": "llama3-70b", "layer": 40}, "model.layer: unknown key; did you mean layers?"),
        ({"preset": "llama3-70b", "config": "x.json"}, "either preset or config"),
    ],
)
def test_model_input_errors(model: Any, error: str) -> None:
    _check(_spec(model=model), error)


# ------------------------------------------------------------------------------- examples, loader


def test_serving_example() -> None:
    spec = load_spec(EXAMPLES / "llama3-70b-chat-serving.yaml")
    assert isinstance(spec, InferenceSpec)
    assert spec.model.name == "llama3-70b"
    assert (spec.serving.scenario, spec.serving.weight_precision, spec.serving.kv_precision) == (
        "serving",
        "fp8",
        "fp8",
    )
    traffic = spec.traffic
    assert (traffic.rate_per_s, traffic.peak_rate_per_s, traffic.arrival) == (30.0, 50.0, "poisson")
    prompt, output = traffic.prompt_tokens, traffic.output_tokens
    assert (prompt.kind, prompt.mean, prompt.std, prompt.max) == ("lognormal", 1024, 512.0, 8192)
    assert (output.kind, output.mean, output.std, output.max) == ("lognormal", 256, 128.0, 2048)
    assert traffic.prefix_cache_hit_rate == 0.3
    assert (spec.slo.ttft_s, spec.slo.tpot_s, spec.slo.percentile) == pytest.approx((0.5, 0.05, 95.0))
    assert spec.targets.accelerators == ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", "mi300x", "l40s"]
    assert spec.targets.objective == "cost"


def test_batch1_example() -> None:
    spec = load_spec(EXAMPLES / "llama2-7b-batch1.yaml")
    assert isinstance(spec, InferenceSpec)
    assert (spec.model.name, spec.serving.scenario, spec.serving.batch) == ("llama2-7b", "fixed_batch", 1)
    assert spec.traffic.prompt_tokens == LengthDist(kind="fixed", mean=5)
    assert spec.traffic.output_tokens == LengthDist(kind="fixed", mean=200)
    assert spec.traffic.rate_per_s is None and spec.serving.weight_precision == "bf16"
    assert (spec.targets.accelerators, spec.targets.tp, spec.targets.replicas) == (["a100-sxm-80gb"], 1, 1)


@pytest.mark.parametrize(
    "example",
    sorted(p for p in EXAMPLES.glob("*.yaml") if "\nkind: fleet" not in p.read_text()),
    ids=lambda path: path.name,
)
def test_every_example_loads_as_its_kind(example: Path) -> None:
    kind = (yaml.safe_load(example.read_text()) or {}).get("kind", "training")
    spec: Spec = load_spec(example)
    assert isinstance(spec, SPEC_KINDS[kind])
    assert spec.kind == kind


def test_spec_is_frozen() -> None:
    spec = parse_spec(_spec())
    with pytest.raises(ValueError, match="frozen"):
        spec.traffic.__setattr__("rate_per_s", 5.0)


# ------------------------------------------------------------------------------------------ schema


def _objects(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every JSON-Schema object with properties, with where it is."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            found.append((path, node))
        for key, value in node.items():
            found += _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _objects(value, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("kind", [None, "training", "inference"])
def test_every_schema_property_has_a_description(kind: str | None) -> None:
    objects = _objects(spec_json_schema(kind))
    assert len(objects) >= 6
    missing = [
        f"{path}.{name}"
        for path, obj in objects
        for name, prop in obj["properties"].items()
        if not str(prop.get("description", "")).strip()
    ]
    assert missing == []


def test_schema_of_any_kind() -> None:
    schema = spec_json_schema()
    kinds = ["TrainingSpec", "InferenceSpec", "VisionSpec", "RecsysSpec", "FleetSpec", "SweepSpec"]
    assert schema["oneOf"] == [{"$ref": f"#/$defs/{kind}"} for kind in kinds]
    assert schema["properties"]["kind"]["enum"] == [
        "training",
        "inference",
        "vision",
        "recommendation",
        "fleet",
        "sweep",
    ]
    # every top-level key of either kind is described at the top, for editors
    for kind in kinds:
        assert set(schema["$defs"][kind]["properties"]) <= set(schema["properties"])
    targets = [option["$ref"] for option in schema["properties"]["targets"]["anyOf"]]
    assert targets == [f"#/$defs/{t}Targets" for t in ("", "Inference", "Vision", "Recsys")]
    # the kinds are told apart by their constant: inference requires it, training defaults to it
    inference = schema["$defs"]["InferenceSpec"]
    assert inference["properties"]["kind"]["const"] == "inference" and "kind" in inference["required"]
    assert "kind" not in schema["$defs"]["TrainingSpec"].get("required", [])


def test_inference_schema() -> None:
    schema = spec_json_schema("inference")
    kinds = [option.get("type") or option.get("$ref") for option in schema["properties"]["model"]["anyOf"]]
    assert kinds == ["string", "#/$defs/ModelArch", "object", "object"]
    prompt = schema["$defs"]["Traffic"]["properties"]["prompt_tokens"]["anyOf"]
    assert [option.get("type") or option.get("$ref") for option in prompt] == [
        "integer",
        "string",
        "#/$defs/LengthDist",
    ]
    assert set(schema["$defs"]["SLO"]["properties"]) == {"ttft", "tpot", "e2e", "percentile", "goodput"}


def test_schema_unknown_kind() -> None:
    with pytest.raises(BadInput, match="Did you mean inference"):
        spec_json_schema("inferenc")


ANY_KEY = "<any id>"


def _schema_keys(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    """The keys an object schema (following $ref and anyOf) accepts."""
    if "$ref" in node:
        return _schema_keys(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    keys = set(node.get("properties", {}))
    if isinstance(node.get("additionalProperties"), dict):  # a map keyed by ids (prices: {h100-sxm: ...})
        keys |= {ANY_KEY}
    for option in node.get("anyOf", []):
        keys |= _schema_keys(schema, option)
    return keys


def _assert_keys_in_schema(schema: dict[str, Any], node: dict[str, Any], data: Any, where: str) -> None:
    if not isinstance(data, dict):
        return
    allowed = _schema_keys(schema, node)
    for key, value in data.items():
        assert key in allowed or ANY_KEY in allowed, f"{where}.{key} is not in the schema"
        props = {}
        for candidate in [node, *node.get("anyOf", [])]:
            target = candidate
            if "$ref" in target:
                target = schema["$defs"][target["$ref"].rsplit("/", 1)[-1]]
            props.update(target.get("properties", {}))
        if key in props and key != "model":
            _assert_keys_in_schema(schema, props[key], value, f"{where}.{key}")


@pytest.mark.parametrize(
    "example",
    sorted(p for p in EXAMPLES.glob("*.yaml") if "\nkind: fleet" not in p.read_text()),
    ids=lambda path: path.name,
)
def test_schema_knows_every_key_of_the_examples(example: Path) -> None:
    data = yaml.safe_load(example.read_text())
    kind = data.get("kind", "training")
    schema = spec_json_schema(kind)
    _assert_keys_in_schema(schema, schema, copy.deepcopy(data), "$")
