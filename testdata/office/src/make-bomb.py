"""Writes ../bomb.zip: a zip bomb for the extraction bounds tests (mcp-nextcloud,
src/index/extract/tests.rs). Two members, content.xml and ppt/presentation.xml, each inflating
to 65 MiB of spaces (one MiB past the part cap) from about 65 KiB. Python's zlib makes it in a
second; the test build's unoptimised deflate would take minutes, so the file is committed."""
import pathlib
import zipfile

out = pathlib.Path(__file__).resolve().parent.parent / "bomb.zip"
chunk = b" " * (1024 * 1024)
with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for name in ("content.xml", "ppt/presentation.xml"):
        with z.open(name, "w", force_zip64=True) as f:
            for _ in range(65):
                f.write(chunk)
print(out, out.stat().st_size)
