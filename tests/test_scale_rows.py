"""The published rows that go wrong with scale (issue 27): the MLPerf Training v4.0 Llama 2 70B
LoRA rows of finetune.csv and the Falcon-180B whole run of whole_runs.csv. These check that each
row says what its source says (value derived as its note states, layout adding up, the
submission's micro-batches per step), so a later edit cannot silently change what is compared."""

from __future__ import annotations

import csv
import re
from importlib import resources

import pytest

DATA = resources.files("rightsize.validate") / "data"


def _rows(name: str) -> dict[str, dict[str, str]]:
    with (DATA / name).open(newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


FINETUNE = _rows("finetune.csv")
WHOLE_RUNS = _rows("whole_runs.csv")
MLPERF = {k: v for k, v in FINETUNE.items() if k.startswith("mlperf-")}

# gradient_accumulation_steps logged by each submission's result_0.txt
# (mlcommons/training_results_v4.0, NVIDIA/results/<system>/llama2_70b_lora/result_0.txt)
LOGGED_MICRO_BATCHES_PER_STEP = {
    "mlperf-t4.0-llama2-70b-lora-8xh100": 4,  # eos_ngc24.04_nemo
    "mlperf-t4.0-llama2-70b-lora-8xh200": 2,  # h200_ngc24.04_nemo
    "mlperf-t4.0-llama2-70b-lora-64xh100": 1,  # eos_n8_ngc24.04_nemo
    "mlperf-t4.0-llama2-70b-lora-1024xh100": 1,  # eos_n128_ngc24.04_nemo
}


def _int(r: dict[str, str], c: str, default: int = 1) -> int:
    return int(float(r[c])) if r.get(c, "").strip() else default


@pytest.mark.parametrize("case_id", sorted(MLPERF))
def test_value_is_logged_samples_per_s_times_8192_over_gpus(case_id: str) -> None:
    """Each note names the logged training throughput (samples/s, GovReport packed to 8,192
    tokens); the row's tokens/s/GPU must be that figure x 8,192 / GPUs."""
    r = MLPERF[case_id]
    m = re.search(r"([0-9]+(?:\.[0-9]+)?) samples/s", r["note"])
    assert m, f"{case_id}: the note does not name the logged samples/s"
    derived = float(m.group(1)) * int(r["seq_len"]) / int(r["gpus"])
    assert float(r["value"]) == pytest.approx(derived, rel=0.01)


@pytest.mark.parametrize("case_id", sorted(LOGGED_MICRO_BATCHES_PER_STEP))
def test_layout_adds_up_to_the_submissions_micro_batches(case_id: str) -> None:
    r = MLPERF[case_id]
    tp, pp, dp, cp = (_int(r, c) for c in ("tp", "pp", "dp", "cp"))
    assert tp * pp * dp * cp == int(r["gpus"])
    per_step = int(r["global_batch"]) // (dp * _int(r, "micro_batch"))
    assert per_step == LOGGED_MICRO_BATCHES_PER_STEP[case_id]


def test_v40_nvidia_rows_name_their_eager_stack() -> None:
    """NeMo 24.04's LoRA config captures no CUDA graph (v4.1 added LAYER_CUDA_GRAPH to the CP2
    multi-node configs): the rows carry cuda_graph_scope none, blank for other stacks."""
    for case_id, r in MLPERF.items():
        expected = "none" if case_id.startswith("mlperf-t4.0-") else ""
        assert r.get("cuda_graph_scope", "").strip() == expected, case_id


def test_multinode_notes_give_the_per_micro_batch_evidence() -> None:
    """The 64- and 1,024-GPU notes must not go back to a per-step fixed cost: HPE's 1- and
    2-node submissions at four micro-batches per step show the cost is per micro-batch."""
    for case_id in ("mlperf-t4.0-llama2-70b-lora-64xh100", "mlperf-t4.0-llama2-70b-lora-1024xh100"):
        note = MLPERF[case_id]["note"]
        assert "0.656 s per micro-batch" in note and "0.964" in note
        assert "LAYER_CUDA_GRAPH" in note


def test_falcon_layout_is_the_model_cards() -> None:
    """tiiuae/falcon-180B model card: up to 4,096 A100 40GB, TP=8 PP=8 DP=64 with ZeRO;
    3,500B tokens; batch 2,048 x 2,048."""
    r = WHOLE_RUNS["falcon-180b-gpu-hours"]
    assert (_int(r, "tp"), _int(r, "pp"), _int(r, "dp")) == (8, 8, 64)
    assert int(r["gpus"]) == 8 * 8 * 64
    assert r["accelerator"] == "a100-sxm-40gb"
    assert float(r["train_tokens"]) == 3.5e12
    assert (int(r["global_batch"]), int(r["seq_len"])) == (2048, 2048)
    assert int(r["hidden"]) // int(r["heads"]) == 64  # 232 heads of 64
