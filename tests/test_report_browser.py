#!/usr/bin/env python3
"""The run report in a real browser (issue 14, item 2): `evoeng report` of
the recorded H200 store (tests/data/h200_wgmma_run.sql), rendered by
headless Chromium (Debian's `chromium`; .ci/run installs it) into a
1200x3000 screenshot, which must not be blank: enough non-white pixels,
and the colours of the plots' marks (the green of accepted points and the
best lineage node, the blue of the baseline) painted. A blank page is
rendered the same way first, to show that the count tells the two apart.
Exit 77 (skipped) when no Chromium is installed. EVO_REPORT_SCREENSHOT=PATH
keeps a copy of the screenshot (docs/report.png comes from here).
Needs EVO_SOURCE_ROOT and EVOENG (set by meson)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

root = os.environ.get("EVO_SOURCE_ROOT", ".")
evoeng = os.environ.get("EVOENG", os.path.join(root, "build/src/evoeng"))
sys.path.insert(0, os.path.join(root, "tests"))
import report_store  # noqa: E402
from report_store import check  # noqa: E402

W, H = 1200, 3000


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def read_png(path):
    """(width, height, bytes per pixel, rows) of an 8-bit RGB/RGBA PNG,
    decoded with zlib and the five PNG filters; no PIL needed."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s is not a PNG" % path)
    pos, idat = 8, []
    w = h = depth = ctype = interlace = None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat.append(body)
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6) or interlace != 0:
        raise ValueError("unsupported PNG: depth %s, colour type %s, interlace %s" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows, i = [], 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                line[x] = (line[x] + (((line[x - bpp] if x >= bpp else 0) + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError("bad PNG filter %d" % f)
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def census(path):
    """Pixels that are not white, green ones (accepted marks: only the
    SVG paints green), blue ones below the header (the baseline marks;
    the links of the header are blue too)."""
    w, h, bpp, rows = read_png(path)
    ink = green = blue = 0
    for y, row in enumerate(rows):
        for x in range(0, w * bpp, bpp):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if r < 245 or g < 245 or b < 245:
                ink += 1
                if g > r + 60 and g > b + 30:
                    green += 1
                elif b > r + 80 and b > g + 30 and y >= 300:
                    blue += 1
    return w, h, ink, green, blue


def screenshot(chromium, url, png, tmp):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--user-data-dir=" + os.path.join(tmp, "profile"), "--window-size=%d,%d" % (W, H),
           "--screenshot=" + png, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not os.path.isfile(png):
        print(p.stderr[-2000:])
        return False
    return True




chromium = find_chromium()
if not chromium:
    print("skip: no chromium (apt-get install chromium)")
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "h200.db")
    report_store.h200_store(root, db).close()
    page = os.path.join(tmp, "report.html")
    p = subprocess.run([evoeng, "report", "--db", db, "-o", page], capture_output=True, text=True)
    check(p.returncode == 0 and os.path.isfile(page), "evoeng report wrote the page (%s)" % p.stderr.strip())

    blank = os.path.join(tmp, "blank.html")
    with open(blank, "w") as f:
        f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"/><title>x</title></head><body></body></html>\n")
    bpng = os.path.join(tmp, "blank.png")
    check(screenshot(chromium, "file://" + blank, bpng, tmp), "chromium took a screenshot of a blank page")
    if os.path.isfile(bpng):
        w, h, ink, green, blue = census(bpng)
        check((w, h) == (W, H) and ink < W * H // 1000, "a blank page counts as blank (%d non-white pixels)" % ink)

    png = os.path.join(tmp, "report.png")
    check(screenshot(chromium, "file://" + page, png, tmp), "chromium took a screenshot of the report")
    if os.path.isfile(png):
        w, h, ink, green, blue = census(png)
        print("   %dx%d: %d non-white pixels, %d green, %d blue" % (w, h, ink, green, blue))
        check((w, h) == (W, H), "the screenshot is %dx%d" % (W, H))
        check(ink > W * H // 50, "the report is not blank: %.1f%% of the pixels are not white" % (100.0 * ink / (W * H)))
        check(green > 200, "the accepted marks and the best node are painted green (%d pixels)" % green)
        check(blue > 50, "the baseline marks are painted blue (%d pixels)" % blue)
        keep = os.environ.get("EVO_REPORT_SCREENSHOT")
        if keep:
            shutil.copyfile(png, keep)
            print("   kept the screenshot as %s" % keep)

print("%d failed" % report_store.fails)
sys.exit(1 if report_store.fails else 0)
