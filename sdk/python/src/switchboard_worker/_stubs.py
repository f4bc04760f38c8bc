"""The generated gRPC modules, imported in one place.

They exist only in a built package (setup.py runs protoc at build time), so running
from a bare source tree fails here with a message saying how to get them.
"""

from __future__ import annotations

try:
    from switchboard_worker._generated import internal_pb2 as pb
    from switchboard_worker._generated import internal_pb2_grpc as pb_grpc
except ImportError as err:  # pragma: no cover - only in a source tree never built
    raise ImportError(
        "switchboard_worker's gRPC stubs are missing: they are generated when the package "
        "is built; install it (pip install ./sdk/python, or pip install -e ./sdk/python)"
    ) from err

__all__ = ["pb", "pb_grpc"]
