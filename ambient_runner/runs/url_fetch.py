"""Fetching a message part's ``http(s)`` url (``RUNNER_FETCH_URLS=true`` only): never to a private, loopback,
link-local or otherwise non-public address, no redirects, bounded in size and time.

The host is resolved once (as httpx encodes it, IDNA included), every address checked, and the request sent to the
checked address itself (``Host`` and TLS server name kept): a second lookup, and so a DNS answer that changes between
the check and the connection, never happens.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable

import httpx

from ag_ui_cli_common.errors import ErrorCode, RunnerError

FETCH_TIMEOUT = 15.0  # s for the whole fetch
# IPv6 ranges that carry an IPv4 address (NAT64, 6to4, IPv4-compatible): refused, whatever they carry.
EMBEDDING_IPV4 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"),
                  ipaddress.ip_network("2002::/16"), ipaddress.ip_network("::/96"))


class FetchRefused(RunnerError, ValueError):
    """A url the runner does not fetch, or a fetch that failed; the message says which."""

    code = ErrorCode.INVALID_ATTACHMENT


def public_address(address: str) -> bool:
    """An address on the public internet (not private, loopback, link-local, multicast, reserved, ...)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif any(ip in network for network in EMBEDDING_IPV4):
            return False
    return ip.is_global and not ip.is_multicast


async def _addresses(host: str, port: int) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise FetchRefused(f"cannot resolve {host}: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


def _target(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
        port = parsed.port  # raises on a port out of range
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise FetchRefused(f"not a valid url: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FetchRefused("only http(s) urls with a host are fetched")
    if parsed.userinfo:
        raise FetchRefused("a url with credentials in it is not fetched")
    if port is not None and not 0 < port < 65536:
        raise FetchRefused(f"port {port} is out of range")
    return parsed


async def fetch_url(url: str, max_bytes: int, allowed: Callable[[str], bool] = public_address
                    ) -> tuple[bytes, str]:
    """``(bytes, content type)`` of ``url``; raises ``FetchRefused``."""
    target = _target(url)
    host = target.host  # IDNA-encoded, as httpx would look it up
    port = target.port or (443 if target.scheme == "https" else 80)
    addresses = await _addresses(host, port)
    refused = [a for a in addresses if not allowed(a)]
    if refused or not addresses:
        raise FetchRefused(f"{host} resolves to a private, loopback or link-local address "
                           f"({', '.join(refused) or 'none'}); such urls are never fetched")
    address = addresses[0]
    pinned = target.copy_with(host=address)
    headers = {"Host": target.netloc.decode("ascii")}
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    try:
        async with asyncio.timeout(FETCH_TIMEOUT), httpx.AsyncClient(
                follow_redirects=False, trust_env=False, timeout=FETCH_TIMEOUT) as client, \
                client.stream("GET", pinned, headers=headers, extensions=extensions) as response:
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
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        if isinstance(exc, FetchRefused):
            raise
        raise FetchRefused(f"fetching {url} failed: {type(exc).__name__}") from None
    return bytes(body), content_type
