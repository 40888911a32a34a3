"""The client benchmark's receive case finishes and says what happened when the server drops its subscriber,
instead of waiting for messages that will never come (Benchmarks/clients/bench_python.py)."""
import asyncio
import importlib.util
import os
import sys
import unittest
from pathlib import Path

from .support import REPO, bounded, fanoutd_binary

BENCHMARKS = REPO / "Benchmarks" / "clients"


def load_benchmark():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_python", BENCHMARKS / "bench_python.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BenchmarkTests(unittest.IsolatedAsyncioTestCase):
    @bounded(60)
    async def test_a_receive_run_whose_subscriber_is_dropped_ends_and_reports_it(self):
        if not (BENCHMARKS / "bench_python.py").exists():
            self.skipTest("no Benchmarks/clients in this tree")
        bench = load_benchmark()
        saved = dict(os.environ)
        # A server that drops a subscriber past 256 KiB of queued output, and a burst far over that.
        os.environ.update({"FANOUTD": fanoutd_binary(), "FANOUTD_MAX_PENDING_BYTES": "262144",
                           "FANOUTD_SEND_BUFFER_BYTES": "4096", "FANOUTD_MAX_MEMORY": "0"})
        try:
            server = bench.Server("fanoutd")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            result = await bench.receive_fanout(server, 200000, 100)
        finally:
            server.stop()
        rate, client_cpu, server_cpu, core, received, problem = result
        self.assertLess(received, 200000)
        self.assertIn("slow-consumer", problem)


if __name__ == "__main__":
    unittest.main()
