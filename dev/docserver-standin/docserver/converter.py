"""The converter: fetch the input as OnlyOffice's FileConverter does, convert with LibreOffice.

Owns: downloading the input URL (a plain GET carrying, like the real server with outbox tokens
on, ``Authorization: Bearer`` with a JWT of ``{"payload": {"url": ...}}`` signed with the
server's secret: never any credential of the caller's), the size and time limits, and running
``soffice --headless --convert-to`` in a private profile per conversion. Errors are the
conversion API's codes (-4 download, -3 conversion, -2 timeout, -10 size).
Must never: follow a redirect to another URL (a loan is one URL), or keep the input after the
conversion.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import jwt

DOWNLOAD_TIMEOUT = 30
CONVERT_TIMEOUT = 120
MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024  # FileConverter.converter.maxDownloadBytes' default

# outputtype -> (LibreOffice filter per kind of input, file extension)
OUTPUTS = {
    "pdf": ({"text": "pdf:writer_pdf_Export", "spreadsheet": "pdf:calc_pdf_Export",
             "presentation": "pdf:impress_pdf_Export"}, "pdf"),
    "docx": ({"text": "docx:MS Word 2007 XML"}, "docx"),
    "odt": ({"text": "odt:writer8"}, "odt"),
    "txt": ({"text": "txt:Text (encoded):UTF8"}, "txt"),
    "html": ({"text": "html:HTML (StarWriter)"}, "html"),
    "xlsx": ({"spreadsheet": "xlsx:Calc Office Open XML"}, "xlsx"),
    "ods": ({"spreadsheet": "ods:calc8"}, "ods"),
    "csv": ({"spreadsheet": "csv:Text - txt - csv (StarCalc):44,34,76"}, "csv"),
    "pptx": ({"presentation": "pptx:Impress MS PowerPoint 2007 XML"}, "pptx"),
    "odp": ({"presentation": "odp:impress8"}, "odp"),
}
KINDS = {
    "docx": "text", "doc": "text", "odt": "text", "rtf": "text", "txt": "text", "html": "text", "htm": "text",
    "md": "text", "xlsx": "spreadsheet", "xlsm": "spreadsheet", "xls": "spreadsheet", "ods": "spreadsheet",
    "csv": "spreadsheet", "pptx": "presentation", "ppt": "presentation", "odp": "presentation",
}


class ConvertError(Exception):
    def __init__(self, code: int, why: str):
        super().__init__(why)
        self.code = code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401 - urllib's signature
        return None


def download(url: str, secret: str) -> bytes:
    token = jwt.encode({"payload": {"url": url}, "exp": int(time.time()) + 300}, secret, algorithm="HS256")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "User-Agent": "Node.js/6.13"})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=DOWNLOAD_TIMEOUT) as response:
            if response.status != 200:
                raise ConvertError(-4, f"download answered {response.status}")
            data = response.read(MAX_DOWNLOAD_BYTES + 1)
    except urllib.error.HTTPError as e:
        raise ConvertError(-4, f"download answered {e.code}") from e
    except (urllib.error.URLError, OSError) as e:
        raise ConvertError(-4, f"download failed: {e}") from e
    if len(data) > MAX_DOWNLOAD_BYTES:
        raise ConvertError(-10, "the input is larger than the download limit")
    return data


def convert(source: bytes, filetype: str, outputtype: str, out_dir: Path) -> tuple[Path, str]:
    """Converts `source` (of `filetype`) to `outputtype`; returns the result's path and extension."""
    kind = KINDS.get(filetype)
    filters, ext = OUTPUTS[outputtype]
    if kind is None or kind not in filters:
        raise ConvertError(-3, f"{filetype} cannot become {outputtype}")
    work = Path(tempfile.mkdtemp(prefix="docserver-"))
    try:
        src = work / f"input.{filetype}"
        src.write_bytes(source)
        profile = work / "profile"
        cmd = ["soffice", f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
               "--convert-to", filters[kind], "--outdir", str(work / "out"), str(src)]
        produced = work / "out" / f"input.{ext}"
        deadline = time.monotonic() + CONVERT_TIMEOUT
        # A fresh profile: under load LibreOffice has been seen to set it up and exit without
        # converting (once in a CI run). A second start, with the profile now made, converts
        # what can be converted; a damaged file fails both times. One retry only.
        for _ in range(2):
            try:
                done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      timeout=max(deadline - time.monotonic(), 1), check=False,
                                      env={"PATH": "/usr/bin:/bin", "HOME": str(work)})
            except subprocess.TimeoutExpired as e:
                raise ConvertError(-2, "the conversion timed out") from e
            if produced.is_file() and produced.stat().st_size > 0:
                break
        else:
            raise ConvertError(-3, f"LibreOffice produced nothing (exit status {done.returncode})")
        out_dir.mkdir(parents=True, exist_ok=True)
        final = out_dir / f"output.{ext}"
        shutil.move(str(produced), final)
        return final, ext
    finally:
        shutil.rmtree(work, ignore_errors=True)
