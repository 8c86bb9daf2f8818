"""Fixtures of the dataset tests: the network refused or out of reach."""

import socket
import urllib.error
import urllib.request

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to download (torchvision, urllib, a socket) fails the test."""
    import torchvision.datasets.utils as tvu

    def forbidden(*args, **kwargs):
        raise AssertionError(f"network access: {args}")

    for module, name in [
        (tvu, "download_url"),
        (tvu, "_urlretrieve"),
        (tvu, "_get_redirect_url"),
        (urllib.request, "urlopen"),
        (socket, "create_connection"),
    ]:
        monkeypatch.setattr(module, name, forbidden)


@pytest.fixture
def offline(monkeypatch):
    """Every host out of reach; returns the URLs tried."""
    import torchvision.datasets.utils as tvu

    calls = []

    def refuse(url, *args, **kwargs):
        calls.append(url)
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(tvu, "_get_redirect_url", refuse)
    return calls
