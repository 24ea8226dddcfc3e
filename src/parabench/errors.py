"""User-facing errors: each says what is wrong, where, and what to do; stages print them without a traceback."""


class ParabenchError(Exception):
    """An error the user can fix; its message is the whole explanation."""


class ConfigError(ParabenchError):
    """params.yaml is invalid."""


class DataError(ParabenchError):
    """A data file is missing, malformed or not what it should be."""


class DownloadError(DataError):
    """No source could deliver a verified copy of a file."""


class RunStopped(ParabenchError):
    """A run stopped part-way (a lost peer, a failed step); the message says which rank, where, and why."""


class DiskFull(ParabenchError):
    """A file could not be written for want of space: the message names it, the bytes it needed and those free."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during training: the message says how far it had got and what its last checkpoint holds."""


class StrategyUnavailable(ParabenchError):
    """A strategy cannot run on the hardware at hand."""
