"""Reads a PNG as rsvg-convert writes it (8-bit RGB or RGBA, not interlaced) and prints, one a
line: the share of its pixels that are not the background (its most common colour), then each
colour given as an argument (#rrggbb) with the number of pixels of exactly that colour.

Usage: png_pixels.py FILE [#rrggbb ...]
"""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    position, idat = 8, b""
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise SystemExit(f"{path}: depth {depth}, colour type {colour}, interlace {interlace}")
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 255
        rows.append(bytes(line))
        previous = line
    counts = {}
    for line in rows:
        for x in range(0, stride, channels):
            rgb = line[x:x + 3]
            counts[rgb] = counts.get(rgb, 0) + 1
    return counts, width * height


def main(argv):
    counts, total = pixels(argv[1])
    background = max(counts.values())
    print(f"{(total - background) / total:.4f}")
    for colour in argv[2:]:
        rgb = bytes.fromhex(colour.lstrip("#"))
        print(f"{colour} {counts.get(rgb, 0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
