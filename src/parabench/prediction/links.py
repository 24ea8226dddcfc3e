"""The links a prediction crosses: the probe's fit per collective, a preset interconnect, or numbers params.yaml
gives (predict.interconnect within a node, predict.network between nodes)."""

from parabench.config import GivenLink, PredictOptions
from parabench.prediction.collectives import (
    GBYTE,
    MEASURED,
    PRESETS,
    UNMEASURED_INTERCONNECT,
    UNMEASURED_NETWORK,
    Link,
    Links,
)
from parabench.records import CollectiveFit, Probe, Probed


def measured_links(probe: Probe) -> Links | None:
    """The links the probe fitted to the all-reduce, all-gather, reduce-scatter and send/recv (a collective the backend
    could not run takes the all-reduce's); None where the probe ran on one device."""
    if not isinstance(probe, Probed):
        return None
    fitted = {name: fit for name, fit in probe.collectives.items() if isinstance(fit, CollectiveFit)}
    if "all_reduce" not in fitted:
        return None

    def link(collective: str) -> Link:
        measured = fitted.get(collective, fitted["all_reduce"])
        return Link(measured.latency_s, 1 / measured.bandwidth_bytes_per_s)

    return Links(
        link("all_reduce"),
        link("all_gather"),
        link("reduce_scatter"),
        copy_bytes_per_s=probe.copy_bytes_per_s or float("inf"),
        shard_unit_s=probe.shard_unit_s,
        send_recv=link("send_recv"),
        cpu_share=fitted["all_reduce"].cpu_share if probe.device == "cpu" else 1.0,
        replicate_unit_s=probe.replicate_unit_s,
    )


def link_at(devices: int, options: PredictOptions, probe: Probe, network: Probe) -> tuple[Links, str, bool]:
    """The links the collectives of `devices` go over, what they are, and whether they are the ones measured here
    (`probe` over this node's devices, `network` between the nodes)."""
    if devices > options.devices_per_node:
        return chosen_links(options.network, network, UNMEASURED_NETWORK, "network ", "one node")
    return chosen_links(options.interconnect, probe, UNMEASURED_INTERCONNECT, "", "one device")


def chosen_links(
    choice: str | GivenLink, probe: Probe, unmeasured: str, kind: str, alone: str
) -> tuple[Links, str, bool]:
    """The links a predict.interconnect or predict.network `choice` names (`kind` prefixes the text: "network " or
    nothing): the numbers params.yaml gives, a preset, or `measured`: the probe's fit, and where it timed nothing
    (`alone`: one device or one node), the `unmeasured` preset, said so."""
    if isinstance(choice, GivenLink):
        link = Link(choice.latency_us * 1e-6, 1 / (choice.bandwidth_gb_per_s * GBYTE))
        described = f"{choice.bandwidth_gb_per_s:g} GB/s, {choice.latency_us:g} us a step ({choice.source})"
        return Links.alike(link), f"{kind}{described}", False
    note = ""
    if choice == MEASURED:
        links = measured_links(probe)
        if links is not None and isinstance(probe, Probed):
            between = f"{probe.ranks} nodes" if probe.across == "nodes" else f"{probe.ranks} {probe.device} ranks"
            return links, f"{kind}measured: {probe.backend} between {between}", True
        choice, note = unmeasured, f" (nothing measured here: {alone})"
    preset = PRESETS[choice]
    return Links.alike(preset.link), f"{kind}{choice}{note}: {preset.source}", False
