"""The pools of a disaggregated serving plan as the exporters read them (`plan_view`'s
`ServingView.disaggregated`): the planner's `disaggregation` record (chosen, prefill and
decode with their replicas and layouts, the KV link) or the short `disaggregated` form."""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.export.names import choice
from rightsize.export.plan_fields import MAX_GPUS, MAX_PARALLEL, Fields


@dataclass(frozen=True)
class PoolView:
    """One pool of a disaggregated plan: its replicas and their parallelism."""

    replicas: int
    tp: int
    pp: int = 1
    ep: int = 1  # expert-parallel degree; wider than TP x PP: data-parallel attention ranks

    @property
    def gpus(self) -> int:
        return max(self.tp * self.pp, self.ep)


@dataclass(frozen=True)
class DisaggView:
    """Disaggregated prefill/decode (best.disaggregated: {prefill: {replicas, tp, pp},
    decode: {...}, transfer_backend})."""

    prefill: PoolView
    decode: PoolView
    transfer_backend: str = "nixl"
    kv_link: str = ""  # the link the KV cache crosses (the planner's kv_transfer.link), "" unknown

    @property
    def kv_over_rdma(self) -> bool:
        """The KV cache crosses the RDMA NICs (the planner names the link "RDMA NIC (...)")."""
        return self.kv_link.upper().startswith("RDMA")


TRANSFER_BACKENDS = ("nixl", "mooncake")


def _pool(f: Fields) -> PoolView:
    return PoolView(
        replicas=f.integer("replicas", 1, MAX_GPUS),
        tp=f.integer("tp", 1, MAX_PARALLEL),
        pp=f.integer("pp", 1, MAX_PARALLEL, default=1),
        ep=f.integer("ep", 1, MAX_GPUS, default=1),
    )


def _planned_pool(f: Fields) -> PoolView:
    """A pool of the planner's `disaggregation` record: its replicas and its `layout`."""
    lay = f.sub("layout")
    return PoolView(
        replicas=f.integer("replicas", 1, MAX_GPUS),
        tp=lay.integer("tp", 1, MAX_PARALLEL),
        pp=lay.integer("pp", 1, MAX_PARALLEL, default=1),
        ep=lay.integer("ep", 1, MAX_GPUS, default=1),
    )


def disagg_view(best: Fields) -> DisaggView | None:
    """The plan's separate prefill and decode pools, or None when it serves aggregated."""
    planned = best.sub("disaggregation", False)
    dis = best.sub("disaggregated", False)
    if planned.text("chosen", default="", max_len=40) == "disaggregated":
        return DisaggView(
            prefill=_planned_pool(planned.sub("prefill")),
            decode=_planned_pool(planned.sub("decode")),
            kv_link=planned.sub("kv_transfer", False).text("link", default="", max_len=200),
        )
    if dis.has("prefill") and dis.has("decode"):
        return DisaggView(
            prefill=_pool(dis.sub("prefill")),
            decode=_pool(dis.sub("decode")),
            transfer_backend=choice(
                dis.text("transfer_backend", default="nixl", max_len=40),
                TRANSFER_BACKENDS,
                "KV transfer backend",
            ),
            kv_link=dis.text("kv_link", default="", max_len=200),
        )
    return None
