"""`serving.serve_embedded`: an ASGI app served from a task on a socket bound here."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from serving import serve_embedded


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


APP = Starlette(routes=[Route("/", hello)])


async def test_it_answers_on_the_free_port_it_picked_and_stops_twice_harmlessly() -> None:
    server = await serve_embedded(APP, "127.0.0.1", 0, name="test-serving", grace_s=1)
    try:
        assert server.port != 0 and server.url == f"http://127.0.0.1:{server.port}"
        async with httpx.AsyncClient(base_url=server.url) as client:
            response = await client.get("/")
        assert (response.status_code, response.text) == (200, "hello")
        assert "server" not in response.headers  # no server header to fingerprint
    finally:
        await server.stop()
    await server.stop()
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient(base_url=server.url) as client:
            await client.get("/")


async def test_a_port_in_use_is_an_ordinary_os_error() -> None:
    server = await serve_embedded(APP, "127.0.0.1", 0, name="test-serving", grace_s=1)
    try:
        with pytest.raises(OSError):
            await serve_embedded(APP, "127.0.0.1", server.port, name="test-serving", grace_s=1)
    finally:
        await server.stop()


async def test_an_ipv6_host_is_served_and_bracketed_in_the_url() -> None:
    try:
        server = await serve_embedded(APP, "::1", 0, name="test-serving", grace_s=1)
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    try:
        assert server.url == f"http://[::1]:{server.port}"
        async with httpx.AsyncClient(base_url=server.url) as client:
            assert (await client.get("/")).text == "hello"
    finally:
        await server.stop()
