"""A dataset's params.yaml section: `source` is `download` (official files, mirror first) or a local folder."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator


class DataSource(BaseModel):
    """Where a dataset comes from; datasets with more choices extend this section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str

    @field_validator("source")
    @classmethod
    def _download_or_existing_folder(cls, value: str) -> str:
        if value != "download" and not Path(value).is_dir():
            raise ValueError(f"'{value}' is neither 'download' nor an existing folder")
        return value
