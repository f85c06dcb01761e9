"""A serving replica's layout as the plan's texts state it: TP x PP (x EP) and the nodes
per replica from the plan's `layout` record, and what a multi-node replica asks of the
interconnect (which traffic crosses nodes, over which link)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rightsize.advise.checklists import _serving_interconnect
from rightsize.catalog import get_accelerator, get_node
from rightsize.perf.serving_multinode import layout_of
from rightsize.report.plan_doc import serving_document
from rightsize.search.serving import plan_serving
from rightsize.search.serving_plan import ServingCandidate, ServingPlan
from rightsize.spec import load_spec

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def multinode() -> ServingPlan:
    return plan_serving(load_spec(EX / "llama3-405b-serve-multinode.yaml"))


def _with(c: ServingCandidate, acc: str, node: str, tp: int, pp: int, ep: int = 1) -> ServingCandidate:
    lay = layout_of(get_accelerator(acc), get_node(node), tp, pp, 16384, ep)
    return replace(c, tp=tp, pp=pp, nodes_per_replica=lay.nodes, layout=lay)


def test_shape_shows_tp_pp_ep_and_nodes(multinode: ServingPlan) -> None:
    b = multinode.best
    assert b.replica_shape == "tp8 x pp2 (2 nodes)"
    assert _with(b, "h100-sxm", "hgx-h100", 4, 1).replica_shape == "tp4"
    assert _with(b, "h100-sxm", "hgx-h100", 1, 1, ep=16).replica_shape == "tp1 x ep16 (2 nodes)"


def test_plan_document_states_the_multi_node_layout(multinode: ServingPlan) -> None:
    doc = serving_document(multinode)
    assert "x tp8 x pp2 (2 nodes) on h100-sxm" in doc.decision
    assert any("tp8 x pp2 (2 nodes)" in str(value) for _, value in doc.key_numbers)


def test_interconnect_item_says_what_crosses_nodes(multinode: ServingPlan) -> None:
    b = multinode.best
    pp_text = _serving_interconnect(b, 8)
    assert "spans 2 nodes as tp8 x pp2" in pp_text
    assert "pipeline stages run over RDMA NIC" in pp_text and "stays inside one node" not in pp_text
    ep = _serving_interconnect(_with(b, "h100-sxm", "hgx-h100", 1, 1, ep=16), 8)
    assert "expert all-to-all (ep16) runs over the RDMA NICs" in ep
    one = _serving_interconnect(_with(b, "h100-sxm", "hgx-h100", 8, 1), 8)
    assert "stays inside one node's scale-up domain" in one
