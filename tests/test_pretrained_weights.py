"""Starting weights for hotdog: a local state dict (good, wrong keys, wrong shapes, not a state dict), torchvision's
ImageNet file fetched into torch's cache from a local server, and the error that names the choices offline."""

import hashlib
import io
from pathlib import Path

import pytest
import torch

from parabench.errors import ConfigError
from parabench.models.torchvision_resnet18 import resnet18_blocks
from parabench.workloads import pretrained
from parabench.workloads.hotdog import Hotdog, HotdogSettings
from tests.http_server import Route


def settings(weights: str) -> HotdogSettings:
    return HotdogSettings(
        epochs=1,
        batch_size=8,
        lr=0.01,
        scaling="strong",
        warmup_steps=0,
        seed=0,
        pretrained=weights,
        freeze_backbone=False,
        head_lr_mult=10,
        optimizer="sgd",
        momentum=0.0,
        crop_scale=0.08,
        weight_decay=0.0,
        image_size=32,
        eval_batch_size=8,
        width=64,
    )


def imagenet_like_state() -> dict[str, torch.Tensor]:
    """A torchvision resnet18 state dict with a 1000-class head, as ImageNet weights have."""
    torch.manual_seed(7)
    model = resnet18_blocks(num_classes=1000)
    return {key: value.clone() for key, value in model.state_dict().items()}


def built(weights: str) -> torch.nn.Module:
    torch.manual_seed(0)
    model = Hotdog().build_model(settings(weights))
    Hotdog().initialize(model, settings(weights))
    return model


def test_a_local_state_dict_loads_its_backbone_and_keeps_a_new_head(tmp_path):
    state = imagenet_like_state()
    torch.save(state, tmp_path / "weights.pth")
    model, fresh = built(str(tmp_path / "weights.pth")), built("none")
    for key, value in model.state_dict().items():
        if key.startswith("fc."):
            assert torch.equal(value, fresh.state_dict()[key]) and value.shape[0] == 2, "a new 2-class head"
        else:
            assert torch.equal(value, state[key]), key


def test_wrong_keys_and_wrong_shapes_are_named(tmp_path):
    state = imagenet_like_state()
    state["layer9.weight"] = state.pop("layer1.0.conv1.weight")
    state["conv1.weight"] = torch.zeros(64, 3, 3, 3)
    torch.save(state, tmp_path / "wrong.pth")
    before = built("none").state_dict()
    with pytest.raises(ConfigError) as error:
        built(str(tmp_path / "wrong.pth"))
    message = str(error.value)
    assert "wrong.pth" in message and "1 missing key(s): layer1.0.conv1.weight" in message
    assert "1 unexpected key(s): layer9.weight" in message
    assert "conv1.weight (file (64, 3, 3, 3), model (64, 3, 7, 7))" in message and "'none' or 'imagenet'" in message
    torch.manual_seed(0)
    model = Hotdog().build_model(settings("none"))
    with pytest.raises(ConfigError):
        Hotdog().initialize(model, settings(str(tmp_path / "wrong.pth")))
    assert all(torch.equal(value, before[key]) for key, value in model.state_dict().items()), "nothing copied"


def test_a_file_that_is_not_a_state_dict_is_refused(tmp_path):
    torch.save([torch.zeros(2)], tmp_path / "list.pth")
    (tmp_path / "text.pth").write_text("not a checkpoint")
    torch.save({"model": resnet18_blocks(2)}, tmp_path / "pickled_module.pth")  # weights_only refuses modules
    for name, expected in (
        ("list.pth", "holds a list, not a state dict"),
        ("text.pth", "could not be read"),
        ("pickled_module.pth", "could not be read"),
    ):
        with pytest.raises(ConfigError, match=expected):
            built(str(tmp_path / name))


def test_a_missing_file_is_a_params_error():
    with pytest.raises(ValueError, match=r"neither 'imagenet'.*nor an existing \.pth file"):
        settings("no/such/weights.pth")


def test_weights_need_torchvisions_width():
    with pytest.raises(ValueError, match=r"width: 32 does not fit pretrained: 'imagenet'.*set width: 64"):
        HotdogSettings(**{**settings("none").model_dump(), "pretrained": "imagenet", "width": 32})


def test_the_weights_url_is_torchvisions_own():
    from torchvision.models import ResNet18_Weights

    assert ResNet18_Weights.IMAGENET1K_V1.url == pretrained.IMAGENET_URL


def test_imagenet_weights_are_fetched_into_torchs_cache_and_checked(tmp_path, monkeypatch, server):
    buffer = io.BytesIO()
    torch.save(imagenet_like_state(), buffer)
    body = buffer.getvalue()
    name = f"resnet18-{hashlib.sha256(body).hexdigest()[:8]}.pth"  # torchvision's names carry a sha256 prefix
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    server.routes[f"/{name}"] = Route(body)
    monkeypatch.setattr(pretrained, "IMAGENET_URL", server.url(f"/{name}"))
    Hotdog().prefetch(settings("imagenet"))
    assert server.requests_for(f"/{name}") == [None]
    model = built("imagenet")
    assert (tmp_path / "torch" / "hub" / "checkpoints" / name).read_bytes() == body
    assert torch.equal(model.state_dict()["layer4.1.bn2.weight"], imagenet_like_state()["layer4.1.bn2.weight"])


def test_offline_imagenet_stops_with_the_other_choices_and_the_cache_path(tmp_path, monkeypatch, server):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(pretrained, "IMAGENET_URL", server.url("/resnet18-f37072fd.pth"))  # no route: 404
    with pytest.raises(ConfigError) as error:
        Hotdog().prefetch(settings("imagenet"))
    message = str(error.value)
    assert "'none'" in message and ".pth state dict" in message
    assert str(Path(tmp_path / "torch" / "hub" / "checkpoints" / "resnet18-f37072fd.pth")) in message
    assert not (tmp_path / "torch" / "hub" / "checkpoints" / "resnet18-f37072fd.pth").exists()
