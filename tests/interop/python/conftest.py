import pytest

from interop import MODES, Wire, new_http_client


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
async def http(wire):
    async with new_http_client(wire) as client:
        yield client


@pytest.fixture(params=MODES)
def mode(request) -> str:
    return request.param
