"""Every python block of the package's README (and the Python example of clients/README.md) runs as written
against a real fanoutd: the address 127.0.0.1:7411 is rewritten to the test server's, nothing else."""
import asyncio
import re
import sys
import unittest
from pathlib import Path

from .support import Daemon, bounded

PACKAGE = Path(__file__).resolve().parents[1]
READMES = [PACKAGE / "README.md", PACKAGE.parent / "README.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks():
    for readme in READMES:
        text = readme.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{readme.relative_to(PACKAGE.parent)}:{line}", match.group(1)


class ReadmeTests(unittest.IsolatedAsyncioTestCase):
    @bounded(120)
    async def test_every_python_example_runs_against_fanoutd(self):
        found = list(blocks())
        self.assertGreaterEqual(len(found), 6)
        # Presence kept for the presence example's chat.room1.
        async with Daemon('presence: ["chat.>"]\n') as daemon:
            for where, code in found:
                with self.subTest(example=where):
                    program = code.replace("127.0.0.1:7411", daemon.address)
                    process = await asyncio.create_subprocess_exec(
                        sys.executable, "-c", program, stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE)
                    try:
                        out, err = await asyncio.wait_for(process.communicate(), 20)
                    except asyncio.TimeoutError:
                        process.kill()
                        await process.wait()
                        self.fail(f"{where} ran over 20 s")
                    self.assertEqual(process.returncode, 0, f"{where}\n{out.decode()}\n{err.decode()}")
                    self.assertNotIn("Traceback", err.decode(), where)


if __name__ == "__main__":
    unittest.main()
