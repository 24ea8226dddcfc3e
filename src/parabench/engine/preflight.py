"""The pipeline's head: params.yaml validated and every run planned, the machine and the data sources recorded.

Stage `check` runs this at every `dvc repro` and `dvc exp run`, before any other stage: DVC removes a stage's
outputs before running it, so a bad value caught here costs nothing the user had, and a key DVC does not watch
(a misspelt one beside the real one) stops a pipeline whose stages are all cached.
"""

from parabench.config import DATASET_NAMES, load_params
from parabench.data.fetch import mirror_root
from parabench.engine.plan import check_all
from parabench.io import write_json
from parabench.paths import ENVIRONMENT_FILE, source_record_file
from parabench.runtime.environment import machine_identity


def preflight() -> None:
    """Validate and plan everything, then write the records the other stages depend on."""
    params = load_params()
    check_all(params)
    sources = {dataset: params.data_source(dataset) for dataset in DATASET_NAMES}
    if any(source.source == "download" for source in sources.values()):
        mirror_root()  # a mirror variable naming no folder stops here, not file by file in the download stages
    write_json(ENVIRONMENT_FILE, machine_identity())
    for dataset, source in sources.items():
        write_json(source_record_file(dataset), source.record())
