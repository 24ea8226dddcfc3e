"""Before a multi-node run trains: every node planned the same run and holds the same prepared data."""

import hashlib
import json
import os
import socket

from parabench.engine.plan import RunPlan
from parabench.errors import RunStopped
from parabench.runtime.collectives import gather_objects
from parabench.runtime.process import Process


def run_digest(plan: RunPlan) -> str:
    """The run as planned, less what may differ between nodes (their cores): workload, strategy, batch, settings."""
    run = {"run": plan.describe(), "scale": plan.scale, "settings": plan.settings.model_dump(),
           "setup": plan.setup.model_dump(exclude={"machine"})}
    return hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode()).hexdigest()[:16]


def check_nodes_agree(plan: RunPlan, process: Process, data_id: str) -> None:
    """Each node's first process reports its plan and data digests; if they differ, every rank stops, naming the
    nodes and what differs, before any training. (Single-node runs skip this.)"""
    if plan.machine.nodes == 1:
        return
    first_on_node = process.local_rank == 0
    mine = {"node": os.environ.get("GROUP_RANK", "?"), "host": socket.gethostname(),
            "plan": run_digest(plan) if first_on_node else None,
            "data": data_id if first_on_node else None}
    reports = [report for report in gather_objects(mine) if report["plan"] is not None]  # type: ignore[index]
    node_0 = reports[0]
    for what, differs, fix in (("plan", "planned another run", "the same params.yaml and code"),
                               ("data", "holds other prepared data", "the same prepared data")):
        differ = [f"node {report['node']} on {report['host']}" for report in reports  # type: ignore[index]
                  if report[what] != node_0[what]]  # type: ignore[index]
        if differ:
            raise RunStopped(
                f"rank {process.rank}: {', '.join(differ)} {differs} than node 0 on {node_0['host']} ({what} digest "
                f"{node_0[what]} on node 0); give every node {fix} (README: Several nodes) and run again."
            )
