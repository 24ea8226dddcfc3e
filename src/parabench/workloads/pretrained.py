"""Pretrained ResNet-18 weights: torchvision's ImageNet file (into torch's cache) or a local state dict, checked.

Either way the file is read with `torch.load(weights_only=True)`, and its keys and shapes must be those of
torchvision's resnet18 backbone; the classification head (`fc.*`) is never loaded: the workload's head is new.
"""

import pickle
from pathlib import Path

import torch
from torch import Tensor, nn

from parabench.errors import ConfigError
from parabench.models.torchvision_resnet18 import HEAD

# torchvision's ResNet18_Weights.IMAGENET1K_V1.url (a test holds them equal); a module attribute, so a test can point it
# at a local server
IMAGENET_URL = "https://download.pytorch.org/models/resnet18-f37072fd.pth"
IMAGENET_CHOICE = "imagenet"
NO_WEIGHTS = "none"
LISTED = 5  # keys named in an error message, per kind of problem


def imagenet_weights_file() -> Path:
    """Where torch's cache keeps torchvision's ImageNet ResNet-18 weights ($TORCH_HOME/hub/checkpoints/...)."""
    return Path(torch.hub.get_dir()) / "checkpoints" / IMAGENET_URL.rsplit("/", 1)[-1]


def fetch_imagenet_weights() -> Path:
    """torchvision's ImageNet weights in torch's cache: downloaded (sha256-prefix checked) unless already there."""
    cached = imagenet_weights_file()
    if cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    prefix = torch.hub.HASH_REGEX.search(cached.name)
    try:
        torch.hub.download_url_to_file(IMAGENET_URL, str(cached), prefix.group(1) if prefix else None, progress=False)
    except (OSError, RuntimeError) as error:  # URLError and HTTPError are OSErrors; a hash mismatch a RuntimeError
        raise ConfigError(
            f"pretrained: 'imagenet' needs torchvision's ResNet18_Weights.IMAGENET1K_V1, which could not be "
            f"downloaded from {IMAGENET_URL} ({error}). Either choose pretrained: 'none' (random initialisation) "
            "or pretrained: <path to a .pth state dict of torchvision's resnet18> in params.yaml "
            f"(scales.hotdog.<scale>.pretrained), or put the file in torch's cache yourself: download it on a "
            f"machine with internet and copy it to {cached} (TORCH_HOME moves that folder)."
        ) from error
    return cached


def read_state_dict(path: Path) -> dict[str, Tensor]:
    """A state dict from a file, read with weights_only=True; anything else is a ConfigError naming the file."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        raise ConfigError(
            f"pretrained: {path} could not be read as a PyTorch state dict ({error}); give a .pth file "
            "saved with torch.save(model.state_dict(), path), or choose 'none' or 'imagenet'."
        ) from error
    if not isinstance(state, dict) or not all(
        isinstance(key, str) and isinstance(value, Tensor) for key, value in state.items()
    ):
        raise ConfigError(
            f"pretrained: {path} holds a {type(state).__name__}, not a state dict (parameter names "
            "mapped to tensors); save one with torch.save(model.state_dict(), path)."
        )
    return state


def load_backbone(model: nn.Module, state: dict[str, Tensor], path: Path) -> None:
    """Copy every backbone tensor of `state` into the model; the head keeps its own initialisation.

    Missing keys, unexpected keys and wrong shapes are all named in one ConfigError before anything is copied.
    """
    wanted = {key: value for key, value in model.state_dict().items() if not key.startswith(f"{HEAD}.")}
    given = {key: value for key, value in state.items() if not key.startswith(f"{HEAD}.")}
    problems = _listed("missing", sorted(set(wanted) - set(given)))
    problems += _listed("unexpected", sorted(set(given) - set(wanted)))
    problems += _listed(
        "wrong shape",
        [
            f"{key} (file {tuple(given[key].shape)}, model {tuple(wanted[key].shape)})"
            for key in wanted
            if key in given and given[key].shape != wanted[key].shape
        ],
    )
    if problems:
        raise ConfigError(
            f"pretrained: {path} is not a state dict of torchvision's resnet18 backbone:\n"
            + "\n".join(problems)
            + "\nGive torchvision's resnet18 weights (keys like conv1.weight, "
            "layer1.0.bn1.running_mean), or choose 'none' or 'imagenet'."
        )
    with torch.no_grad():
        for key, value in given.items():
            wanted[key].copy_(value)


def _listed(kind: str, keys: list[str]) -> list[str]:
    """One line naming the first keys of a kind of problem and how many there are."""
    if not keys:
        return []
    more = f" and {len(keys) - LISTED} more" if len(keys) > LISTED else ""
    return [f"  - {len(keys)} {kind} key(s): {', '.join(keys[:LISTED])}{more}"]
