"""The bridges: the contract every runner implements (``contract``), and one package per runner.

``Bridge``, ``Turn`` and ``BridgeError`` are the contract's three names a runner needs; ``registry`` picks the
runner from ``RUNNER_TYPE``.
"""

from ambient_runner.bridges.contract import Bridge, BridgeError, Turn

__all__ = ["Bridge", "BridgeError", "Turn"]
