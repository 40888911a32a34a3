"""The package and a program of the kind users write pass `mypy --strict` (skipped where mypy is missing)."""
import importlib.util
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent


class TypeTests(unittest.TestCase):
    def test_mypy_strict_on_the_package_and_a_user_program(self):
        if importlib.util.find_spec("mypy") is None:
            self.skipTest("mypy is not installed (clients/test.sh installs it)")
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(HERE.parent / "src" / "fanout"),
             str(HERE / "typing_sample.py")], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("Success", result.stdout)


if __name__ == "__main__":
    unittest.main()
