"""A classifier's data (workloads/classification.py): after every epoch only the first `epoch_test_images` test
images are scored when asked; the evaluate stage's scores always take every test image."""

import torch

from parabench.workloads.fashion_mnist import FashionMnistData

CPU = torch.device("cpu")


def labelled(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random uint8 Fashion-MNIST-shaped images and labels of 2 classes."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (count, 1, 28, 28), generator=generator, dtype=torch.uint8)
    return images, torch.randint(0, 2, (count,), generator=generator)


def test_after_every_epoch_only_the_first_test_images_are_scored_when_asked():
    images, labels = labelled(64, 1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 2))
    every = FashionMnistData(*labelled(32, 0), images, labels, 32, "random images")
    first = FashionMnistData(*labelled(32, 0), images, labels, 32, "random images", epoch_test_images=10)
    head = FashionMnistData(*labelled(32, 0), images[:10], labels[:10], 32, "the first ten")
    assert every.epoch_scores(model, CPU) == every.evaluate(model, "test", CPU)
    assert first.epoch_scores(model, CPU) == head.evaluate(model, "test", CPU)
    assert first.epoch_scores(model, CPU) != every.evaluate(model, "test", CPU), "ten images are not sixty-four"
    assert first.evaluate(model, "test", CPU) == every.evaluate(model, "test", CPU), (
        "the evaluate stage still scores every test image"
    )
