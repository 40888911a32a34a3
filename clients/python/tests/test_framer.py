"""The framer, without a socket: the same server bytes fed in every split give the same frames, whether a read
holds a BMSG header (searched line by line) or not (split in one call)."""
import unittest

from fanout.protocol import Framer

STREAM = (b"+OK 1\n+OK 0\nMSG a 1 hello\n" + b"BMSG a 2 7\nx\ny\x00BMS\n" + b"+OK 2\nMSG b 1 BMSG in a payload\n"
          + b"BMSG b 2 0\n\n" + b"MSG c 1 ends in CR\r\n+OK 3\n")
FRAMES = [b"+OK 1", b"+OK 0", b"MSG a 1 hello", (b"BMSG a 2 7", b"x\ny\x00BMS"), b"+OK 2",
          b"MSG b 1 BMSG in a payload", (b"BMSG b 2 0", b""), b"MSG c 1 ends in CR\r", b"+OK 3"]


class FramerTests(unittest.TestCase):
    def test_every_two_way_split_gives_the_same_frames(self):
        for split in range(len(STREAM) + 1):
            framer = Framer(1024, 1024)
            self.assertEqual(framer.feed(STREAM[:split]) + framer.feed(STREAM[split:]), FRAMES, f"split {split}")

    def test_byte_by_byte(self):
        framer = Framer(1024, 1024)
        frames = []
        for index in range(len(STREAM)):
            frames += framer.feed(STREAM[index:index + 1])
        self.assertEqual(frames, FRAMES)

    def test_an_unfinished_line_past_max_line_is_refused_on_either_path(self):
        for data in (b"+OK 1\n" + b"x" * 40, b"BMSG a 1 1\nz\n" + b"x" * 40):
            with self.assertRaises(ValueError):
                Framer(32, 1024).feed(data)


if __name__ == "__main__":
    unittest.main()
