"""Checks the status page as Chromium rendered it (--dump-dom) against /status served at the
same moment, and the screenshot's pixels. Used by status_page_chromium.sh.
usage: status_page_dom.py DOM.html STATUS.json SHOT.png WIDTH HEIGHT"""
import json
import math
import struct
import sys
import zlib
from html.parser import HTMLParser


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], ""

    def all(self, tag=None, cls=None):
        for c in self.children:
            if (tag is None or c.tag == tag) and (cls is None or cls in c.attrs.get("class", "").split()):
                yield c
            yield from c.all(tag, cls)

    def one(self, tag, cls):
        found = list(self.all(tag, cls))
        assert len(found) == 1, (tag, cls, len(found))
        return found[0].text.strip()


class Tree(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self):
        super().__init__()
        self.root = self.at = Node("root", {}, None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.at)
        self.at.children.append(node)
        if tag not in self.VOID:
            self.at = node

    def handle_startendtag(self, tag, attrs):
        self.at.children.append(Node(tag, attrs, self.at))

    def handle_endtag(self, tag):
        node = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None:
            self.at = node.parent

    def handle_data(self, data):
        n = self.at
        while n is not None:  # an element's text is all the text inside it
            n.text += data
            n = n.parent


def nice(step):
    m = step / 10 ** math.floor(math.log10(step))
    return any(abs(m - k) < 1e-6 for k in (1, 2, 5, 10))


def check_chart(svg, ranks, epochs):
    lines = list(svg.all("polyline"))
    assert len(lines) == ranks, f"{len(lines)} lines for {ranks} ranks"
    for k, line in enumerate(lines):
        pts = [tuple(map(float, p.split(","))) for p in line.attrs["points"].split()]
        assert len(pts) == 2 * epochs, f"line {k}: {len(pts)} points for {epochs} epochs"
        assert all(pts[i][1] == pts[i + 1][1] for i in range(0, len(pts), 2)), f"line {k} is not steps"
        assert (k == 0) == ("stroke-dasharray" not in line.attrs), f"line {k}: dash pattern"
    xs = [t.text for t in svg.all("text") if t.attrs.get("text-anchor") == "middle"]
    x_ticks = sorted(int(x) for x in xs if x.isdigit())
    # Whole epochs at a round interval, within 1..epochs and reaching the last interval.
    step = x_ticks[1] - x_ticks[0] if len(x_ticks) > 1 else 1
    assert x_ticks == list(range(x_ticks[0], x_ticks[-1] + 1, step)) and nice(step), x_ticks
    assert x_ticks[0] <= step and epochs - step < x_ticks[-1] <= epochs, \
        f"x ticks {x_ticks} for {epochs} epochs"
    # A 560 px chart has room for 5 tick intervals: every epoch up to 5 epochs, at 6 the
    # round interval is 2.
    assert epochs > 5 or x_ticks == list(range(1, epochs + 1)), f"x ticks {x_ticks}"
    ys = [float(t.text) for t in svg.all("text") if t.attrs.get("text-anchor") == "end"]
    steps = {round(b - a, 9) for a, b in zip(ys, ys[1:])}
    assert len(ys) >= 3 and len(steps) == 1 and nice(abs(steps.pop())), f"y ticks {ys}"
    return len(lines)


def check_job(section, job):
    where = job["job"]
    assert section.one("span", "state") == job["state"], where
    assert section.one("span", "epoch") == str(job["epoch"]), where
    eff = job["efficiency"]
    assert section.one("span", "efficiency") == ("%.1f %%" % (100 * eff) if eff > 0 else "-"), where
    pred = job["predicted_epoch_s"]
    assert section.one("span", "predicted") == ("%.3g s" % pred if pred > 0 else "-"), where
    rows = list(section.all("tr", "rank"))
    assert len(rows) == len(job["ranks"]), where
    for row, rank in zip(rows, job["ranks"]):
        cell = lambda cls: next(row.all("td", cls)).text
        ran = rank["ran_batch"]
        assert cell("ran-batch") == (str(ran) if ran is not None else "-"), (where, rank)
        tp = rank["ran_throughput"]
        assert cell("ran-throughput") == ("%.1f" % tp if tp is not None else "-"), (where, rank)
        assert cell("waiting") == (rank["waiting"] or "-"), (where, rank)
        if job["state"] != "finished":
            assert cell("batch") == str(rank["batch"]), (where, rank)
    svgs = list(section.all("svg"))
    assert len(svgs) == 2, f"{where}: {len(svgs)} charts"
    return sum(check_chart(s, len(job["ranks"]), job["ran_epoch"]) for s in svgs)


def png_pixels(path):
    """(width, height, rows of RGBA or RGB bytes) of an 8-bit non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if color == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 4:  # Paeth
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            else:
                pred = [0, a, b, (a + b) // 2][f]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main(dom_path, status_path, shot, width, height):
    tree = Tree()
    tree.feed(open(dom_path, encoding="utf-8").read())
    status = json.load(open(status_path))
    sections = list(tree.root.all("section", "job"))
    assert [s.attrs["id"] for s in sections] == ["job-" + j["job"] for j in status["jobs"]], \
        "jobs not in /status order (running first)"
    lines = sum(check_job(s, j) for s, j in zip(sections, status["jobs"]))
    print(f"DOM: {len(sections)} job(s), {2 * len(sections)} charts, {lines} step lines, "
          f"table and figures as /status serves them")

    w, h, bpp, rows = png_pixels(shot)
    assert (w, h) == (width, height), f"screenshot {w}x{h}, not {width}x{height}"
    colors = {"rank 0 (#1f77b4)": (0x1F, 0x77, 0xB4), "rank 1 (#d62728)": (0xD6, 0x27, 0x28)}
    counts = dict.fromkeys(colors, 0)
    ink = 0
    for row in rows:
        for x in range(0, len(row), bpp):
            px = tuple(row[x:x + 3])
            ink += px != (255, 255, 255)
            for name, c in colors.items():
                counts[name] += all(abs(p - q) <= 8 for p, q in zip(px, c))
    print(f"screenshot {w}x{h}: {ink} non-white pixels, line pixels {counts}")
    assert all(n >= 200 for n in counts.values()), "the charts' lines are not drawn"


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
