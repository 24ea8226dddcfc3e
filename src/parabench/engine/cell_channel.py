"""How a cell's launcher and its worker processes talk without polling: a command is a JSON file in the cell's inbox
and one byte down a FIFO of each rank, which blocks on it meanwhile; rank 0 answers with a JSON file and one byte up
a FIFO of the launcher's.

A blocked read takes no CPU and wakes within microseconds: on a machine of 2 cores, a dozen idle workers that
looked for their next command every few milliseconds would each take a core from the cell being timed at every look
(a parallel region then waits for its slowest thread). Both ends open every FIFO for reading and writing, so that
opening never blocks and neither end sees an end of file while the other restarts.
"""

import json
import os
import select
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parabench.io import read_json, write_json

ANSWERED = "answered"  # the FIFO rank 0 writes a byte to once its answer is in place
LOOK_EVERY_S = 0.5  # while waiting for an answer, how often the launcher checks that the workers still run


def wake_fifo(inbox: Path, rank: int) -> Path:
    """The FIFO rank `rank` blocks on until its next command."""
    return inbox / f"wake-{rank}"


def command_file(inbox: Path, number: int) -> Path:
    """The `number`-th command."""
    return inbox / f"{number}.json"


def answer_file(inbox: Path, number: int) -> Path:
    """Rank 0's answer to the `number`-th command."""
    return inbox / f"{number}.answer.json"


class LauncherEnd:
    """The launcher's end of a job of `ranks` processes: it makes the inbox and the FIFOs before the job starts."""

    def __init__(self, inbox: Path, ranks: int):
        inbox.mkdir(parents=True)
        self.inbox, self.sent = inbox, 0
        for rank in range(ranks):
            os.mkfifo(wake_fifo(inbox, rank))
        os.mkfifo(inbox / ANSWERED)
        self._wakes = [os.open(wake_fifo(inbox, rank), os.O_RDWR) for rank in range(ranks)]
        self._answered = os.open(inbox / ANSWERED, os.O_RDWR)

    def send(self, command: dict[str, Any]) -> int:
        """Hand every rank its next command; returns its number."""
        write_json(command_file(self.inbox, self.sent), command)
        for wake in self._wakes:
            os.write(wake, b"!")
        self.sent += 1
        return self.sent - 1

    def answer(self, number: int, running: Callable[[], bool]) -> dict[str, Any] | None:
        """Rank 0's answer to command `number`, once it comes; None if the workers ended before they answered."""
        while True:
            if select.select([self._answered], [], [], LOOK_EVERY_S)[0]:
                os.read(self._answered, 1)
                answer: dict[str, Any] = read_json(answer_file(self.inbox, number))
                return answer
            if not running():
                return None

    def close(self) -> None:
        """Close the FIFOs."""
        for descriptor in [*self._wakes, self._answered]:
            os.close(descriptor)
        self._wakes = []


class WorkerEnd:
    """A rank's end: it blocks until its next command; rank 0 answers."""

    def __init__(self, inbox: Path, rank: int):
        self.inbox, self.rank, self.received = inbox, rank, 0
        self._wake = os.open(wake_fifo(inbox, rank), os.O_RDWR)
        self._answered = os.open(inbox / ANSWERED, os.O_RDWR) if rank == 0 else None

    def next_command(self) -> dict[str, Any]:
        """Block (taking no CPU) until the next command comes; return it."""
        os.read(self._wake, 1)
        command: dict[str, Any] = json.loads(command_file(self.inbox, self.received).read_text())
        self.received += 1
        return command

    def answer(self, content: dict[str, Any]) -> None:
        """Rank 0: answer the last command received."""
        assert self._answered is not None, "only rank 0 answers"
        write_json(answer_file(self.inbox, self.received - 1), content)
        os.write(self._answered, b"!")
