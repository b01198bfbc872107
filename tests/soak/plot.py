#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plot.py - draws a soak run's samples.csv (and faults.csv) as one PNG, with nothing but
the Python standard library (no matplotlib, no gnuplot: the soak must draw on any machine
that builds dlock).

    python3 tests/soak/plot.py OUT_DIR [PNG]     (PNG defaults to OUT_DIR/soak.png)

One panel per level the soak judges: the process (RSS, heap, descriptors, threads), the server
(keys, pub/sub channels, used memory) and each gauge of dlock_client_stats() with one line
per client, plus the call rate. In every panel the warm-up is shaded, a grey tick at the
top marks each fault, and the idle row (after the work) is the dot at the right end.
The scale of each panel runs from 0 to its largest value, so a flat line is flat.
"""
import csv
import os
import struct
import sys
import zlib

# A 5x7 bitmap font of the characters the labels use (upper case only), one string of 7
# rows of 5 pixels per glyph, drawn for this script.
FONT = {
    "A": "01110 10001 10001 11111 10001 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11110 10001 10001 10001 10001 10001 11110",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 11001 10101 10011 10001 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 01010 00100 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    ".": "00000 00000 00000 00000 00000 01100 01100", ",": "00000 00000 00000 00000 01100 00100 01000",
    "-": "00000 00000 00000 11111 00000 00000 00000", "+": "00000 00100 00100 11111 00100 00100 00000",
    "_": "00000 00000 00000 00000 00000 00000 11111", ":": "00000 01100 01100 00000 01100 01100 00000",
    "/": "00001 00010 00010 00100 01000 01000 10000", "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000", "=": "00000 00000 11111 00000 11111 00000 00000",
    "%": "11001 11010 00010 00100 01000 01011 10011", " ": "00000 00000 00000 00000 00000 00000 00000",
}

WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (170, 170, 170)
SHADE, AXIS = (236, 236, 236), (90, 90, 90)
COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189), (255, 127, 14)]


class Canvas:
    def __init__(self, width, height):
        self.w, self.h = width, height
        self.px = bytearray(WHITE * (width * height))

    def set(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        for y in range(max(0, y0), min(self.h, y1)):
            i = (y * self.w + max(0, x0)) * 3
            n = max(0, min(self.w, x1) - max(0, x0))
            self.px[i:i + 3 * n] = bytes(color) * n

    def line(self, x0, y0, x1, y1, color):
        # Bresenham, two pixels wide vertically so thin lines stay visible.
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, color)
            self.set(x0, y0 + 1, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, color=BLACK, scale=1):
        for ch in s.upper():
            rows = FONT.get(ch, FONT[" "]).split()
            for r, bits in enumerate(rows):
                for c, bit in enumerate(bits):
                    if bit == "1":
                        self.rect(x + c * scale, y + r * scale, x + (c + 1) * scale,
                                  y + (r + 1) * scale, color)
            x += 6 * scale

    def png(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3])
                       for y in range(self.h))

        def chunk(kind, data):
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n")
            f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)))
            f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
            f.write(chunk(b"IEND", b""))


def fmt(v):
    if abs(v) >= 1e6:
        return "%.1fM" % (v / 1e6)
    if abs(v) >= 1e4:
        return "%.0fK" % (v / 1e3)
    return "%.0f" % v


def panel(cv, x, y, w, h, title, t, lines, warmup_s, faults, t_end):
    """lines: [(label, values)], each values aligned with t (None: missing)."""
    cv.text(x, y, title, BLACK, 2)
    top, bottom, left = y + 20, y + h - 14, x + 44
    right = x + w - 6
    vmax = max([v for _, vs in lines for v in vs if v is not None] + [1])
    tmax = max(t_end, 1)

    def px(ts):
        return left + int((right - left) * ts / tmax)

    def py(v):
        return bottom - int((bottom - top) * v / vmax)

    cv.rect(left, top, px(min(warmup_s, tmax)), bottom, SHADE)
    for start, _ in faults:
        cv.rect(px(start), top, px(start) + 1, top + 6, GREY)
    cv.rect(left, top, left + 1, bottom + 1, AXIS)
    cv.rect(left, bottom, right, bottom + 1, AXIS)
    cv.text(x, top, fmt(vmax), AXIS)
    cv.text(x, bottom - 7, "0", AXIS)
    cv.text(left, bottom + 4, "0", AXIS)
    end_label = "%.0f S" % tmax if tmax < 600 else "%.0f MIN" % (tmax / 60)
    cv.text(right - 6 * len(end_label), bottom + 4, end_label, AXIS)
    lx = x + 12 * len(title) + 12  # the legend follows the title
    for i, (label, vs) in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        prev = None
        for ts, v in zip(t, vs):
            if v is None:
                prev = None
                continue
            pt = (px(ts), py(v))
            if prev:
                cv.line(prev[0], prev[1], pt[0], pt[1], color)
            prev = pt
        if len(lines) > 1:
            cv.text(lx, y + 4, label, color)
            lx += 6 * len(label) + 10


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: plot.py OUT_DIR [PNG]")
    out = sys.argv[1]
    png = sys.argv[2] if len(sys.argv) > 2 else os.path.join(out, "soak.png")
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    faults = []
    if os.path.exists(os.path.join(out, "faults.csv")):
        with open(os.path.join(out, "faults.csv")) as f:
            faults = [(float(r["start_s"]), r["fault"]) for r in csv.DictReader(f)]
    work = [r for r in rows if r["phase"] == "work"]
    idle = [r for r in rows if r["phase"] == "idle"]
    if not work:
        sys.exit("plot.py: no samples in %s" % out)
    # The idle row is drawn one sample interval after the last work row.
    step = float(work[1]["t_s"]) - float(work[0]["t_s"]) if len(work) > 1 else 1.0
    series_rows = work + idle
    t = [float(r["t_s"]) for r in work] + [float(work[-1]["t_s"]) + step for _ in idle]
    t_end = t[-1]
    warmup = float(os.environ.get("SOAK_WARMUP_S", "0") or 0) or t_end / 6

    def col(name, scale=1.0):
        if name not in rows[0]:
            return None
        return [float(r[name]) * scale if r[name] not in ("", "nan") else None
                for r in series_rows]

    # A client the run did not have (no Sentinel, no Cluster) has only zeros.
    def present(client):
        fields = ("calls_in_flight", "leases_held", "renewals_sent", "messages", "reconnects")
        return any(any(col(client + "." + f) or [0]) for f in fields)

    clients = [c for c in ("c1", "c2", "async", "sentinel", "cluster") if present(c)]
    ops = col("ops")
    rate = [None] + [(ops[i] - ops[i - 1]) / max(t[i] - t[i - 1], 1e-9)
                     for i in range(1, len(ops))]
    if idle:
        rate[-1] = None
    panels = [
        ("rss (mib)", [("rss", col("rss_kb", 1 / 1024))]),
        ("heap in use (kib)", [("heap", col("heap_kb"))]),
        ("descriptors", [("fds", col("fds"))]),
        ("threads", [("threads", col("threads"))]),
        ("server keys", [("keys", col("server_keys"))]),
        ("server pub/sub", [("channels", col("server_channels")),
                            ("patterns", col("server_numpat"))]),
        ("server used memory (mib)", [("used", col("server_used_memory_kb", 1 / 1024))]),
        ("calls in flight", [(c, col(c + ".calls_in_flight")) for c in clients]),
        ("waits", [(c, col(c + ".waits")) for c in clients]),
        ("leases held", [(c, col(c + ".leases_held")) for c in clients]),
        ("subscriptions", [(c, col(c + ".subscriptions")) for c in clients]),
        ("calls per second", [("calls", rate)]),
        ("reconnects", [(c, col(c + ".reconnects")) for c in clients]),
    ]
    # A series an older soak did not sample has no panel.
    panels = [(name, [l for l in lines if l[1]]) for name, lines in panels]
    panels = [(name, lines) for name, lines in panels if lines]
    cols, pw, ph = 3, 420, 190
    nrows = (len(panels) + cols - 1) // cols
    cv = Canvas(cols * pw + 20, nrows * ph + 50)
    title = "dlock soak: %.0f s of work, %d faults" % (float(work[-1]["t_s"]), len(faults))
    cv.text(12, 10, title, BLACK, 2)
    for i, (name, lines) in enumerate(panels):
        x, y = 12 + (i % cols) * pw, 40 + (i // cols) * ph
        panel(cv, x, y, pw - 24, ph - 14, name, t, lines, warmup, faults, t_end)
    cv.png(png)
    print("plot.py: wrote %s" % png)


if __name__ == "__main__":
    main()
