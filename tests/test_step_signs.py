"""What the operating system saw of a timed step, and which steps count as disturbed: a step that other programs (or
the hypervisor) took a CPU from, that read pages from disk, or that page faults cost a share of; never a cell's own
threads waiting for each other."""

import subprocess
import sys
import time

import pytest
import torch

from parabench.engine.timing import StepClock
from parabench.records import CellTurn, StepSigns
from parabench.runtime.step_signs import IDLE_CPUS, disturbance, disturbances, kept_phases, kept_steps


def signs(wall: float = 0.2, cpu: float = 0.2, busy: float | None = 0.2, **changes: float) -> StepSigns:
    """One rank's signs of a step: by default it used a CPU the whole step and nothing else ran."""
    values = {"wall_s": wall, "cpu_s": cpu, "machine_busy_s": busy, "waited_s": 0.0, "steal_s": 0.0}
    counts = {"involuntary_switches": 0, "minor_faults": 0, "major_faults": 0, "collections": 0}
    return StepSigns(**{**values, **counts, **changes})


def test_a_quiet_step_is_kept_and_a_cell_s_own_threads_waiting_for_each_other_is_its_work():
    assert disturbance([signs()]) is None
    assert disturbance([signs(waited_s=0.15, involuntary_switches=300)]) is None, "gloo's threads took the core"
    assert disturbance([signs(cpu=0.19), signs(cpu=0.2, busy=0.4)]) is None, "two ranks: the machine busy with both"


def test_a_step_other_programs_took_a_tenth_of_a_cpu_from_is_disturbed():
    assert disturbance([signs(busy=0.2 + 0.021)]) == "other programs"
    assert disturbance([signs(busy=0.2 + 0.019)]) is None, "under a tenth of a CPU"
    assert disturbance([signs(busy=0.25), signs(busy=0.45)]) is None, "the quieter rank's window counts"


def test_without_cpuidle_the_hypervisor_s_steal_alone_is_read():
    assert disturbance([signs(busy=None, steal_s=0.03)]) == "other programs"
    assert disturbance([signs(busy=None, steal_s=0.01)]) is None


def test_disk_reads_and_costly_page_faults_disturb_a_step():
    assert disturbance([signs(major_faults=1)]) == "disk reads"
    assert disturbance([signs(wall=0.05, cpu=0.05, busy=0.05, minor_faults=4000)]) == "page faults"  # 2.8 ms: 5.6%
    assert disturbance([signs(wall=0.2, minor_faults=4000)]) is None, "the same faults in a longer step: 1.4%"


def quiet_turn(seconds: float) -> CellTurn:
    phases = {"input": 0.0, "forward_backward": seconds, "optimizer": 0.0}
    return CellTurn(step_durations=[seconds], phase_durations=[[phases]], signs=[[signs(seconds, seconds, seconds)]])


def test_a_cell_s_disturbed_steps_are_left_out_of_its_times_and_phases_and_counted():
    phases = {"input": 0.0, "forward_backward": 0.1, "optimizer": 0.0}
    turn = CellTurn(
        step_durations=[0.1, 0.3, 0.1],
        phase_durations=[[phases, phases, phases]],
        signs=[[signs(0.1, 0.1, 0.1), signs(0.3, 0.1, 0.3), signs(0.1, 0.1, 0.1, major_faults=2)]],
    )
    turns = [turn, quiet_turn(0.1), quiet_turn(0.1)]
    assert kept_steps(turns) == [[0.1], [0.1], [0.1]] and kept_phases(turns)[0] == [[phases]]
    assert disturbances([turn, turn]) == {"other programs": 2, "disk reads": 2}


def test_a_cell_disturbed_most_of_the_time_keeps_every_step():
    """Two of its three steps disturbed: what is left would not be its figure; all count, and the count says so."""
    busy = CellTurn(
        step_durations=[0.3, 0.3],
        phase_durations=[[{"input": 0.3}, {"input": 0.3}]],
        signs=[[signs(0.3, 0.1, 0.3), signs(0.3, 0.1, 0.3)]],
    )
    assert kept_steps([busy, quiet_turn(0.1)]) == [[0.3, 0.3], [0.1]]
    assert disturbances([busy, quiet_turn(0.1)]) == {"other programs": 2}


@pytest.mark.skipif(IDLE_CPUS == 0, reason="this kernel has no cpuidle: busy time cannot be read")
def test_a_step_made_to_wait_by_processes_spinning_on_every_core_is_flagged():
    """A step that computes for 0.3 s while a process spins on each core: the machine's busy time far exceeds the
    step's own CPU time, and the detector says so."""
    spin = [sys.executable, "-c", "while True: pass"]
    hogs = [subprocess.Popen(spin) for _ in range(IDLE_CPUS)]
    try:
        time.sleep(0.2)
        clock = StepClock([torch.device("cpu")], warmup_steps=0, signs=True)
        with clock.step():
            started = time.perf_counter()
            while time.perf_counter() - started < 0.3:
                pass
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    (measured,) = clock.signs
    assert measured.machine_busy_s is not None and measured.machine_busy_s - measured.cpu_s > 0.1 * measured.wall_s
    assert disturbance([measured]) == "other programs"
