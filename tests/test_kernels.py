"""Measured-kernel layer (#20): interpolation, refusal to extrapolate, per-op fallback, table files.

The tables here are synthetic and small: every latency follows a known power law, so the
interpolated value can be checked exactly, and the shapes a test asks for are chosen
inside or outside the measured range on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica
from rightsize.perf.kernels.grid import Grid
from rightsize.perf.kernels.table import build_table, read_table
from rightsize.perf.kernels.timing import split_lookup
from rightsize.spec.model import ModelArch

LLAMA3_8B = ModelArch(
    name="llama-3-8b",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    ffn_hidden=14336,
    vocab=128256,
    mlp="swiglu",
)
META = {
    "accelerator": "h100-sxm",
    "engine": "tensorrt-llm",
    "version": "test",
    "source": "synthetic",
    "as_of": "2026-11",
}
POW2 = [2.0**i for i in range(0, 16)]


def _gemm_law(m: float, n: float, k: float) -> float:
    return 1e-12 * m * n * k + 1e-6  # not a pure power law: interpolation is approximate


def _records(gemm_m_max: float = 4096.0) -> list[dict]:
    recs: list[dict] = []
    for m in [x for x in POW2 if x <= gemm_m_max]:
        for n in (1024.0, 4096.0, 8192.0, 16384.0, 32768.0):
            for k in (1024.0, 4096.0, 16384.0):
                for dtype, scale in (("fp8", 1.0), ("bf16", 2.0)):  # the LM head runs in bf16
                    recs.append(
                        {
                            "op": "gemm",
                            "dtype": dtype,
                            "m": m,
                            "n": n,
                            "k": k,
                            "latency_s": scale * 1e-12 * m * n * k,
                        }
                    )
    for b in (1.0, 8.0, 64.0, 128.0):
        for s in (128.0, 1024.0, 4096.0):
            recs.append(
                {
                    "op": "generation_attention",
                    "kv_dtype": "fp8",
                    "kv_heads": 8,
                    "head_dim": 128,
                    "heads": 32,
                    "batch": b,
                    "context_len": s,
                    "latency_s": 1e-9 * b * s,
                }  # fmt: skip
            )
    return recs


def test_grid_is_exact_on_power_laws_between_points():
    g = Grid.from_points(
        ("m", "n"), [((m, n), 3e-9 * m**1.0 * n**0.5) for m in (1, 4, 16) for n in (16, 256)]
    )
    assert float(g(2.0, 64.0)) == pytest.approx(3e-9 * 2.0 * 8.0, rel=1e-9)
    assert float(g(16.0, 256.0)) == pytest.approx(3e-9 * 16 * 16, rel=1e-9)  # a grid point itself


def test_grid_refuses_to_extrapolate():
    g = Grid.from_points(("m",), [((m,), 1e-6 * m) for m in (2, 4, 8)])
    out = g(np.array([1.0, 3.0, 8.0, 9.0]))
    assert np.isnan(out[0]) and np.isnan(out[3])  # below and above the measured range
    assert np.isfinite(out[1:3]).all()


def test_grid_refuses_a_cell_with_an_unmeasured_corner():
    rows = [((1.0, 1.0), 1.0), ((2.0, 1.0), 2.0), ((1.0, 2.0), 2.0)]  # (2, 2) never measured
    g = Grid.from_points(("a", "b"), rows)
    assert np.isnan(float(g(1.5, 1.5)))
    assert float(g(1.5, 1.0)) == pytest.approx(1.5, rel=1e-9)  # an edge whose corners are measured


def test_repeated_measurements_keep_the_fastest():
    g = Grid.from_points(("m",), [((1.0,), 3.0), ((1.0,), 2.0), ((2.0,), 4.0)])
    assert float(g(1.0)) == 2.0


def test_split_times_a_large_batch_as_measured_parts():
    g = Grid.from_points(("b",), [((b,), 1e-6 * b) for b in (64.0, 128.0, 256.0)])
    lat, parts = split_lookup(lambda x: g(x), np.array([512.0, 100.0, 4096.0]), "batch")
    assert lat[0] == pytest.approx(512e-6) and parts[0] == 2
    assert parts[1] == 1
    assert np.isnan(lat[2])  # 4096 / 8 = 512 is still beyond the table: refused, not extrapolated


def test_split_pays_the_kernels_fixed_cost_once():
    """A kernel of fixed cost 5 us plus 1 us per sequence, measured up to 256 sequences: 1,024
    sequences as 4 parts cost 5 + 1,024 us, not 4 x (5 + 256) us."""
    g = Grid.from_points(("b",), [((b,), 5e-6 + 1e-6 * b) for b in (1.0, 2.0, 64.0, 256.0)])
    lat, parts = split_lookup(lambda x: g(x), np.array([1024.0]), "batch", floor_sizes=(1.0, 2.0))
    assert parts[0] == 4 and lat[0] == pytest.approx(5e-6 + 1024e-6, rel=0.01)
    whole, _ = split_lookup(lambda x: g(x), np.array([1024.0]), "batch")
    assert whole[0] == pytest.approx(4 * (5e-6 + 256e-6), rel=0.01)  # without the intercept


def test_prefill_attention_of_more_prompts_than_measured_is_split_not_analytic():
    table = build_table(META, _records() + _context_records())
    rep = _replica(table)
    t, report = rep.prefill_detail(128.0, 0.0, 512.0)  # measured up to 128 prompts
    assert report.measured["context_attention"] == 1.0
    assert float(t) > 0


def _context_records(
    law=lambda b, s: 2e-6 + 1e-10 * b * s * s,
    batches: tuple[float, ...] = (1.0, 2.0, 64.0, 128.0),
    seqs: tuple[float, ...] = (64.0, 256.0),
) -> list[dict]:
    """Context attention records of the table at each batch and sequence, timed by `law`."""
    return [
        {
            "op": "context_attention",
            "dtype": "fp8",
            "kv_heads": 8,
            "head_dim": 128,
            "heads": 32,
            "seq_len": s,
            "batch": b,
            "latency_s": law(b, s),
        }  # fmt: skip
        for b in batches
        for s in seqs
    ]


def test_split_parts_may_be_smaller_where_each_carries_enough_work():
    """Long-context decode attention (issue 30): a part of 8 sequences of 16k tokens streams as
    much KV as 64 of 2k, so a batch of 48 measured only up to 16 is timed as 4 parts of 12."""
    g = Grid.from_points(("b",), [((b,), 1e-6 * b) for b in (1.0, 8.0, 16.0)])
    size = np.array([48.0, 48.0])
    lat, parts = split_lookup(lambda x: g(x), size, "batch", np.array([8.0, 64.0]))
    assert lat[0] == pytest.approx(48e-6) and parts[0] == 4
    assert np.isnan(lat[1])  # the default minimum part (64 sequences) refuses the split


def _replica(table=None, tp: int = 1) -> Replica:
    acc = get_accelerator("h100-sxm")
    return Replica.build(
        LLAMA3_8B, acc, node_for(acc.id), tp, "fp8", "fp8", engine="tensorrt-llm", kernels=table
    )


def test_decode_step_comes_from_the_table_where_it_covers_the_shapes():
    table = build_table(META, _records())
    rep, analytic = _replica(table), _replica()
    t, report = rep.decode_step_detail(64.0, 64.0 * 1024.0)
    assert report.measured["gemm_qkv"] == 1.0 and report.measured["generation_attention"] == 1.0
    # logits (n = vocab 128256) is wider than any measured n: timed as 4 measured parts of 32064
    assert report.measured["gemm_logits"] == 1.0
    a = 4096.0
    gemms = 1e-12 * 64 * ((32 + 16) * 128 * a + a * a + 2 * 14336 * a + a * 14336)
    attention = 1e-9 * 64 * 1024
    expected_layers = 32 * (gemms + attention) + 2e-12 * 64 * 128256 * a  # + logits, from the bf16 table
    assert float(t) > expected_layers  # plus sampling and iteration overhead
    assert float(t) < expected_layers + 2e-3
    assert report.source in ("measured kernels", "mixed")
    assert float(analytic.decode_step_s(64.0, 64.0 * 1024.0)) != pytest.approx(float(t), rel=1e-3)


def test_outside_the_table_each_op_falls_back_to_analytic_and_says_why():
    table = build_table(META, _records(gemm_m_max=32.0))
    rep, analytic = _replica(table), _replica()
    t, report = rep.decode_step_detail(1024.0, 1024.0 * 8192.0)  # m = 1024 > 32 measured; context > 4096
    assert report.measured["gemm_qkv"] == 0.0
    assert "outside the measured range" in report.reasons["gemm_qkv"]
    assert report.source == "analytic"
    assert float(t) == pytest.approx(float(analytic.decode_step_s(1024.0, 1024.0 * 8192.0)), rel=0.35)


def test_model_without_an_op_list_is_analytic_with_the_reason():
    moe = LLAMA3_8B.model_copy(update={"experts": 8, "experts_per_token": 2})
    acc = get_accelerator("h100-sxm")
    rep = Replica.build(moe, acc, node_for(acc.id), 1, "fp8", "fp8", kernels=build_table(META, _records()))
    _, report = rep.decode_step_detail(8.0, 8.0 * 512)
    assert report.source == "analytic"
    assert "mixture-of-experts" in report.reasons["decode_step"]


def test_table_file_round_trip_and_bad_files(tmp_path: Path):
    path = tmp_path / "k.jsonl"
    lines = [{"type": "header", "kind": "kernels", **META}] + [
        {"type": "result", "status": "ok", **r} for r in _records()
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{torn", encoding="utf-8")
    t = read_table(path)
    assert t.accelerator == "h100-sxm" and t.ops()["gemm"] == len(
        [r for r in _records() if r["op"] == "gemm"]
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "header", "kind": "profile"}) + "\n", encoding="utf-8")
    with pytest.raises(BadInput, match="not a kernel table"):
        read_table(bad)
    with pytest.raises(BadInput, match="op 'conv'"):
        build_table(META, [{"op": "conv", "latency_s": 1.0}])
    with pytest.raises(BadInput, match="no 'source'"):
        build_table({"accelerator": "h100-sxm", "as_of": "2026-11"}, _records())


def test_profiler_sweep_writes_a_table_the_model_reads(tmp_path: Path):
    pytest.importorskip("torch", reason="the kernel sweep needs PyTorch (pip install 'rightsize[profile]')")
    from rightsize.profile.kernels import run_kernel_sweep

    cfg = {"dtypes": ["fp32"], "gemm_m": [1, 8], "gemm_nk": [64, 128], "heads": 4, "kv_heads": 2,
           "head_dim": 16, "batch": [1, 2], "seq": [16, 32], "iters": 1}  # fmt: skip
    out = tmp_path / "kernels.jsonl"
    res = run_kernel_sweep("h100-sxm", cfg, out=out, device="cpu")
    assert len(res["results"]) == 8 + 4 + 4
    table = read_table(out)
    assert table.engine == "pytorch" and "rightsize profile kernels on CPU" in table.source
    g = table.grid("gemm", "fp32")
    assert g is not None and np.isfinite(float(g(4.0, 96.0, 96.0)))  # inside: interpolated
    assert np.isnan(float(g(64.0, 96.0, 96.0)))  # m beyond 8: refused
    # the model's shapes are far outside this toy sweep: every op falls back, and says so
    _, report = _replica(table).decode_step_detail(8.0, 8.0 * 512)
    assert report.source == "analytic" and report.reasons


def test_validate_reports_each_rows_source_and_both_errors(tmp_path: Path):
    from rightsize.validate.run import validate_paths

    header = "id,source,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,mlp,accelerator,gpus,tp,"
    header += (
        "weight_precision,kv_precision,scenario,batch,input_len,output_len,metric,value,note,engine,version"
    )
    row = "syn-8b,synthetic,llama-3-8b,32,4096,32,8,14336,128256,swiglu,h100-sxm,1,1,fp8,fp8,fixed_batch,64,"
    row += "128,256,output_tokens_per_s,5000,synthetic row,tensorrt-llm,test"
    gpu_row = (
        row.replace("syn-8b", "syn-8b-a100")
        .replace("h100-sxm", "a100-sxm-80gb")
        .replace(",fp8,fp8,", ",bf16,bf16,")
        .replace("tensorrt-llm,test", "gpt-fast,")
    )
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("\n".join([header, row, gpu_row]) + "\n", encoding="utf-8")
    table = build_table(META, _records())
    result = validate_paths([csv_path], kernel_tables=[table])
    measured, other = result["rows"]
    assert measured["source"] in ("measured kernels", "mixed")
    assert measured["kernel_table"] == "synthetic"
    assert {"analytic_error", "kernels_error"} <= set(measured)
    assert measured["error"] == pytest.approx(measured["kernels_error"])
    # the A100 gpt-fast row has no table (the synthetic one is h100-sxm): analytic, with the reason
    assert other["source"] == "analytic" and "kernels_error" not in other
    assert "measured kernels (covered rows)" in result["by_source"]
    assert result["by_source"]["analytic (all serving rows)"]["n"] == 2


def test_measured_steps_add_the_element_wise_kernels_tables_do_not_measure():
    """Issue 30: two residual-add + RMSNorm passes and the SwiGLU activation per layer, memory
    bound, linear in the tokens (AIConfigurator's own op list has them; its tables do not)."""
    from rightsize.perf.kernels.timing import _elementwise_s

    rep = _replica()
    one, many = float(_elementwise_s(rep, np.asarray(1.0))), float(_elementwise_s(rep, np.asarray(256.0)))
    assert many == pytest.approx(256 * one)
    elems = 8 * 4096 + 3 * 14336  # norms 4 x hidden each, SwiGLU reads 2 x ffn and writes ffn
    assert one == pytest.approx(elems * 2.0 / (rep.hw.hbm_bytes_per_s * rep.hw.memory_bw_fraction))
    assert float(_elementwise_s(_replica(tp=2), np.asarray(1.0))) < one  # the MLP part splits over tp


def _long_context_records() -> list[dict]:
    """Context attention measured up to 4,096 tokens along s^1.5 (a kernel still saturating)."""
    return _context_records(lambda b, s: 1e-9 * b * s**1.5, (1.0, 2.0), (1024.0, 2048.0, 4096.0))


def test_a_prompt_beyond_the_longest_measured_follows_the_last_segments_power_law():
    """Issue 30: a 20,000-token prompt on tables that stop at 16,384 was timed analytically, a
    different calibration mixed into a measured prediction; now the table's own trend carries
    it, up to twice the longest measured prompt, and beyond that the analytic model says why."""
    from rightsize.perf.kernels.timing import _beyond_longest

    table = build_table(META, _records() + _long_context_records())
    g = table.grid("context_attention", "fp8", 8, 128)
    t = _beyond_longest(g, 32.0, np.array([2048.0, 6000.0, 8192.0, 9000.0]), np.array([1.0, 1.0, 2.0, 1.0]))
    assert t[0] == pytest.approx(1e-9 * 2048.0**1.5, rel=1e-9)  # measured: the grid itself
    assert t[1] == pytest.approx(1e-9 * 6000.0**1.5, rel=1e-9)  # the law of 2,048 -> 4,096 extended
    assert t[2] == pytest.approx(2e-9 * 8192.0**1.5, rel=1e-9)
    assert np.isnan(t[3])  # beyond twice the longest measured prompt: refused
    rep = _replica(table)
    _, inside = rep.prefill_detail(6000.0, 0.0, 1.0)
    assert inside.measured["context_attention"] == 1.0
    _, beyond = rep.prefill_detail(9000.0, 0.0, 1.0)
    assert beyond.measured["context_attention"] == 0.0 and "outside" in beyond.reasons["context_attention"]


def test_extension_exponent_is_held_between_linear_and_quadratic():
    """A noisy last segment must not extrapolate faster than causal attention's s^2 work (or
    slower than its s) : the exponent is clipped to [1, 2]."""
    from rightsize.perf.kernels.timing import _beyond_longest

    rows = [((32.0, s, 1.0), 1e-12 * s**3) for s in (1024.0, 2048.0)]  # a cubic segment
    g = Grid.from_points(("heads", "seq_len", "batch"), rows)
    t = _beyond_longest(g, 32.0, np.array([4096.0]), np.array([1.0]))
    assert t[0] == pytest.approx(1e-12 * 2048.0**3 * 2.0**2, rel=1e-9)


def test_measured_steps_count_the_embedding_and_its_all_reduce():
    """AIConfigurator's Llama op list: one embedding lookup per step and, under tensor
    parallelism, the all-reduce of the vocabulary-split rows."""
    from rightsize.perf.kernels.timing import OpReport, _embedding_s

    table = build_table(META, _records())
    one, two = _replica(table), _replica(table, tp=2)
    e1 = float(_embedding_s(one, table, OpReport("t"), np.asarray(64.0)))
    assert e1 == pytest.approx(
        2 * 64 * 4096 * 2.0 / (one.hw.hbm_bytes_per_s * one.hw.memory_bw_fraction) + one.hw.kernel_overhead_s
    )
    assert float(_embedding_s(two, table, OpReport("t"), np.asarray(64.0))) > e1  # plus the all-reduce


def test_measured_step_breakdown_adds_up_to_its_total():
    """Each op's seconds (layers summed) are reported, and they add up to the step."""
    table = build_table(META, _records() + _context_records())
    rep = _replica(table, tp=2)
    t, report = rep.decode_step_detail(64.0, 64.0 * 1024.0)
    assert {"gemm_qkv", "attention", "all_reduce", "elementwise", "gemm_logits", "embedding"} <= set(
        report.seconds
    )
    assert float(sum(report.seconds.values())) == pytest.approx(float(t), rel=1e-12)
    p, pre = rep.prefill_detail(128.0, 0.0, 4.0)
    assert float(sum(pre.seconds.values())) == pytest.approx(float(p), rel=1e-12)
