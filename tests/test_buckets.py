"""The buckets the prediction charges one all-reduce each: DDP's rule checked against DDP's own buckets in real 2-rank
gloo runs, and the hand-written allreduce's rule as its strategy groups the gradients."""

import json
from pathlib import Path

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel

from parabench.buckets import BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, allreduce_buckets, capped_counts, ddp_buckets
from parabench.strategies.allreduce import buckets
from tests.multiprocess import run_ranks

MIB = 1024 * 1024


def test_ddp_closes_a_bucket_once_full_the_first_at_1_mib_from_the_last_gradient_back():
    sizes = [20 * MIB, 20 * MIB, 10 * MIB, 512 * 1024, 600 * 1024]  # the model's order; backward starts at the end
    assert ddp_buckets(sizes) == [1112 * 1024, 30 * MIB, 20 * MIB]
    assert ddp_buckets([100, 200]) == [300], "never full: one bucket of everything"
    assert ddp_buckets([]) == []


def test_the_hand_written_allreduce_closes_a_bucket_before_it_passes_25_mib_in_the_model_s_order():
    sizes = [20 * MIB, 4 * MIB, 20 * MIB, 30 * MIB, 1]
    assert capped_counts(sizes) == [2, 1, 1, 1], "24 MiB fit; 24 + 20 would pass 25; 30 MiB alone; then the byte"
    assert allreduce_buckets(sizes) == [24 * MIB, 20 * MIB, 30 * MIB, 1]
    grads = [torch.zeros(size // 4) for size in (8 * MIB, 8 * MIB, 8 * MIB, 4 * MIB)]
    groups = buckets(grads)
    assert [len(group) for group in groups] == [3, 1], "the strategy groups its gradients by the same rule"
    assert all(a is b for a, b in zip([grad for group in groups for grad in group], grads, strict=True))
    assert BUCKET_BYTES == 25 * MIB and DDP_FIRST_BUCKET_BYTES == MIB == dist._DEFAULT_FIRST_BUCKET_BYTES


def _ddp_rebuilt_buckets(rank: int, world_size: int, out: Path) -> None:
    torch.set_num_threads(1)
    results = {}
    for name in ("resnet18", "resnet50"):
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(num_classes=10)
        wrapped = DistributedDataParallel(model)
        for _ in range(3):  # DDP rebuilds its buckets after the first step (its logs have them from the third)
            wrapped(torch.randn(2, 3, 32, 32)).sum().backward()
        rebuilt = wrapped._get_ddp_logging_data()["rebuilt_bucket_sizes"]
        gradients = [param.numel() * param.element_size() for param in model.parameters()]
        results[name] = [[int(size) for size in rebuilt.split(", ")], ddp_buckets(gradients)]
    if rank == 0:
        out.write_text(json.dumps(results))


def test_ddp_s_own_buckets_are_the_rule_s_on_resnet_18_and_50(tmp_path):
    """DDP's buckets after its rebuild, as its logging data reports them, against ddp_buckets over the same model's
    gradients: three buckets for ResNet-18's 44.7 MB (the first 9.5 MB: the last conv's weight passes 1 MiB), five
    for ResNet-50's 94 MB (a bucket of 25 MiB exactly would be four)."""
    out = tmp_path / "buckets.json"
    run_ranks(2, _ddp_rebuilt_buckets, out)
    found = json.loads(out.read_text())
    for name, count in (("resnet18", 3), ("resnet50", 5)):
        ddp_own, ours = found[name]
        assert ddp_own == ours, name
        assert len(ours) == count, name
