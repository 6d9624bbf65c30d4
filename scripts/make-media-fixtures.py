#!/usr/bin/python3
"""Makes the photo fixtures of Tests/Fixtures/media/ (committed; run again only to change them).

Needs the `vips` command (Debian's libvips-tools) for the pixels; the EXIF APP1 segment is written by hand here so
that every tag is exactly what the tests expect. The photos with location metadata in other formats (gps-*.*) need
Pillow (Debian's python3-pil, hence /usr/bin/python3 rather than whatever python3 is first on PATH).
"""
import os
import random
import struct
import subprocess
import tempfile

OUT = os.path.join(os.path.dirname(__file__), "..", "Tests", "Fixtures", "media")


def ifd(entries, offset, next_ifd=0):
    """An IFD (big-endian) at `offset` in the TIFF block: (tag, type, count, value bytes) -> (bytes, data offset)."""
    entries = sorted(entries)
    head = 2 + 12 * len(entries) + 4
    data = b""
    body = struct.pack(">H", len(entries))
    for tag, kind, count, value in entries:
        if len(value) <= 4:
            body += struct.pack(">HHI", tag, kind, count) + value.ljust(4, b"\0")
        else:
            body += struct.pack(">HHII", tag, kind, count, offset + head + len(data))
            data += value + (b"\0" if len(value) % 2 else b"")
    return body + struct.pack(">I", next_ifd) + data


def ascii_(text):
    raw = text.encode() + b"\0"
    return (2, len(raw), raw)


def rationals(*pairs):
    return (5, len(pairs), b"".join(struct.pack(">II", n, d) for n, d in pairs))


def exif(orientation, taken, offset, gps):
    """An APP1 segment: IFD0 (orientation, pointers), Exif IFD (dates), GPS IFD."""
    tiff_header = b"MM\0*" + struct.pack(">I", 8)
    # Sizes are computed in two passes: lay out with placeholder pointers, then again with the real ones.
    def build(exif_at, gps_at):
        ifd0 = [(0x0112, 3, 1, struct.pack(">H", orientation)), (0x8769, 4, 1, struct.pack(">I", exif_at))]
        if gps:
            ifd0.append((0x8825, 4, 1, struct.pack(">I", gps_at)))
        block0 = ifd(ifd0, 8)
        exif_entries = [(0x9000, 7, 4, b"0231")]
        if taken:
            kind, count, raw = ascii_(taken)
            exif_entries.append((0x9003, kind, count, raw))
        if offset:
            kind, count, raw = ascii_(offset)
            exif_entries.append((0x9011, kind, count, raw))
        exif_block = ifd(exif_entries, 8 + len(block0))
        gps_block = b""
        if gps:
            (lat_ref, lat), (lon_ref, lon) = gps
            gps_entries = [
                (0x0000, 1, 4, bytes([2, 3, 0, 0])),
                (0x0001,) + ascii_(lat_ref),
                (0x0002,) + rationals(*lat),
                (0x0003,) + ascii_(lon_ref),
                (0x0004,) + rationals(*lon),
            ]
            gps_block = ifd(gps_entries, 8 + len(block0) + len(exif_block))
        return block0, exif_block, gps_block

    block0, exif_block, gps_block = build(0, 0)
    block0, exif_block, gps_block = build(8 + len(block0), 8 + len(block0) + len(exif_block))
    payload = b"Exif\0\0" + tiff_header + block0 + exif_block + gps_block
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def with_exif(jpeg, segment):
    """Inserts an APP1 right after SOI (the JPEG from vips has none: it was saved with strip)."""
    assert jpeg[:2] == b"\xff\xd8"
    return jpeg[:2] + segment + jpeg[2:]


def render(width, height, sigma, name, quality):
    """Grey noise around mid-grey, as a JPEG: a larger sigma compresses worse."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "source.v")
        subprocess.run(
            ["vips", "gaussnoise", source, str(width), str(height), "--mean", "128", "--sigma", str(sigma)],
            check=True,
        )
        target = os.path.join(tmp, name)
        subprocess.run(["vips", "jpegsave", source, target, "--Q", str(quality), "--strip"], check=True)
        with open(target, "rb") as f:
            return f.read()


def main():
    os.makedirs(OUT, exist_ok=True)
    # 640×480 as stored, soft noise, orientation 6: shown upright it is 480×640.
    # Taken 2023-05-06 07:08:09 at +02:00 (05:08:09 UTC), in Sydney: S 33°51'35.9", E 151°12'40".
    gradient = render(640, 480, 8, "gradient.jpg", 60)
    segment = exif(
        6,
        "2023:05:06 07:08:09",
        "+02:00",
        (("S", ((33, 1), (51, 1), (359, 10))), ("E", ((151, 1), (12, 1), (40, 1)))),
    )
    with open(os.path.join(OUT, "rotated-gps.jpg"), "wb") as f:
        f.write(with_exif(gradient, segment))
    # Orientation 1, a date without an offset (read as UTC), and a position in the west: N 40°41'21", W 74°2'40".
    segment = exif(1, "2021:12:31 23:59:58", None, (("N", ((40, 1), (41, 1), (21, 1))), ("W", ((74, 1), (2, 1), (40, 1)))))
    with open(os.path.join(OUT, "west-utc.jpg"), "wb") as f:
        f.write(with_exif(gradient, segment))
    # Noise compresses badly: at quality 82 its thumbnail is over 50,000 bytes, so the quality must be lowered.
    noise = render(520, 420, 60, "noise.jpg", 30)
    with open(os.path.join(OUT, "noise.jpg"), "wb") as f:
        f.write(noise)
    # A valid header (everything up to the first scan's data), then garbage.
    with open(os.path.join(OUT, "..", "waterfall.jpg"), "rb") as f:
        waterfall = f.read()
    sos = waterfall.index(b"\xff\xda")
    length = struct.unpack(">H", waterfall[sos + 2 : sos + 4])[0]
    random.seed(6)
    garbage = bytes(random.randrange(256) for _ in range(20_000)) + b"\xff\xd9"
    with open(os.path.join(OUT, "garbage-after-header.jpg"), "wb") as f:
        f.write(waterfall[: sos + 2 + length] + garbage)
    # A thumbnail-sized JPEG a peer could send, and one too large on a side (401 px).
    with open(os.path.join(OUT, "thumb-ok.jpg"), "wb") as f:
        f.write(render(400, 300, 8, "t.jpg", 60))
    with open(os.path.join(OUT, "thumb-too-wide.jpg"), "wb") as f:
        f.write(render(401, 100, 8, "t.jpg", 60))

    located(os.path.join(OUT, "rotated-gps.jpg"))


# An XMP packet that says where the photo was taken twice: XMP's own GPS fields and a city name.
XMP = (
    '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>'
    '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
    '<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/"'
    ' xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" xmlns:xmp="http://ns.adobe.com/xap/1.0/"'
    ' exif:GPSLatitude="33,51.598S" exif:GPSLongitude="151,12.6667E" photoshop:City="Sydney"'
    ' xmp:CreatorTool="make-media-fixtures"/>'
    '</rdf:RDF></x:xmpmeta><?xpacket end="w"?>'
).encode()


def located(source):
    """The photo of rotated-gps.jpg, 160×120, with its EXIF (orientation 6, date taken, GPS), XMP GPS and a city
    name, and an sRGB colour profile: as JPEG, PNG (eXIf chunk), lossless WebP, GIF (XMP only: GIF has no EXIF) and
    HEIC (EXIF only: what libheif writes)."""
    from PIL import Image, ImageCms, PngImagePlugin

    photo = Image.open(source)
    exif = photo.info["exif"]  # "Exif\0\0" and the TIFF block
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    small = photo.convert("RGB").resize((160, 120))
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.jpg")
        small.save(plain, quality=80, exif=exif, icc_profile=icc)
        with open(plain, "rb") as f:
            jpeg = f.read()
    xmp_segment = b"http://ns.adobe.com/xap/1.0/\0" + XMP
    with open(os.path.join(OUT, "gps.jpg"), "wb") as f:
        f.write(jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(xmp_segment) + 2) + xmp_segment + jpeg[2:])
    text = PngImagePlugin.PngInfo()
    text.add_itxt("XML:com.adobe.xmp", XMP.decode())
    small.save(os.path.join(OUT, "gps.png"), exif=exif, icc_profile=icc, pnginfo=text)
    small.save(os.path.join(OUT, "gps.webp"), lossless=True, exif=exif, icc_profile=icc, xmp=XMP)
    with tempfile.TemporaryDirectory() as tmp:
        gif = os.path.join(tmp, "plain.gif")
        small.convert("P").save(gif)
        with open(gif, "rb") as f:
            data = f.read()
        with open(os.path.join(OUT, "plain.gif"), "wb") as f:
            f.write(data)
        # The XMP application extension goes after the header, the screen descriptor and the global colour table.
        flags = data[10]
        table = 3 * 2 ** ((flags & 7) + 1) if flags & 0x80 else 0
        at = 13 + table
        blocks = b"".join(bytes([len(XMP[i : i + 255])]) + XMP[i : i + 255] for i in range(0, len(XMP), 255))
        extension = b"\x21\xff\x0bXMP DataXMP" + blocks + b"\x00"
        with open(os.path.join(OUT, "gps-xmp.gif"), "wb") as f:
            f.write(data[:at] + extension + data[at:])
    subprocess.run(["vips", "copy", source, os.path.join(OUT, "gps.heic") + "[Q=20]"], check=True)


if __name__ == "__main__":
    main()
