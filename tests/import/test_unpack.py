"""gpustarve import of compressed traces (import/import_unpack.c):
gzip, xz and zstd read as the plain JSON does, told by their first bytes
whatever the file is called; concatenated members, streams and frames read
as one document; a decompression bomb costs what a small file does; damaged
or truncated streams, windows beyond the import's limit and formats it does
not read are refused (exit 2) with a message that names the cause."""
import bz2
import gzip
import io
import json
import lzma
import shutil
import struct
import subprocess
import zipfile
import zlib

import pytest

from conftest import REAL, imp, mk, peak_kb, run
import real_traces


def zstd(data, *args):
    if not shutil.which("zstd"):
        pytest.fail("the zstd command is missing (Debian package zstd; tools/deps.sh build)")
    return subprocess.run(["zstd", "-q", "-c"] + list(args), input=data, capture_output=True,
                          check=True).stdout


PACK = {
    "gzip": lambda b: gzip.compress(b, 6),
    "xz": lambda b: lzma.compress(b, preset=6),
    "zstd": lambda b: zstd(b, "-3"),
}


def dumped(gs, rundir):
    """A run's events, without the process line and notes (they name the file)."""
    d = run(gs, "dump", "--json", str(rundir)).stdout
    return [l for l in d.splitlines() if '"kind":"process"' not in l and '"note"' not in l]


def events(gs, path, out):
    return dumped(gs, imp(gs, out, path))


def refused(gs, tmp_path, path):
    r = run(gs, "import", "-o", str(tmp_path / "run"), str(path), check=False)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert not (tmp_path / "run").exists()  # the directory it made went with the failure
    return r.stderr


@pytest.mark.parametrize("fmt", sorted(PACK))
def test_compressed_reads_as_plain(gs, tmp_path, fmt):
    plain = mk(tmp_path / "p.json", "--format", "2.4")
    data = open(plain, "rb").read()
    # the name says nothing: compressed bytes under a .json name, and the
    # document split in two members / streams / frames
    packed = tmp_path / "t.json"
    packed.write_bytes(PACK[fmt](data[:len(data) // 2]) + PACK[fmt](data[len(data) // 2:]))
    want = events(gs, plain, tmp_path / "rp")
    assert len(want) > 300  # mkkineto.py's 6 steps
    assert events(gs, packed, tmp_path / "rc") == want


@pytest.mark.parametrize("name", REAL)
def test_real_xz_reads_as_its_json(gs, real, tmp_path, name):
    """The real traces as they are kept (xz -9: a 64 MiB dictionary, within
    the limit) give what their plain JSON gives."""
    assert events(gs, real_traces.path(name), tmp_path / "x") == \
        events(gs, real[name], tmp_path / "p")


@pytest.mark.parametrize("fmt", sorted(PACK))
def test_truncated_stream(gs, tmp_path, fmt):
    data = PACK[fmt](open(mk(tmp_path / "p.json"), "rb").read())
    p = tmp_path / "t.bin"
    p.write_bytes(data[:len(data) // 2])
    assert ("%s: the %s stream is truncated" % (p, fmt)) in refused(gs, tmp_path, p)


@pytest.mark.parametrize("fmt", sorted(PACK))
def test_damaged_stream(gs, tmp_path, fmt):
    data = bytearray(PACK[fmt](open(mk(tmp_path / "p.json"), "rb").read()))
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(64)  # 64 zero bytes amid the compressed data
    p = tmp_path / "t.bin"
    p.write_bytes(bytes(data))
    err = refused(gs, tmp_path, p)
    assert "%s: not a valid %s file (" % (p, fmt) in err, err


def bomb(path, fmt, chunks):
    """mkkineto.py's 6 steps with chunks x 16 MiB of blanks inside
    traceEvents, each chunk its own member / stream / frame: a few hundred
    KB that decompress to chunks x 16 MiB."""
    doc = open(mk(str(path) + ".src.json"), "rb").read()
    end = doc.rindex(b"]")
    blanks = PACK[fmt](b" " * (16 << 20))
    with open(path, "wb") as f:
        f.write(PACK[fmt](doc[:end]))
        for _ in range(chunks):
            f.write(blanks)
        f.write(PACK[fmt](doc[end:]))
    return str(path)


@pytest.mark.parametrize("fmt", sorted(PACK))
def test_bomb_costs_what_a_small_file_does(gs, tmp_path, fmt):
    small = bomb(tmp_path / "s.bin", fmt, 2)    # 32 MiB of JSON
    big = bomb(tmp_path / "b.bin", fmt, 16)     # 256 MiB
    ks = peak_kb(gs, "import", "-q", "-o", str(tmp_path / "rs"), small)
    kb = peak_kb(gs, "import", "-q", "-o", str(tmp_path / "rb"), big)
    assert kb < ks * 1.2 + 2048, (ks, kb)
    # and the events around the blanks are all there
    assert dumped(gs, tmp_path / "rb") == dumped(gs, tmp_path / "rs")
    j = json.loads(run(gs, "report", "--json", "--skip", "0", str(tmp_path / "rb")).stdout)
    assert j["steps"]["count"] == 6


def test_xz_dictionary_beyond_the_limit(gs, tmp_path):
    """An xz block that asks for a 4 GiB dictionary (the header's dictionary
    byte raised, its CRC32 made right) is refused before any is allocated."""
    data = lzma.compress(open(mk(tmp_path / "p.json"), "rb").read(), preset=6)
    at = 12  # the block header follows the 12-byte stream header
    hdr = bytearray(data[at:at + (data[at] + 1) * 4])
    assert hdr[1] == 0 and hdr[2:4] == b"\x21\x01"  # one filter, LZMA2, 1 property byte
    hdr[4] = 40  # dictionary size code 40: 4 GiB - 1
    hdr[-4:] = struct.pack("<I", zlib.crc32(bytes(hdr[:-4])))
    p = tmp_path / "big.xz"
    p.write_bytes(data[:at] + bytes(hdr) + data[at + len(hdr):])
    err = refused(gs, tmp_path, p)
    assert "needs 4096 MiB to decompress, more than the 128 MiB" in err
    assert "unpack it with unxz first" in err


def test_zstd_window_beyond_the_limit(gs, tmp_path):
    """A zstd frame header asking for a 256 MiB window (window descriptor
    exponent 18: 2^28) is refused."""
    p = tmp_path / "big.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00\x90" + b"\x01\x00\x00")
    err = refused(gs, tmp_path, p)
    assert "window larger than 128 MiB" in err and "unpack it with unzstd --long=31" in err


def zipped(data):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("trace.json", data)
    return b.getvalue()


@pytest.mark.parametrize("what,pack,msg", [
    ("bzip2", bz2.compress, "is bzip2-compressed: unpack it with bunzip2 first"),
    ("zip", zipped, "is a zip archive: unpack it with unzip first"),
    ("7z", lambda b: b"7z\xbc\xaf\x27\x1c\x00\x04" + b, "is a 7-Zip archive: unpack it with 7z x"),
    ("lz4", lambda b: b"\x04\x22\x4d\x18\x64\x40\xa7" + b, "is lz4-compressed: unpack it with unlz4"),
    ("tar", lambda b: b"t.json".ljust(257, b"\0") + b"ustar\x0000" + b, "is a tar archive"),
])
def test_other_formats_are_named(gs, tmp_path, what, pack, msg):
    p = tmp_path / "trace.json"  # the name says JSON: the bytes say otherwise
    p.write_bytes(pack(open(mk(tmp_path / "p.json"), "rb").read()))
    err = refused(gs, tmp_path, p)
    assert ("%s %s" % (p, msg)) in err, err
