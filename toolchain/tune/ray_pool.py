"""Running the tuner's measurements on a Ray cluster (minirt-tune --ray ADDRESS).

Ray is an existing distributed engine: each measurement is a Ray task of one CPU, and
Ray places them on the cluster's nodes. Nothing here schedules. Ray is an optional
extra (``pip install minirt[tune]``), imported only when --ray is given. Every node
must have minirt installed (the same toolchain, clang and QEMU): the tasks carry the
model's bytes, not its path.

The address is Ray's own: "auto" (the cluster this machine belongs to), "ray://HOST:
PORT" (a client connection), "HOST:PORT"; or "local": a Ray instance started here with
this process's cores. When Ray is already initialised in this process (a test's
``ray.init(num_cpus=2)``), that instance is used and left running.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType

from toolchain.tune.measure import Job, Measurement, measure

__all__ = ["RayPool", "RayUnavailable", "import_ray"]

LOCAL = "local"


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached (a one-line message)."""


def import_ray() -> ModuleType:
    """The ray module, or RayUnavailable saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray, which is not installed: pip install "
                             "'minirt[tune]' (or pip install 'ray>=2.9')") from None
    return ray


class RayPool:
    """Measures as Ray tasks on the cluster at `address` (module doc); `cpus`: the
    local instance's CPUs (address "local")."""

    def __init__(self, address: str | None = None, cpus: int | None = None) -> None:
        self.ray = import_ray()
        self.address = address
        self.started = False
        if not self.ray.is_initialized():
            try:
                if address in (None, LOCAL):
                    self.ray.init(num_cpus=cpus, include_dashboard=False,
                                  log_to_driver=False)
                else:
                    self.ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise RayUnavailable(f"--ray {address}: cannot connect: {first}") from None
            self.started = True

    def describe(self) -> str:
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        return f"Ray cluster {self.address or '(this process)'} ({cpus} CPUs)"

    def map(self, jobs: Sequence[Job],
            fn: Callable[[Job], Measurement] = measure) -> list[Measurement]:
        """`fn` of every job as Ray tasks, in the jobs' order."""
        task = self.ray.remote(num_cpus=1)(fn)
        return self.ray.get([task.remote(j) for j in jobs])

    def close(self) -> None:
        """Shuts down the instance this pool started (one it found is left alone)."""
        if self.started:
            self.ray.shutdown()
            self.started = False
