"""Fetching a message part's ``http(s)`` url (``RUNNER_FETCH_URLS=true`` only): never to a private, loopback,
link-local or otherwise non-public address, no redirects, bounded in size and time."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

FETCH_TIMEOUT = 15.0  # s for the whole fetch


class FetchRefused(ValueError):
    """A url the runner does not fetch, or a fetch that failed; the message says which."""


def public_address(address: str) -> bool:
    """An address on the public internet (not private, loopback, link-local, multicast, reserved, ...)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def _addresses(host: str, port: int) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchRefused(f"cannot resolve {host}: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


async def fetch_url(url: str, max_bytes: int, allowed: Callable[[str], bool] = public_address
                    ) -> tuple[bytes, str]:
    """``(bytes, content type)`` of ``url``; raises ``FetchRefused``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchRefused("only http(s) urls with a host are fetched")
    if parts.username or parts.password:
        raise FetchRefused("a url with credentials in it is not fetched")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = await _addresses(parts.hostname, port)
    refused = [a for a in addresses if not allowed(a)]
    if refused or not addresses:
        raise FetchRefused(f"{parts.hostname} resolves to a private, loopback or link-local address "
                           f"({', '.join(refused) or 'none'}); such urls are never fetched")
    try:
        async with asyncio.timeout(FETCH_TIMEOUT), httpx.AsyncClient(
                follow_redirects=False, trust_env=False, timeout=FETCH_TIMEOUT) as client, \
                client.stream("GET", url) as response:
            if response.is_redirect:
                raise FetchRefused(f"{url} redirects (HTTP {response.status_code}); redirects are not followed")
            if response.status_code != 200:
                raise FetchRefused(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise FetchRefused(f"larger than {max_bytes} bytes (RUNNER_MAX_ATTACHMENT_BYTES)")
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    except TimeoutError:
        raise FetchRefused(f"fetching {url} took longer than {FETCH_TIMEOUT:.0f} s") from None
    except httpx.HTTPError as exc:
        raise FetchRefused(f"fetching {url} failed: {type(exc).__name__}") from None
    return bytes(body), content_type
